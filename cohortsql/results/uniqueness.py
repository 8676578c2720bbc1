"""The result of any game of cohorts (`cohortsql.games.base.Game`) that `cohortsql.game_shapley` values:
uniqueness Shapley, k-anonymity Shapley, the cohort variance game, and any game added in that shape.

Uniqueness Shapley (Seiler, Mase & Owen): v_U(t, u) = -log(|C_{t,u}| / n) measures, in nats, how much
knowing the target's values on the predictors in u narrows down which row it is: 0 for u = {} (every
subject), log(n) once the target is alone in its cohort. Its Shapley values split v_U(t, 1:d) over
the predictors, so a privacy audit can say which columns make a record identifiable.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import polars as pl

from cohortsql.formats.tables import Diagnostics, by_importance, diagnostics
from cohortsql.results.base import TargetValues


@dataclass(frozen=True, eq=False, kw_only=True)
class GameResult(TargetValues):
    """Shapley values phi_j(t) of a game of cohorts for every target and feature (``shapley``; there is
    no squared game). For every target the values add up to ``value`` = v(t, 1:d) (efficiency)."""

    game: str = "uniqueness"
    """Which game: ``uniqueness``, ``k-anonymity (k = 5)``, ``cohort-variance``, ..."""
    shapley_ci_low: np.ndarray | None = None
    """With ``bootstrap=B``: the low end of each value's percentile interval over the replicates'
    games (each subject reweighted by an Exp(1) draw), (targets, features); else None."""
    shapley_ci_high: np.ndarray | None = None
    """With ``bootstrap=B``: the high end of the same interval."""
    similarity: dict[str, str]
    """Each feature's similarity kind in text form, defaults filled in."""
    subjects: int
    """n: how many subjects (rows) the cohorts are drawn from."""
    value: np.ndarray
    """v(t, 1:d) for each target (uniqueness: -log(|C_{t,1:d}| / n))."""
    cohort_size: np.ndarray
    """|C_{t,1:d}|: how many subjects share the target's values on every feature (sums of weights when weighted)."""
    path: str = "pairwise"
    total_weight: float | None = None
    """The subjects' total case weight (None: unweighted, n = `subjects`)."""

    def value_arrays(self) -> dict[str, np.ndarray]:
        arrays = {"shapley": self.shapley}
        if self.shapley_se is not None:
            arrays["shapley_se"] = self.shapley_se
        if self.shapley_ci_low is not None and self.shapley_ci_high is not None:
            arrays |= {"shapley_ci_low": self.shapley_ci_low, "shapley_ci_high": self.shapley_ci_high}
        return arrays

    def group_arrays(self) -> dict[str, np.ndarray]:
        return {"shapley": self.shapley}

    @cached_property
    def totals(self) -> pl.DataFrame:
        """One row per target: ``id``, ``cohort_size`` and ``value`` = v(t, 1:d) (uniqueness: -log(cohort_size / n))."""
        return pl.DataFrame({"id": self.ids, "cohort_size": self.cohort_size, "value": self.value})

    @cached_property
    def global_(self) -> pl.DataFrame:
        """Per feature, the largest in size first (a game may be negative, as the cohort variance game is):
        ``mean_shapley`` (the targets' weighted mean of phi_j) and its
        ``share`` of the targets' mean ``value``; ``unique_share`` in `diagnostics` says how many targets
        are alone. With ``null=B``, the share's null reference (``null_share``, ``null_share_high``,
        ``p_value``: `cohortsql.results.null.NullReference`)."""
        weights = self.target_weights
        means = np.average(self.shapley, axis=0, weights=weights)
        total = float(np.average(self.value, weights=weights))
        table = pl.DataFrame(
            {
                "feature": list(self.features),
                "mean_shapley": means,
                "share": means / total if total != 0 else np.full(len(means), np.nan),
            }
        )
        if self.null is not None:
            table = self.null.joined(table)
        ranked = by_importance(table.with_columns(magnitude=pl.col("mean_shapley").abs()), "magnitude")
        return ranked.drop("magnitude")

    @cached_property
    def diagnostics(self) -> Diagnostics:
        """``unique_share``: the share of targets alone in their cohort on every feature (identifiable from
        them), with the cohort diagnostics of `cohortsql.formats.tables.diagnostics`."""
        n = float(self.subjects if self.total_weight is None else self.total_weight)
        checks = diagnostics(
            self.cohort_size, np.full((len(self.ids), len(self.features)), n), self.features, n, self.target_weights
        )
        checks.pop("narrow_features")
        checks.pop("broad_features")
        return {"unique_share": checks.pop("singleton_share"), **checks}

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.game}: {len(self.ids)} targets x {len(self.features)} features,"
            f" {self.subjects} subjects, {self.diagnostics['unique_share']:.0%} unique)"
        )


@dataclass(frozen=True, eq=False, kw_only=True)
class UniquenessResult(GameResult):
    """Uniqueness Shapley values phi_j(t) of v_U(t, u) = -log(|C_{t,u}| / n) for every target and feature
    (``shapley``, in nats). For every target they add up to ``value`` = -log(|C_{t,1:d}| / n)."""
