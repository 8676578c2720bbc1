"""The result of `cohort_shapley`: per-target, per-feature cohort Shapley values and their totals."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql.errors import CohortError

LOCAL_COLUMNS = ("shapley", "shapley_squared")


@dataclass(frozen=True, eq=False)
class CohortShapleyResult:
    """Cohort Shapley values phi_j(t) of v_CS and v_CS2 for every target t and feature j.

    For every target, ``shapley`` adds up to ``value`` = cohort_mean - mean (efficiency) and
    ``shapley_squared`` adds up to ``value_squared`` = value^2.
    """

    ids: pl.Series
    """The targets' ids, in table order."""
    features: tuple[str, ...]
    """The predictors, in the order given."""
    similarity: dict[str, str]
    """Each feature's similarity kind in text form, defaults filled in."""
    mean: float
    """ybar: the mean of the explained column over all subjects."""
    subjects: int
    """n: how many subjects (rows) the cohorts were drawn from."""
    prediction: np.ndarray
    """y_t for each target."""
    cohort_size: np.ndarray
    """|C_{t,1:d}| for each target."""
    cohort_mean: np.ndarray
    """ybar_{t,1:d} for each target."""
    shapley: np.ndarray
    """phi_j(t) of v_CS, shape (targets, features)."""
    shapley_squared: np.ndarray
    """phi_j(t) of v_CS2, shape (targets, features)."""
    method: str = "exact"

    @cached_property
    def local(self) -> pl.DataFrame:
        """One row per (target, feature): ``id``, ``feature``, ``shapley``, ``shapley_squared``."""
        targets, d = self.shapley.shape
        return pl.DataFrame(
            {
                "id": self.ids.gather(np.repeat(np.arange(targets), d)),
                "feature": pl.Series(list(self.features) * targets, dtype=pl.String),
                "shapley": self.shapley.reshape(-1),
                "shapley_squared": self.shapley_squared.reshape(-1),
            }
        )

    @cached_property
    def totals(self) -> pl.DataFrame:
        """One row per target: ``id``, ``prediction``, ``cohort_size``, ``cohort_mean``, ``value``, ``value_squared``."""
        value = self.cohort_mean - self.mean
        return pl.DataFrame(
            {
                "id": self.ids,
                "prediction": self.prediction,
                "cohort_size": self.cohort_size,
                "cohort_mean": self.cohort_mean,
                "value": value,
                "value_squared": value**2,
            }
        )

    def wide(self, column: str = "shapley") -> pl.DataFrame:
        """One row per target (``id`` first) and one column per feature, holding `column`."""
        if column not in LOCAL_COLUMNS:
            raise CohortError(f"wide() shows one of {', '.join(LOCAL_COLUMNS)}, not {column!r}")
        values = getattr(self, column)
        return pl.DataFrame({"id": self.ids}).with_columns(
            pl.Series(feature, values[:, index]) for index, feature in enumerate(self.features)
        )

    def to_arrow(self) -> pa.Table:
        """The long table `local` as Arrow."""
        return self.local.to_arrow()

    def write_parquet(self, path: str | os.PathLike[str]) -> None:
        """Write the long table `local` to a Parquet file, atomically (no partial file on failure)."""
        target = Path(path)
        if not target.parent.is_dir():
            raise CohortError(f"cannot write {str(target)!r}: the directory {str(target.parent)!r} does not exist")
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        os.close(handle)
        try:
            self.local.write_parquet(temporary)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def __repr__(self) -> str:
        return (
            f"CohortShapleyResult({len(self.ids)} targets x {len(self.features)} features, "
            f"{self.subjects} subjects, mean={self.mean:.6g}, method={self.method!r})"
        )
