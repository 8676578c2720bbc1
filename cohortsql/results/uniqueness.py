"""Uniqueness Shapley (Seiler, Mase & Owen): how identifiable each target is, feature by feature.

The game v_U(t, u) = -log(|C_{t,u}| / n) measures, in nats, how much knowing the target's values on
the predictors in u narrows down which row it is: 0 for u = {} (every subject), log(n) once the
target is alone in its cohort. Its Shapley values split v_U(t, 1:d) over the predictors, so a privacy
audit can say which columns make a record identifiable. The values come from the cohort sizes alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl

from cohortsql.results.files import write_frame
from cohortsql.results.tables import diagnostics, feature_texts


@dataclass(frozen=True, eq=False)
class UniquenessResult:
    """Uniqueness Shapley values phi_j(t) of v_U(t, u) = -log(|C_{t,u}| / n) for every target and feature.

    For every target the values add up to ``uniqueness`` = -log(|C_{t,1:d}| / n) (efficiency)."""

    ids: pl.Series
    """The targets' ids, in table order."""
    features: tuple[str, ...]
    similarity: dict[str, str]
    """Each feature's similarity kind in text form, defaults filled in."""
    subjects: int
    """n: how many subjects (rows) the cohorts are drawn from."""
    uniqueness: np.ndarray
    """phi_j(t) of v_U, shape (targets, features), in nats."""
    value: np.ndarray
    """v_U(t, 1:d) = -log(|C_{t,1:d}| / n) for each target."""
    cohort_size: np.ndarray
    """|C_{t,1:d}|: how many subjects share the target's values on every feature (sums of weights when weighted)."""
    targets: pl.DataFrame
    """The target rows as they are in the data (every column), in the order of `ids`."""
    path: str = "pairwise"
    settings: dict[str, str] = field(default_factory=dict)
    total_weight: float | None = None
    """The subjects' total case weight (None: unweighted, n = `subjects`)."""
    weights: np.ndarray | None = None
    """Each target's case weight (None: unweighted); averages over targets are weighted by them."""

    @cached_property
    def local(self) -> pl.DataFrame:
        """One row per (target, feature): ``id``, ``feature``, the target's ``feature_value`` (as text) and ``uniqueness``."""
        targets, d = self.uniqueness.shape
        rows = np.repeat(np.arange(targets), d)
        values = feature_texts(self.targets, self.features, targets)
        return pl.DataFrame(
            {
                "id": self.ids.gather(rows),
                "feature": pl.Series(list(self.features) * targets, dtype=pl.String),
                "feature_value": pl.Series(values.reshape(-1).tolist(), dtype=pl.String),
                "uniqueness": self.uniqueness.reshape(-1),
            }
        )

    @cached_property
    def totals(self) -> pl.DataFrame:
        """One row per target: ``id``, ``cohort_size`` and ``uniqueness`` = -log(cohort_size / n)."""
        return pl.DataFrame({"id": self.ids, "cohort_size": self.cohort_size, "uniqueness": self.value})

    @cached_property
    def global_(self) -> pl.DataFrame:
        """Per feature: ``mean_uniqueness`` (the targets' weighted mean of phi_j) and its ``share`` of the
        mean total uniqueness; ``unique_share`` in `diagnostics` says how many targets are alone."""
        weights = np.ones(len(self.ids)) if self.weights is None else self.weights
        means = np.average(self.uniqueness, axis=0, weights=weights)
        total = float(np.average(self.value, weights=weights))
        return pl.DataFrame(
            {
                "feature": list(self.features),
                "mean_uniqueness": means,
                "share": means / total if total > 0 else np.full(len(means), np.nan),
            }
        )

    @cached_property
    def diagnostics(self) -> dict[str, Any]:
        """``unique_share``: the share of targets alone in their cohort on every feature (identifiable from
        them), with the cohort diagnostics of `cohortsql.results.cohort.diagnostics`."""
        n = float(self.subjects if self.total_weight is None else self.total_weight)
        weights = np.ones(len(self.ids)) if self.weights is None else self.weights
        checks = diagnostics(
            self.cohort_size, np.full((len(self.ids), len(self.features)), n), self.features, n, weights
        )
        checks.pop("narrow_features")
        return {"unique_share": checks.pop("singleton_share"), **checks}

    def write_parquet(self, path: str | os.PathLike[str]) -> None:
        """Write the long table `local` to a Parquet file, atomically, with the run's settings as metadata."""
        write_frame(self.local, path, self.settings)

    def __repr__(self) -> str:
        return (
            f"UniquenessResult({len(self.ids)} targets x {len(self.features)} features, {self.subjects} subjects,"
            f" {self.diagnostics['unique_share']:.0%} unique)"
        )
