"""Cohort, baseline and all-baseline Shapley side by side, local and global (paper, Appendix 4)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import polars as pl

from cohortsql.formats.files import write_set
from cohortsql.results.baseline import BaselineShapleyResult
from cohortsql.results.cohort import CohortShapleyResult

METHODS = ("CS", "CS2", "BS", "BS2", "ABS", "ABS2")
"""Cohort, baseline and all-baseline Shapley, each with its squared version."""


@dataclass(frozen=True, eq=False)
class Comparison:
    """The three methods on the same targets: `cohort` explains the prediction column over similar
    subjects; `baseline` and `all_baseline` evaluate the model at hybrid points, split by realism."""

    cohort: CohortShapleyResult
    baseline: BaselineShapleyResult
    all_baseline: BaselineShapleyResult

    @property
    def features(self) -> tuple[str, ...]:
        return self.cohort.features

    def values(self, method: str) -> np.ndarray:
        """The (targets, features) values of one of `METHODS`."""
        name = method.removesuffix("2")
        result = self.cohort if name == "CS" else self.baseline if name == "BS" else self.all_baseline
        return result.shapley_squared if method.endswith("2") else result.shapley

    def realistic(self, method: str) -> np.ndarray | None:
        """The realistic part of a baseline method's values (None for CS, or without realism)."""
        if method.startswith("CS"):
            return None
        result = self.baseline if method.startswith("BS") else self.all_baseline
        return result.shapley_squared_realistic if method.endswith("2") else result.shapley_realistic

    @cached_property
    def local(self) -> pl.DataFrame:
        """One row per (target, feature, method): ``id``, ``feature``, ``method``, ``value``, and for BS and
        ABS with realism its ``realistic`` and ``unrealistic`` parts (null for CS)."""
        targets, d = self.cohort.shapley.shape
        rows = np.repeat(np.arange(targets), d)
        frames = []
        for method in METHODS:
            values = self.values(method).reshape(-1)
            realistic = self.realistic(method)
            real = None if realistic is None else realistic.reshape(-1)
            frames.append(
                pl.DataFrame(
                    {
                        "id": self.cohort.ids.gather(rows),
                        "feature": pl.Series(list(self.features) * targets, dtype=pl.String),
                        "method": pl.Series([method] * len(values), dtype=pl.String),
                        "value": values,
                        "realistic": pl.Series(real, dtype=pl.Float64) if real is not None else None,
                        "unrealistic": pl.Series(values - real, dtype=pl.Float64) if real is not None else None,
                    },
                    schema_overrides={"realistic": pl.Float64, "unrealistic": pl.Float64},
                )
            )
        return pl.concat(frames)

    @cached_property
    def global_(self) -> pl.DataFrame:
        """Per feature and method, averaged over the targets: ``importance`` (mean |value| for CS, BS,
        ABS; mean value for the squared methods, which for CS2 over every row is the Shapley effect), its
        ``share`` of the method's total, and the realistic part of the squared methods' importance."""
        rows = []
        for method in METHODS:
            values = self.values(method)
            squared = method.endswith("2")
            importance = values.mean(axis=0) if squared else np.abs(values).mean(axis=0)
            realistic = self.realistic(method)
            real = realistic.mean(axis=0) if squared and realistic is not None else np.full(len(self.features), None)
            total = importance.sum()
            for index, feature in enumerate(self.features):
                rows.append(
                    (feature, method, importance[index], importance[index] / total if total else None, real[index])
                )
        return pl.DataFrame(
            rows,
            schema={
                "feature": pl.String,
                "method": pl.String,
                "importance": pl.Float64,
                "share": pl.Float64,
                "realistic": pl.Float64,
            },
            orient="row",
        )

    @cached_property
    def totals(self) -> pl.DataFrame:
        """One row per target: ``id``, ``prediction`` (the column cohort Shapley explains), ``model`` f(x_t),
        and each method's total: ``cs`` = cohort mean - mean, ``bs`` and ``abs`` = f(x_t) - mean_b f(x_b),
        with the realistic share of BS's and ABS's hybrid points."""
        return pl.DataFrame(
            {
                "id": self.cohort.ids,
                "prediction": self.cohort.prediction,
                "model": self.baseline.prediction,
                "cs": self.cohort.shapley.sum(axis=1),
                "bs": self.baseline.shapley.sum(axis=1),
                "abs": self.all_baseline.shapley.sum(axis=1),
            }
        ).with_columns(
            *(
                pl.Series(f"{name}_realistic_share", result.realistic_points / result.hybrid_points)
                for name, result in (("bs", self.baseline), ("abs", self.all_baseline))
                if result.realistic_points is not None
            )
        )

    def write_parquet(self, path: str | os.PathLike[str]) -> None:
        """`local` at `path`, `global_` and `totals` beside it (``_global``, ``_totals``), all or nothing
        (companions an earlier run left beside `path` are removed with them)."""
        tables = {"": self.local, "global": self.global_, "totals": self.totals}
        write_set(Path(path), tables, self.cohort.settings | {"comparison": ["CS", "BS", "ABS"]})

    def __repr__(self) -> str:
        return (
            f"Comparison(CS, BS, ABS; {len(self.cohort.ids)} targets x {len(self.features)} features,"
            f" {self.all_baseline.baselines} baselines for ABS)"
        )
