"""`df.cohort` on polars DataFrames and LazyFrames, registered when polars and cohortsql are both imported.

import cohortsql, polars as pl
res = df.cohort.shapley(prediction="score", similarity={"age": "range:0.1", "sex": "exact"})
effects = df.cohort.effects(prediction="score", similarity=["age", "sex"])
privacy = df.cohort.uniqueness(similarity=["age", "sex", "zip"])
both = df.cohort.compare(model=model, prediction="score", similarity=["age", "sex"])
found = df.cohort.audit(prediction="score", protected="race", similarity=["age", "zip"])

The methods take the same arguments, with the same names and defaults, as `cohortsql.cohort_shapley`,
`cohortsql.shapley_effects`, `cohortsql.uniqueness_shapley`, `cohortsql.estimate`, `cohortsql.estimate_compare`,
`cohortsql.baseline_shapley`, `cohortsql.compare`, `cohortsql.audit` and `cohortsql.calibrate`, the frame being the
data: the option groups are declared once, in `cohortsql._typing`. This module is imported as soon
as polars is (see `cohortsql/__init__.py`), so it loads the computations only when a method is called.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar, Unpack

import polars as pl

from cohortsql._typing import (
    AuditOptions,
    BaselineOptions,
    CalibrationOptions,
    CompareOptions,
    EffectsOptions,
    FairnessOptions,
    GameOptions,
    InsertionOptions,
    ShapleyOptions,
    UniquenessOptions,
)

if TYPE_CHECKING:
    from cohortsql.api.surfaces import ComparisonPlan, Game, Plan, SimilarityArgument
    from cohortsql.results.audit import AuditResult
    from cohortsql.results.baseline import BaselineShapleyResult
    from cohortsql.results.calibration import Calibration
    from cohortsql.results.cohort import CohortShapleyResult
    from cohortsql.results.comparison import Comparison
    from cohortsql.results.effects import ShapleyEffects
    from cohortsql.results.fairness import FairnessResult
    from cohortsql.results.insertion import InsertionDeletion
    from cohortsql.results.outcomes import CohortShapleyResults, ShapleyEffectsResults
    from cohortsql.results.uniqueness import GameResult, UniquenessResult


OptionsT = TypeVar("OptionsT", bound=Mapping[str, object])


class CohortNamespace:
    """Cohort Shapley on this frame: the same computations and results as the module functions.

    The methods' examples explain a small table of loans (`cohortsql.datasets.loans`), scored by
    ``1 - income / 100``, plus 0.05 in the south (`cohortsql.datasets.loans_model`):

    >>> import cohortsql  # registers df.cohort
    >>> cohortsql.datasets.loans().cohort.shapley(prediction="score", similarity=["income"]).features
    ('income',)
    """

    def __init__(self, frame: pl.DataFrame | pl.LazyFrame) -> None:
        self._frame = frame

    def _chosen(self, options: OptionsT) -> OptionsT:
        """`options` with ``targets`` given as a polars expression (``pl.col("group") == "b"``) or as a
        boolean mask of this frame's rows (a Series, array or list of booleans) turned into the ids
        (``id=``) or row positions of the rows where it is true on this frame."""
        from cohortsql.api.surfaces import RowMask, checked_targets
        from cohortsql.errors import CohortError

        targets = options.get("targets")
        mask = None if isinstance(targets, pl.Expr) else checked_targets("targets", targets)
        if isinstance(mask, RowMask):
            height = self._frame.lazy().select(pl.len()).collect().item()
            if len(mask.selected) != height:
                raise CohortError(
                    f"targets is a boolean mask of {len(mask.selected)} values, but the frame has {height} rows:"
                    " a mask needs one True or False per row"
                )
            targets = pl.lit(pl.Series(mask.selected))
        elif not isinstance(targets, pl.Expr):
            return options

        id = options.get("id")
        rows = pl.int_range(pl.len()) if id is None else pl.col(str(id))
        try:
            chosen = self._frame.lazy().select(rows.filter(targets)).collect().to_series()
        except pl.exceptions.PolarsError as error:
            first = str(error).strip().splitlines()[0]
            raise CohortError(f"targets: the expression {targets} cannot choose rows of this frame: {first}") from None
        if chosen.len() == 0:
            raise CohortError(f"targets: the expression {targets} holds for no row of the frame")
        return {**options, "targets": chosen.to_list()}  # type: ignore[return-value]

    def shapley(
        self,
        *,
        prediction: str | Sequence[str],
        similarity: SimilarityArgument,
        **options: Unpack[ShapleyOptions],
    ) -> CohortShapleyResult | CohortShapleyResults:
        """Cohort Shapley values of every feature for every target (`cohortsql.cohort_shapley`).

        Examples
        --------
        >>> import cohortsql
        >>> loans = cohortsql.datasets.loans()
        >>> loans.cohort.shapley(prediction="score", similarity={"income": "abs:15", "region": "exact"}).shapley[0].round(4).tolist()
        [0.2738, -0.0037]
        """
        from cohortsql.api.local import cohort_shapley

        return cohort_shapley(self._frame, prediction=prediction, similarity=similarity, **self._chosen(options))

    def effects(
        self,
        *,
        prediction: str | Sequence[str],
        similarity: SimilarityArgument,
        **options: Unpack[EffectsOptions],
    ) -> ShapleyEffects | ShapleyEffectsResults:
        """Shapley effects: each feature's share of the explained variance (`cohortsql.shapley_effects`).

        Examples
        --------
        >>> import cohortsql
        >>> loans = cohortsql.datasets.loans()
        >>> effects = loans.cohort.effects(prediction="score", similarity={"income": "abs:15", "region": "exact"})
        >>> effects.effects["share"].round(3).to_list()
        [0.78, 0.142]
        """
        from cohortsql.api.effects import shapley_effects

        return shapley_effects(self._frame, prediction=prediction, similarity=similarity, **self._chosen(options))

    def uniqueness(
        self,
        *,
        similarity: SimilarityArgument,
        **options: Unpack[UniquenessOptions],
    ) -> UniquenessResult:
        """Uniqueness Shapley: which features make each row identifiable (`cohortsql.uniqueness_shapley`).

        Examples
        --------
        >>> import cohortsql
        >>> loans = cohortsql.datasets.loans()
        >>> loans.lazy().cohort.uniqueness(similarity=["region"]).value.round(4).tolist()[:2]
        [0.6931, 0.6931]
        """
        from cohortsql.api.uniqueness import uniqueness_shapley

        return uniqueness_shapley(self._frame, similarity=similarity, **self._chosen(options))

    def game(
        self,
        *,
        game: str | Game,
        similarity: SimilarityArgument,
        prediction: str | None = None,
        **options: Unpack[GameOptions],
    ) -> GameResult:
        """Shapley values of any game of cohorts, by name or given (`cohortsql.game_shapley`).

        Examples
        --------
        >>> import cohortsql
        >>> loans = cohortsql.datasets.loans()
        >>> exposed = loans.cohort.game(game="k-anonymity:2", similarity={"income": "abs:15", "region": "exact"})
        >>> exposed.value[:4].tolist()
        [1.0, 0.0, 0.0, 1.0]
        """
        from cohortsql.api.games import game_shapley

        return game_shapley(
            self._frame, game=game, similarity=similarity, prediction=prediction, **self._chosen(options)
        )

    def kanonymity(
        self,
        *,
        similarity: SimilarityArgument,
        k: int | None = None,
        **options: Unpack[UniquenessOptions],
    ) -> GameResult:
        """k-anonymity Shapley: which predictors expose each row (`cohortsql.kanonymity_shapley`; `k`
        as it defaults there when None).

        Examples
        --------
        >>> import cohortsql
        >>> loans = cohortsql.datasets.loans()
        >>> loans.cohort.kanonymity(similarity={"income": "abs:15", "region": "exact"}, k=2).shapley[0].tolist()
        [0.5, 0.5]
        """
        from cohortsql.api.anonymity import kanonymity_shapley

        chosen = {} if k is None else {"k": k}
        return kanonymity_shapley(self._frame, similarity=similarity, **chosen, **self._chosen(options))

    def estimate(
        self,
        *,
        prediction: str | Sequence[str],
        similarity: SimilarityArgument,
        **options: Unpack[ShapleyOptions],
    ) -> Plan:
        """What `shapley` would do and how long it should take, from a timed pilot batch (`cohortsql.estimate`).

        Examples
        --------
        >>> import cohortsql
        >>> loans = cohortsql.datasets.loans()
        >>> loans.cohort.estimate(prediction="score", similarity=["income", "region"]).distinct_targets
        12
        """
        from cohortsql.api.estimate import estimate

        return estimate(self._frame, prediction=prediction, similarity=similarity, **self._chosen(options))

    def baseline(
        self,
        *,
        model: object,
        features: SimilarityArgument,
        prediction: str | None = None,
        **options: Unpack[BaselineOptions],
    ) -> BaselineShapleyResult:
        """Baseline or all-baseline Shapley of `model` (`cohortsql.baseline_shapley`).

        Examples
        --------
        >>> import cohortsql
        >>> loans = cohortsql.datasets.loans()
        >>> model = cohortsql.datasets.loans_model
        >>> loans.cohort.baseline(model=model, features=["income", "region"], model_input="polars").shapley[0].round(4).tolist()
        [0.295, 0.0]
        """
        from cohortsql.api.baseline import baseline_shapley

        return baseline_shapley(
            self._frame, model=model, features=features, prediction=prediction, **self._chosen(options)
        )

    def compare(
        self,
        *,
        model: object,
        prediction: str,
        similarity: SimilarityArgument,
        **options: Unpack[CompareOptions],
    ) -> Comparison:
        """Cohort, baseline and all-baseline Shapley side by side (`cohortsql.compare`).

        Examples
        --------
        >>> import cohortsql
        >>> loans = cohortsql.datasets.loans()
        >>> model = cohortsql.datasets.loans_model
        >>> both = loans.cohort.compare(model=model, prediction="score", similarity=["income", "region"], model_input="polars")
        >>> both.totals.columns[:3]
        ['id', 'prediction', 'model']
        """
        from cohortsql.api.compare import compare

        return compare(self._frame, model=model, prediction=prediction, similarity=similarity, **self._chosen(options))

    def estimate_compare(
        self,
        *,
        model: object,
        prediction: str,
        similarity: SimilarityArgument,
        **options: Unpack[CompareOptions],
    ) -> ComparisonPlan:
        """What `compare` would do and how long each stage should take, from timed pilots (`cohortsql.estimate_compare`).

        Examples
        --------
        >>> import cohortsql
        >>> loans = cohortsql.datasets.loans()
        >>> model = cohortsql.datasets.loans_model
        >>> plan = loans.cohort.estimate_compare(model=model, prediction="score", similarity=["income", "region"], model_input="polars")
        >>> [game.game for game in plan.model_games]
        ['baseline', 'all-baseline']
        """
        from cohortsql.api.estimate import estimate_compare

        return estimate_compare(
            self._frame, model=model, prediction=prediction, similarity=similarity, **self._chosen(options)
        )

    def audit(
        self,
        *,
        prediction: str,
        protected: str | Sequence[str],
        similarity: SimilarityArgument,
        model: object = None,
        **options: Unpack[AuditOptions],
    ) -> AuditResult:
        """Whether the predictions lean on protected attributes, model inputs or not (`cohortsql.audit`).

        Examples
        --------
        >>> import cohortsql
        >>> loans = cohortsql.datasets.loans()
        >>> found = loans.cohort.audit(prediction="score", protected="region", similarity=["income"], bootstrap=20, seed=1)
        >>> found.groups["level"].to_list()
        ['n', 's']
        """
        from cohortsql.api.audit import audit

        return audit(
            self._frame,
            prediction=prediction,
            protected=protected,
            similarity=similarity,
            model=model,
            **self._chosen(options),
        )

    def fairness(
        self,
        *,
        prediction: str,
        protected: str | Sequence[str],
        threshold: float | None = None,
        observed: str | None = None,
        **options: Unpack[FairnessOptions],
    ) -> FairnessResult:
        """Group fairness metrics of the decisions, in fairlearn's vocabulary (`cohortsql.fairness`).

        Examples
        --------
        >>> import cohortsql
        >>> loans = cohortsql.datasets.loans()
        >>> found = loans.cohort.fairness(prediction="score", protected="region", threshold=0.5, bootstrap=0)
        >>> found.groups["level"].to_list()
        ['n', 's']
        """
        from cohortsql.api.fairness import fairness

        return fairness(
            self._frame, prediction=prediction, protected=protected, threshold=threshold, observed=observed, **options
        )

    def insertion_deletion(
        self,
        *,
        prediction: str,
        similarity: SimilarityArgument,
        attributions: object,
        **options: Unpack[InsertionOptions],
    ) -> InsertionDeletion:
        """The insertion and deletion tests of an attribution in cohorts (`cohortsql.insertion_deletion`).

        Examples
        --------
        >>> import cohortsql
        >>> loans = cohortsql.datasets.loans()
        >>> values = loans.cohort.shapley(prediction="score", similarity=["income", "region"], method="integrated")
        >>> tests = loans.cohort.insertion_deletion(prediction="score", similarity=["income", "region"], attributions=values)
        >>> tests.abc.height
        12
        """
        from cohortsql.api.integrated import insertion_deletion

        return insertion_deletion(
            self._frame, prediction=prediction, similarity=similarity, attributions=attributions, **options
        )

    def calibrate(self, *, features: Sequence[str], **options: Unpack[CalibrationOptions]) -> Calibration:
        """The similarity threshold at which held-out rows are realistic (`cohortsql.calibrate`).

        Examples
        --------
        >>> import cohortsql
        >>> loans = cohortsql.datasets.loans()
        >>> loans.cohort.calibrate(features=["income", "region"], runs=5, seed=1).recommended
        0.7
        """
        from cohortsql.api.calibrate import calibrate

        return calibrate(self._frame, features=features, **options)


pl.api.register_dataframe_namespace("cohort")(CohortNamespace)
pl.api.register_lazyframe_namespace("cohort")(CohortNamespace)
