"""Shapley effects: the Shapley values of the variance game v_var(u) = (1/n) sum_t (ybar_{t,u} - ybar)^2
(`ShapleyEffects`), with standard errors from the targets' squared values and bootstrap intervals;
and the same table computed from the files `cohortsql shapley --out` writes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl

from cohortsql.errors import CohortError
from cohortsql.formats.files import write_frame
from cohortsql.formats.settings import Settings
from cohortsql.formats.tables import Diagnostics, anchored_table, by_importance, effects_table, standard_error
from cohortsql.numeric.bootstrap import bias_corrected_interval
from cohortsql.numeric.dividends import anchored_terms, interaction_values
from cohortsql.numeric.shapley import shapley_values
from cohortsql.results.null import NullReference


@dataclass(frozen=True, eq=False)
class ShapleyEffects:
    """Shapley effects of v_var(u) = (1/n) sum_t (ybar_{t,u} - ybar)^2 (`cohortsql.variance_shapley`)."""

    effects: pl.DataFrame
    """One row per feature, the largest effect first: ``feature``, ``shapley_effect``,
    ``shapley_effect_se``, ``share`` (and with ``bootstrap=B`` the interval ``shapley_effect_ci_low`` ..
    ``_high``)."""
    explained: float
    """v_var(1:d): the variance explained by the cohorts on every feature; the effects add up to it."""
    variance: float
    """Mean over the targets of (y_t - ybar)^2: the variance of the explained column when every row is a
    target (its estimate for a sample); ``share`` = shapley_effect / variance."""
    subjects: int
    targets: int
    """How many targets v_var averages over (every subject, unless a sample or subset was asked for)."""
    path: str
    diagnostics: Diagnostics = field(default_factory=lambda: Diagnostics())
    """How much of v_var rests on tiny cohorts (see `cohortsql.results.cohort.diagnostics`)."""
    settings: Settings = field(default_factory=dict)
    """The run's settings as Python values (``settings["windows"]`` is a dict): written with every output."""
    method: str = "exact"
    """``exact`` (the Shapley values of v_var) or ``permutation`` (the mean of the targets' estimates)."""
    features: tuple[str, ...] = ()
    """The features, in the order given (`effects` puts the largest first)."""
    interactions: np.ndarray | None = None
    """With ``interactions=True``: the interaction values of v_var in shap's convention, (features,
    features) in feature order: half the Shapley interaction index of the pair off the diagonal, the
    rest of the feature's effect on it, so that row j adds up to feature j's effect; else None."""
    anchored_terms: np.ndarray | None = None
    """With ``anchored=K``: the anchored terms g_T of v_var for every set of 1..K features; else None."""
    anchored_order: int = 0
    """K: the largest sets whose anchored terms were computed (0: none)."""
    groups: dict[str, tuple[str, ...]] | None = None
    """With ``groups=``: each player (a group, or a feature alone) and its features; `effects` are the
    players'. None when every feature is its own player."""
    owen_table: pl.DataFrame | None = None
    """With ``group_values="owen"``: one row per feature, ``group``, ``feature``, ``owen_effect`` (its
    Owen value of v_var: a group's rows add up to the group's effect) and ``share``; else None."""
    null: NullReference | None = None
    """With ``null=B``: the shares of B shuffled copies of each feature asked beside its own; `effects`
    then has ``null_share``, ``null_share_high`` and ``p_value`` (null for features without copies)."""

    def with_null(self, null: NullReference | None) -> ShapleyEffects:
        """These effects with their null reference (the same effects without one)."""
        if null is None:
            return self
        return replace(self, null=null, effects=null.joined(self.effects))

    @classmethod
    def from_game(
        cls,
        *,
        features: tuple[str, ...],
        game: np.ndarray,
        variance: float,
        subjects: int,
        targets: int,
        squared_values: np.ndarray | None,
        population: int | None,
        path: str,
        diagnostics: Diagnostics,
        settings: Settings,
        target_weights: np.ndarray | None = None,
        replicate_games: np.ndarray | None,
        confidence: float,
        interactions: bool,
        anchored: int,
    ) -> ShapleyEffects:
        """Effects = Shapley values of the game v_var; standard errors from the targets' squared values
        (their mean equals the effects, by linearity), or 0 (None given) where v_var is exact over every
        subject; with bootstrap replicates of v_var (`replicate_games`, (B, 2^d)), bias-corrected percentile intervals."""
        effects = shapley_values(game)
        if squared_values is None:
            errors = np.zeros(len(features))
        else:
            errors = standard_error(squared_values, population, None, target_weights)
        table = effects_table(features, effects, errors, variance)
        if replicate_games is not None:
            low, high = bias_corrected_interval(shapley_values(replicate_games), effects, confidence, 0)
            table = table.with_columns(shapley_effect_ci_low=pl.Series(low), shapley_effect_ci_high=pl.Series(high))
        return cls(
            effects=by_importance(table, "shapley_effect"),
            explained=float(game[-1]),
            variance=variance,
            subjects=subjects,
            targets=targets,
            path=path,
            diagnostics=diagnostics,
            settings=settings,
            features=features,
            interactions=interaction_values(game, effects) if interactions else None,
            anchored_terms=anchored_terms(game, anchored)[1] if anchored else None,
            anchored_order=anchored,
        )

    @classmethod
    def from_estimates(
        cls,
        *,
        features: tuple[str, ...],
        squared_values: np.ndarray,
        distinct_errors: np.ndarray,
        group: np.ndarray,
        target_weights: np.ndarray,
        variance: float,
        subjects: int,
        population: int | None,
        diagnostics: Diagnostics,
        settings: Settings,
        method: str,
        path: str,
        replicate_effects: np.ndarray | None,
        confidence: float,
    ) -> ShapleyEffects:
        """Effects by the permutation method: the weighted mean over the targets of their estimated
        Shapley values of v_t(u)^2 (`squared_values`, targets x features), equal in expectation to the
        Shapley values of v_var (their mean game) by linearity; v_var(1:d) is exact, each permutation's
        increments adding up to it. By the integrated method (`method`), the mean of the targets'
        integrated gradients of v_t^2 (exact: no permutations' error), an additive split of the variance
        of the full cohorts' means; with its bootstrap `replicate_effects` (B, features), intervals.

        The standard error combines the sampling of targets (`standard_error`, with the finite-population
        correction when `population` is known) and the permutations' own error: targets that share one
        estimate (one `group`, `distinct_errors` per group) share its error, so its variance counts once
        with the group's whole weight, (sum_{t in g} p_t)^2 se_g^2."""
        shares = target_weights / target_weights.sum()
        effects = shares @ squared_values
        errors = standard_error(squared_values, population, None, target_weights)
        if population is not None and len(distinct_errors):
            group_shares = np.bincount(group, weights=shares, minlength=len(distinct_errors))
            errors = np.sqrt(errors**2 + group_shares**2 @ distinct_errors**2)
        table = effects_table(features, effects, errors, variance)
        if replicate_effects is not None:
            low, high = bias_corrected_interval(replicate_effects, effects, confidence, 0)
            table = table.with_columns(shapley_effect_ci_low=pl.Series(low), shapley_effect_ci_high=pl.Series(high))
        return cls(
            effects=by_importance(table, "shapley_effect"),
            explained=float(shares @ squared_values.sum(axis=1)),
            variance=variance,
            subjects=subjects,
            targets=len(squared_values),
            path=path,
            diagnostics=diagnostics,
            settings=settings,
            method=method,
            features=features,
        )

    @property
    def interaction_table(self) -> pl.DataFrame:
        """With ``interactions=True``, one row per ordered pair of features: ``feature``, ``other`` and
        ``interaction_effect`` (`interactions` in long form), the pairs of largest |value| first."""
        if self.interactions is None:
            raise CohortError("these effects have no interaction values: run shapley_effects(..., interactions=True)")
        d = len(self.features)
        table = pl.DataFrame(
            {
                "feature": pl.Series(np.repeat(self.features, d).tolist(), dtype=pl.String),
                "other": pl.Series(np.tile(self.features, d).tolist(), dtype=pl.String),
                "interaction_effect": self.interactions.reshape(-1),
            }
        )
        return table.sort(pl.col("interaction_effect").abs(), descending=True, maintain_order=True)

    def anchored(self, max_order: int | None = None) -> pl.DataFrame:
        """With ``anchored=K``, the anchored terms g_T of v_var for the sets T of at most `max_order`
        (<= K, default K) features: ``term``, ``order`` and ``anchored``; all of them add up to
        `explained`, and each effect is the sum over T containing its feature of g_T / |T|."""
        return anchored_table(self.features, self.anchored_terms, self.anchored_order, max_order)

    @property
    def explained_share(self) -> float:
        """v_var(1:d) / variance: the fraction of the variance the cohorts explain."""
        return self.explained / self.variance if self.variance > 0 else float("nan")

    def write_parquet(self, path: str | os.PathLike[str]) -> None:
        """Write `effects` to a Parquet (or CSV) file, atomically, with the run's settings as metadata:
        what ``cohortsql effects --out`` writes, and what ``cohortsql plot --kind effects`` reads."""
        write_frame(self.effects, path, self.settings)

    def report(self, path: str | os.PathLike[str], *, title: str | None = None) -> None:
        """Write an HTML report of the effects: each with its standard error (and its bootstrap interval
        when the run drew replicates), its share of the variance, whose effects they are (every row, a
        random sample's estimates, or chosen targets' own), and the run's settings and diagnostics."""
        from cohortsql.report.effects import write_effects_report

        write_effects_report(self, path, title)

    def __repr__(self) -> str:
        note = zero_errors_note(self.effects)
        return (
            f"ShapleyEffects({len(self.effects)} features, explained {self.explained:.6g} of variance"
            f" {self.variance:.6g}, {self.targets} targets of {self.subjects} subjects, method={self.method!r},"
            f" path={self.path!r})\n{self.effects}" + ("" if note is None else f"\n({note})")
        )


def zero_errors_note(effects: pl.DataFrame) -> str | None:
    """Why every ``shapley_effect_se`` of an effects table is 0, when it is: the standard error is of
    explaining a sample of the targets, and every row was a target (None when some error is not 0)."""
    if effects.height == 0 or not (effects["shapley_effect_se"] == 0).all():
        return None
    return "se: the error of explaining a sample of targets, none here as every row is a target"


def owen_effects_table(groups: Mapping[str, tuple[str, ...]], values: np.ndarray, variance: float) -> pl.DataFrame:
    """Per feature, player after player as `groups` lists them (`values` in that order): its group, its
    Owen effect and its share of `variance`."""
    members = [(group, feature) for group, features in groups.items() for feature in features]
    return pl.DataFrame(
        {
            "group": [group for group, _ in members],
            "feature": [feature for _, feature in members],
            "owen_effect": values,
            "share": values / variance if variance > 0 else np.full(len(values), np.nan),
        }
    )
