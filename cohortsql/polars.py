"""`df.cohort` on polars DataFrames and LazyFrames, registered when polars and cohortsql are both imported.

import cohortsql, polars as pl
res = df.cohort.shapley(prediction="score", similarity={"age": "range:0.1", "sex": "exact"})
effects = df.cohort.effects(prediction="score", similarity=["age", "sex"])
privacy = df.cohort.uniqueness(similarity=["age", "sex", "zip"])
both = df.cohort.compare(model=model, prediction="score", similarity=["age", "sex"])

The methods take the same arguments, with the same names and defaults, as `cohortsql.cohort_shapley`,
`cohortsql.shapley_effects`, `cohortsql.uniqueness_shapley`, `cohortsql.estimate`,
`cohortsql.baseline_shapley`, `cohortsql.compare` and `cohortsql.calibrate`, the frame being the data. This module is imported as soon as polars
is (see `cohortsql/__init__.py`), so it loads the computations only when a method is called.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Unpack

import polars as pl

from cohortsql._typing import (
    BATCH_ROWS,
    CALIBRATION_THRESHOLDS,
    Baseline,
    CalibrationKind,
    CohortPath,
    Method,
    ModelInput,
    ModelOutput,
    RunOptions,
)

if TYPE_CHECKING:
    from cohortsql._typing import SimilarityArgument, Targets
    from cohortsql.results.baseline import BaselineShapleyResult
    from cohortsql.results.calibration import Calibration
    from cohortsql.results.cohort import CohortShapleyResult
    from cohortsql.results.comparison import Comparison
    from cohortsql.results.effects import ShapleyEffects
    from cohortsql.results.outcomes import CohortShapleyResults, ShapleyEffectsResults
    from cohortsql.results.uniqueness import UniquenessResult
    from cohortsql.run.pace import Plan


class CohortNamespace:
    """Cohort Shapley on this frame: the same computations and results as the module functions."""

    def __init__(self, frame: pl.DataFrame | pl.LazyFrame) -> None:
        self._frame = frame

    def shapley(
        self,
        *,
        prediction: str | Sequence[str],
        similarity: SimilarityArgument,
        id: str | None = None,
        weight: str | None = None,
        targets: Targets = None,
        sample: int | float | None = None,
        method: Method = "exact",
        seed: int | None = None,
        bootstrap: int = 0,
        confidence: float = 0.95,
        tolerance: float | None = None,
        max_permutations: int = 200,
        path: CohortPath = "auto",
        **options: Unpack[RunOptions],
    ) -> CohortShapleyResult | CohortShapleyResults:
        """Cohort Shapley values of every feature for every target (`cohortsql.cohort_shapley`)."""
        from cohortsql.api.local import cohort_shapley

        return cohort_shapley(
            self._frame,
            prediction=prediction,
            similarity=similarity,
            id=id,
            weight=weight,
            targets=targets,
            sample=sample,
            method=method,
            seed=seed,
            bootstrap=bootstrap,
            confidence=confidence,
            tolerance=tolerance,
            max_permutations=max_permutations,
            path=path,
            **options,
        )

    def effects(
        self,
        *,
        prediction: str | Sequence[str],
        similarity: SimilarityArgument,
        id: str | None = None,
        weight: str | None = None,
        targets: Targets = None,
        sample: int | float | None = None,
        seed: int | None = None,
        bootstrap: int = 0,
        confidence: float = 0.95,
        path: CohortPath = "auto",
        **options: Unpack[RunOptions],
    ) -> ShapleyEffects | ShapleyEffectsResults:
        """Shapley effects: each feature's share of the explained variance (`cohortsql.shapley_effects`)."""
        from cohortsql.api.effects import shapley_effects

        return shapley_effects(
            self._frame,
            prediction=prediction,
            similarity=similarity,
            id=id,
            weight=weight,
            targets=targets,
            sample=sample,
            seed=seed,
            bootstrap=bootstrap,
            confidence=confidence,
            path=path,
            **options,
        )

    def uniqueness(
        self,
        *,
        similarity: SimilarityArgument,
        id: str | None = None,
        weight: str | None = None,
        targets: Targets = None,
        sample: int | float | None = None,
        seed: int | None = None,
        path: CohortPath = "auto",
        **options: Unpack[RunOptions],
    ) -> UniquenessResult:
        """Uniqueness Shapley: which features make each row identifiable (`cohortsql.uniqueness_shapley`)."""
        from cohortsql.api.uniqueness import uniqueness_shapley

        return uniqueness_shapley(
            self._frame,
            similarity=similarity,
            id=id,
            weight=weight,
            targets=targets,
            sample=sample,
            seed=seed,
            path=path,
            **options,
        )

    def estimate(
        self,
        *,
        prediction: str | Sequence[str],
        similarity: SimilarityArgument,
        id: str | None = None,
        weight: str | None = None,
        targets: Targets = None,
        sample: int | float | None = None,
        method: Method = "exact",
        seed: int | None = None,
        bootstrap: int = 0,
        path: CohortPath = "auto",
        **options: Unpack[RunOptions],
    ) -> Plan:
        """What `shapley` would do and how long it should take, from a timed pilot batch (`cohortsql.estimate`)."""
        from cohortsql.api.estimate import estimate

        return estimate(
            self._frame,
            prediction=prediction,
            similarity=similarity,
            id=id,
            weight=weight,
            targets=targets,
            sample=sample,
            method=method,
            seed=seed,
            bootstrap=bootstrap,
            path=path,
            **options,
        )

    def baseline(
        self,
        *,
        model: object,
        features: SimilarityArgument,
        baseline: Baseline | Sequence[object] = "mean",
        baseline_sample: int | None = None,
        realistic: bool = False,
        id: str | None = None,
        targets: Targets = None,
        sample: int | float | None = None,
        seed: int | None = None,
        method: Method = "exact",
        max_permutations: int = 200,
        tolerance: float | None = None,
        model_input: ModelInput = "pandas",
        model_output: ModelOutput = "prediction",
        batch_rows: int = BATCH_ROWS,
        **options: Unpack[RunOptions],
    ) -> BaselineShapleyResult:
        """Baseline or all-baseline Shapley of `model` (`cohortsql.baseline_shapley`)."""
        from cohortsql.api.baseline import baseline_shapley

        arguments = {
            name: value for name, value in locals().items() if name not in ("self", "baseline_shapley", "options")
        }
        return baseline_shapley(self._frame, **arguments, **options)

    def compare(
        self,
        *,
        model: object,
        prediction: str,
        similarity: SimilarityArgument,
        id: str | None = None,
        targets: Targets = None,
        sample: int | float | None = None,
        seed: int | None = None,
        baseline_sample: int | None = None,
        realistic: bool = True,
        method: Method = "exact",
        max_permutations: int = 200,
        tolerance: float | None = None,
        model_input: ModelInput = "pandas",
        model_output: ModelOutput = "prediction",
        batch_rows: int = BATCH_ROWS,
        **options: Unpack[RunOptions],
    ) -> Comparison:
        """Cohort, baseline and all-baseline Shapley side by side (`cohortsql.compare`)."""
        from cohortsql.api.compare import compare

        arguments = {name: value for name, value in locals().items() if name not in ("self", "compare", "options")}
        return compare(self._frame, **arguments, **options)

    def calibrate(
        self,
        *,
        features: Sequence[str],
        exact: Sequence[str] = (),
        kind: CalibrationKind = "range",
        thresholds: Sequence[float] = CALIBRATION_THRESHOLDS,
        holdouts: Sequence[float] = (0.1, 0.2, 0.3),
        runs: int = 100,
        marginal_samples: int = 1000,
        max_rows: int = 20_000,
        seed: int | None = None,
        **options: Unpack[RunOptions],
    ) -> Calibration:
        """The similarity threshold at which held-out rows are realistic (`cohortsql.calibrate`)."""
        from cohortsql.api.calibrate import calibrate

        arguments = {name: value for name, value in locals().items() if name not in ("self", "calibrate", "options")}
        return calibrate(self._frame, **arguments, **options)


pl.api.register_dataframe_namespace("cohort")(CohortNamespace)
pl.api.register_lazyframe_namespace("cohort")(CohortNamespace)
