"""`df.cohort` on polars DataFrames and LazyFrames, registered when cohortsql is imported.

import cohortsql, polars as pl
res = df.cohort.shapley(prediction="score", similarity={"age": "range:0.1", "sex": "exact"})
effects = df.cohort.effects(prediction="score", similarity=["age", "sex"])
"""

from __future__ import annotations

from typing import Any

import polars as pl

from cohortsql.api import cohort_shapley, variance_shapley
from cohortsql.result import CohortShapleyResult, ShapleyEffects


class CohortNamespace:
    """Cohort Shapley on this frame: the same computations and results as the module functions."""

    def __init__(self, frame: pl.DataFrame | pl.LazyFrame) -> None:
        self._frame = frame

    def shapley(self, **options: Any) -> CohortShapleyResult:
        """`cohortsql.cohort_shapley` on this frame (same keyword arguments)."""
        return cohort_shapley(self._frame, **options)

    def effects(self, **options: Any) -> ShapleyEffects:
        """`cohortsql.variance_shapley` on this frame (same keyword arguments)."""
        return variance_shapley(self._frame, **options)


pl.api.register_dataframe_namespace("cohort")(CohortNamespace)
pl.api.register_lazyframe_namespace("cohort")(CohortNamespace)
