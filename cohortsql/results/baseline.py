"""The result of baseline Shapley (BS) and all-baseline Shapley (ABS): values, their squares, realism."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import polars as pl

from cohortsql.formats.tables import by_importance
from cohortsql.results.base import TargetValues

VALUE_ARRAYS = ("shapley", "shapley_squared", "shapley_realistic", "shapley_squared_realistic")


@dataclass(frozen=True, eq=False, kw_only=True)
class BaselineShapleyResult(TargetValues):
    """phi_j(t) and phi2_j(t) of the games v_b(u) = f(z_b(u)) - f(x_b), averaged over the baselines b.

    For every target (exactly; for the permutation method's all-baseline estimates, in expectation),
    ``shapley`` adds up to ``value`` = f(x_t) - mean_b f(x_b) and
    ``shapley_squared`` to ``value_squared`` = mean_b (f(x_t) - f(x_b))^2 (efficiency). With
    ``realistic=``, ``shapley_realistic`` is the part of each value made of terms whose two hybrid
    points are both realistic, and ``shapley_unrealistic`` the rest (paper, Appendix 4).
    """

    game: str
    """``baseline`` (one baseline point) or ``all-baseline`` (the baselines are subjects)."""
    baselines: int
    """|B|: how many baseline points each target's values average over."""
    prediction: np.ndarray
    """f(x_t): the model at each target."""
    baseline_prediction: np.ndarray
    """mean_b f(x_b), the same for every target (one entry per target for the tables)."""
    value_squared: np.ndarray
    """mean_b (f(x_t) - f(x_b))^2 for each target."""
    shapley_squared: np.ndarray
    """phi2_j(t): the mean over baselines of the Shapley values of v_b(u)^2, shape (targets, features)."""
    shapley_realistic: np.ndarray | None = None
    """The realistic part of phi_j(t) (None without ``realistic=``)."""
    shapley_squared_realistic: np.ndarray | None = None
    """The realistic part of phi2_j(t)."""
    realistic_points: np.ndarray | None = None
    """How many of each target's |B| 2^d hybrid points are realistic."""
    similarity: dict[str, str] = field(default_factory=dict)
    """The similarity kinds that decide realism (empty without ``realistic=``)."""
    population: int | None = None
    """n when the targets are every row or a random sample of them (see `CohortShapleyResult.population`)."""

    @property
    def hybrid_points(self) -> int:
        """|B| 2^d: how many hybrid points each target's values rest on."""
        return self.baselines << len(self.features)

    @property
    def prediction_column(self) -> np.ndarray:
        return self.prediction

    def value_arrays(self) -> dict[str, np.ndarray]:
        """The values (and standard errors when estimated); with realism also ``shapley_realistic``,
        ``shapley_unrealistic``, ``shapley_squared_realistic`` and ``shapley_squared_unrealistic``."""
        arrays = super().value_arrays()
        if self.shapley_realistic is not None and self.shapley_squared_realistic is not None:
            arrays |= {
                "shapley_realistic": self.shapley_realistic,
                "shapley_unrealistic": self.shapley - self.shapley_realistic,
                "shapley_squared_realistic": self.shapley_squared_realistic,
                "shapley_squared_unrealistic": self.shapley_squared - self.shapley_squared_realistic,
            }
        return arrays

    def group_arrays(self) -> dict[str, np.ndarray]:
        arrays = super().group_arrays()
        return {name: arrays[name] for name in VALUE_ARRAYS if name in arrays}

    @cached_property
    def totals(self) -> pl.DataFrame:
        """One row per target: ``id``, ``prediction``, ``baseline_prediction``, ``value``, ``value_squared``;
        with realism ``realistic_points`` out of ``hybrid_points``."""
        table = pl.DataFrame(
            {
                "id": self.ids,
                "prediction": self.prediction,
                "baseline_prediction": self.baseline_prediction,
                "value": self.prediction - self.baseline_prediction,
                "value_squared": self.value_squared,
            }
        )
        if self.permutations is not None:
            table = table.with_columns(permutations=pl.Series(self.permutations))
        if self.realistic_points is None:
            return table
        return table.with_columns(
            realistic_points=pl.Series(self.realistic_points), hybrid_points=pl.lit(self.hybrid_points, pl.Int64)
        )

    @cached_property
    def global_(self) -> pl.DataFrame:
        """Per feature, the most important first, averaged over the targets: ``mean_squared_shapley`` (the global importance of
        the squared method, as the paper compares them), its ``share`` of the mean ``value_squared``, and
        ``mean_abs_shapley``; with realism the realistic part of the mean Shapley value of the squared game."""
        table = pl.DataFrame(
            {
                "feature": list(self.features),
                "mean_squared_shapley": self.shapley_squared.mean(axis=0),
                "share": self.shapley_squared.mean(axis=0) / max(float(self.value_squared.mean()), 1e-300),
                "mean_abs_shapley": np.abs(self.shapley).mean(axis=0),
            }
        )
        if self.shapley_squared_realistic is not None:
            table = table.with_columns(
                mean_squared_shapley_realistic=pl.Series(self.shapley_squared_realistic.mean(axis=0))
            )
        return by_importance(table, "mean_squared_shapley")

    def __repr__(self) -> str:
        realism = "" if self.realistic_points is None else f", {self.realistic_share:.0%} of hybrid points realistic"
        return (
            f"BaselineShapleyResult({self.game}, {self.method}, {len(self.ids)} targets x {len(self.features)} features,"
            f" {self.baselines} baseline{'s' if self.baselines != 1 else ''}{realism})"
        )

    @property
    def realistic_share(self) -> float:
        """The share of all hybrid points that are realistic (NaN without realism)."""
        if self.realistic_points is None:
            return float("nan")
        return float(self.realistic_points.sum() / (self.hybrid_points * len(self.ids)))
