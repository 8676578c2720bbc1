"""The result of `cohortsql.calibrate`: realistic shares of held-out rows and of marginal draws per
threshold, and the recommended threshold (paper, Appendix 5).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import polars as pl

from cohortsql._typing import CalibrationKind
from cohortsql.formats.files import write_frame
from cohortsql.formats.settings import Settings

REALISTIC_SHARE = 0.95
"""The recommended threshold is the smallest at which this share of held-out rows is realistic (paper, Appendix 5)."""


@dataclass(frozen=True, eq=False)
class Calibration:
    """Realistic shares of held-out rows and of marginal draws at each threshold."""

    thresholds: np.ndarray
    holdouts: tuple[float, ...]
    holdout: np.ndarray
    """(holdouts, runs, thresholds) realistic shares of held-out rows."""
    marginal: np.ndarray
    """(runs, thresholds) realistic shares of points drawn from the marginals."""
    kind: CalibrationKind
    window_features: tuple[str, ...]
    exact_features: tuple[str, ...]
    rows: int
    """How many rows the calibration used (a sample when the table had more than `max_rows`)."""
    settings: Settings = field(default_factory=dict)

    @cached_property
    def recommended(self) -> float | None:
        """The smallest threshold at which, averaged over the runs, at least 95% of held-out rows are
        realistic for every holdout fraction (None when no threshold reaches it)."""
        means = self.holdout.mean(axis=1)
        passing = np.flatnonzero((means >= REALISTIC_SHARE).all(axis=0))
        return float(self.thresholds[passing[0]]) if len(passing) else None

    @cached_property
    def rates(self) -> pl.DataFrame:
        """One row per (points, threshold): ``points`` ("holdout 10%", ..., "marginal"), ``threshold``,
        and the ``mean``, ``low`` (min) and ``high`` (max) realistic share over the runs."""
        sets = [(f"holdout {fraction:.0%}", shares) for fraction, shares in zip(self.holdouts, self.holdout)]
        sets.append(("marginal", self.marginal))
        return pl.concat(
            pl.DataFrame(
                {
                    "points": [name] * len(self.thresholds),
                    "threshold": self.thresholds,
                    "mean": shares.mean(axis=0),
                    "low": shares.min(axis=0),
                    "high": shares.max(axis=0),
                }
            )
            for name, shares in sets
        )

    def write_parquet(self, path: str | os.PathLike[str]) -> None:
        """Write `rates` to a Parquet (or CSV) file, atomically, with the settings as metadata."""
        write_frame(self.rates, path, self.settings)

    def __repr__(self) -> str:
        shown = "none reaches 95%" if self.recommended is None else f"recommended {self.recommended:g}"
        return f"Calibration({self.kind} windows, {self.rows} rows, {len(self.thresholds)} thresholds: {shown})"
