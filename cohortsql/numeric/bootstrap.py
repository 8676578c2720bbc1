"""Bayesian-bootstrap intervals from replicate games (pure numpy, no I/O).

Rubin's Bayesian bootstrap reweights the subjects with independent Exp(1) draws; a replicate's
cohort Shapley values are those of its reweighted table (`cohortsql.request.measures`), computed in the same
pass as the estimate. An interval is the percentile interval of a statistic over the replicates.
Statistics over targets (Shapley effects, group means) weigh each target by its own replicate
weight, and every statistic uses the same replicate weights, so differences between groups and
between outcomes are paired: their intervals come from the replicates' differences.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cohortsql.numeric.local_values import ByRowAndFeature, LocalValues
from cohortsql.numeric.shapley import CohortShapley, shapley_values


class GameRows(Protocol):
    """How a batch's game rows are laid out, target-major: for each target, each outcome, each
    weighting (the estimate, then the replicates). `cohortsql.request.measures.Measures` is one."""

    @property
    def outcomes(self) -> int: ...

    @property
    def replicates(self) -> int: ...

    @property
    def weightings(self) -> int: ...

    @property
    def games(self) -> int: ...


KEEP_REPLICATES_BYTES = 512 * 2**20
"""Each target's replicate values are kept (float32, for `by` intervals) up to this much memory, or
the run's batch budget when that is less (a quarter of an engine's memory limit)."""


def percentile_interval(replicates: np.ndarray, confidence: float, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """The (1 - confidence) / 2 and (1 + confidence) / 2 quantiles of `replicates` along `axis`:
    the percentile interval of a (Bayesian) bootstrap."""
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(replicates, [tail, 1.0 - tail], axis=axis)
    return low, high


BIAS_CORRECTED = "bias-corrected percentile intervals (the replicates' central interval less their bias, their mean minus the estimate)"
"""What the intervals of effects, shares and the audit's statistics are, in words (`bias_corrected_interval`),
as the command line and the report say it."""


def bias_corrected_interval(
    replicates: np.ndarray, estimate: np.ndarray | float, confidence: float, axis: int
) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval of `replicates` along `axis`, shifted by the replicates' bias: their mean
    less the `estimate` (Efron & Tibshirani, "An Introduction to the Bootstrap", 1993, §10: the
    bootstrap's estimate of bias, and the bias-corrected estimate). A squared quantity (a Shapley
    effect, a share, a group's mean value) is biased upward in the replicates when most cohorts are one
    or two rows: every reweighting makes the tiny cohorts' means differ more from the overall mean, so a
    plain percentile interval can lie wholly above its own estimate (an effect of 0.003514 once got
    [0.003546, 0.003945]). Shifted by the bias, the interval holds the estimate unless the replicates'
    mean is outside their own central interval: the data then say the estimate is off.

    Why not Efron's BC or BCa (§14.3)? BC moves the percentiles to Φ(2 z0 ± z), with z0 = Φ⁻¹(share
    of replicates below the estimate); its ends pass the estimate exactly when |z0| > z, which is
    exactly when the plain percentile interval misses it: BC cannot repair the case above (every
    replicate above the estimate gives z0 = -inf and an empty interval). BCa adds an acceleration that
    needs a jackknife over the subjects, a pass per subject."""
    low, high = percentile_interval(replicates, confidence, axis)
    bias = np.mean(replicates, axis=axis) - np.asarray(estimate)
    return low - bias, high - bias


@dataclass(frozen=True)
class Bootstrap:
    """A result's Bayesian-bootstrap replicates and the intervals they give."""

    replicates: int
    """B: how many replicate weightings."""
    confidence: float
    """The intervals' coverage, e.g. 0.95."""
    seed: int
    """Seeds the replicate draws: the same seed gives the same replicates on every engine."""
    shapley_low: ByRowAndFeature
    """Lower end of each target's and feature's interval of phi_j (a row is a target)."""
    shapley_high: ByRowAndFeature
    shapley_squared_low: ByRowAndFeature
    shapley_squared_high: ByRowAndFeature
    effects: np.ndarray
    """Each replicate's Shapley effects (the targets' weighted mean of phi_j^2), shape (B, d)."""
    target_weights: np.ndarray
    """Each target's weight in each replicate, shape (targets, B)."""
    shapley: np.ndarray | None = None
    """Each target's replicate values, shape (targets, B, d), float32; None when too large to keep."""
    shapley_squared: np.ndarray | None = None

    @classmethod
    def of(
        cls,
        replicates: int,
        seed: int,
        confidence: float,
        intervals: Sequence[np.ndarray],
        effects: np.ndarray,
        target_weights: np.ndarray,
        kept: tuple[np.ndarray, np.ndarray] | None,
    ) -> Bootstrap:
        """The replicates' record from the `intervals` (low and high of phi_j, then of its squared game)
        and the replicate values `kept` (of phi_j and of its squared game; None when too large)."""
        low, high, squared_low, squared_high = intervals
        shapley, shapley_squared = (None, None) if kept is None else kept
        return cls(
            replicates,
            confidence,
            seed,
            low,
            high,
            squared_low,
            squared_high,
            effects,
            target_weights,
            shapley,
            shapley_squared,
        )


@dataclass(frozen=True)
class Collected:
    """The values of every game of the distinct targets, gathered from the batches."""

    values: list[LocalValues]
    """Per outcome, the values of its game under the data's own weighting."""
    intervals: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    """Per outcome (with replicates), the low and high ends for phi and phi^2, each (targets, d)."""
    replicate_values: list[tuple[np.ndarray, np.ndarray] | None]
    """Per outcome (with replicates, when kept), each target's replicate phi and phi^2, (targets, B, d)."""
    squared_games: np.ndarray
    """The targets' weighted sums of v_CS(t, u)^2 for every game, shape (games, 2^d)."""

    def fanned_out(self, group: np.ndarray) -> Collected:
        """Per-target arrays for every target from those of the distinct targets."""
        return Collected(
            [values.map(lambda array: array[group]) for values in self.values],
            [tuple(array[group] for array in interval) for interval in self.intervals],
            [None if kept is None else (kept[0][group], kept[1][group]) for kept in self.replicate_values],
            self.squared_games,
        )


def kept_bytes(targets: int, d: int, measures: GameRows) -> int:
    """The memory every target's replicate values take (float32, phi and phi^2)."""
    return targets * measures.outcomes * measures.replicates * d * 2 * 4


def worth_keeping(targets: int, d: int, measures: GameRows, budget: int) -> bool:
    """Whether every target's replicate values fit `KEEP_REPLICATES_BYTES` and the run's `budget`."""
    return kept_bytes(targets, d, measures) <= min(KEEP_REPLICATES_BYTES, budget)


def _by_game(array: np.ndarray, shape: tuple[int, int, int]) -> np.ndarray:
    """A batch's array of game rows as (targets, outcomes, weightings, ...)."""
    return array.reshape(*shape, *array.shape[1:])


def _own_weighting(array: np.ndarray, outcome: int) -> np.ndarray:
    """An outcome's rows under the data's own weighting, copied: a view would keep every replicate alive."""
    return array[:, outcome, 0].copy()


def collect(
    batches: Iterable[CohortShapley], measures: GameRows, confidence: float, *, keep: bool, intervals: bool = True
) -> Collected:
    """Split each batch's game rows (target-major, `measures`' game order) into outcomes and
    weightings; reduce the replicates to `intervals` batch by batch, and `keep` them (float32) if asked."""
    outcomes, weightings = measures.outcomes, measures.weightings
    parts: list[list[LocalValues]] = [[] for _ in range(outcomes)]
    bounds: list[list[tuple[np.ndarray, ...]]] = [[] for _ in range(outcomes)]
    kept: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(outcomes)]
    total = None  # a running sum: a (games, 2^d) array kept per batch would add up to hundreds of MB
    for batch in batches:
        if total is None:
            total = np.array(batch.squared_games, dtype=np.float64)
        else:
            total += batch.squared_games
        rows = len(batch.per_row.cohort_size) // measures.games
        split = batch.per_row.map(functools.partial(_by_game, shape=(rows, outcomes, weightings)))
        for outcome in range(outcomes):
            parts[outcome].append(split.map(functools.partial(_own_weighting, outcome=outcome)))
            if measures.replicates and (intervals or keep):
                phi = split.shapley[:, outcome, 1:]
                phi2 = split.shapley_squared[:, outcome, 1:]
                if intervals:
                    bounds[outcome].append(
                        (*percentile_interval(phi, confidence, 1), *percentile_interval(phi2, confidence, 1))
                    )
                if keep:
                    kept[outcome].append((phi.astype(np.float32), phi2.astype(np.float32)))
    return Collected(
        [LocalValues.joined(outcome_parts) for outcome_parts in parts],
        [tuple(np.concatenate(ends) for ends in zip(*outcome_bounds)) for outcome_bounds in bounds if outcome_bounds],  # type: ignore[misc]
        [
            (np.concatenate([a for a, _ in outcome_kept]), np.concatenate([b for _, b in outcome_kept]))
            if outcome_kept
            else None
            for outcome_kept in kept
        ],
        np.zeros(0) if total is None else total,
    )


def replicate_effects(squared_games: np.ndarray, target_weights: np.ndarray) -> np.ndarray:
    """Each replicate's Shapley effects: phi_j of v_var^b(u) = sum_t pi_bt v_b(t, u)^2 / sum_t pi_bt,
    from the replicates' weighted squared games (B, 2^d) and the targets' weights (targets, B)."""
    return shapley_values(squared_games / target_weights.sum(axis=0)[:, None])


def replicate_variances(
    prediction: np.ndarray, mean: float, weights: np.ndarray, target_weights: np.ndarray
) -> np.ndarray:
    """Each replicate's variance of the explained column over the targets, (B,): the weighted mean of
    (y_t - ybar_b)^2 under the replicate's target weights (targets, B), where ybar_b is the replicate's
    mean of the targets shifted by how far the overall mean `mean` is from the targets' own (under
    their case `weights`): with every row a target the replicate's overall mean, as the estimate's
    variance uses the overall mean."""
    y = np.asarray(prediction, dtype=np.float64)
    offset = mean - np.average(y, weights=weights)
    totals = target_weights.sum(axis=0)
    means = (y @ target_weights) / totals + offset
    return np.einsum("tb,tb->b", target_weights, (y[:, None] - means[None, :]) ** 2) / totals


def group_means(values: np.ndarray, weights: np.ndarray, groups: np.ndarray, count: int) -> np.ndarray:
    """Weighted means of `values` (targets, ..., d) within groups 0..count-1, one weight per target and
    replicate: `weights` (targets, B) with `values` (targets, B, d) gives (count, B, d)."""
    totals = np.zeros((count, *weights.shape[1:]))
    np.add.at(totals, groups, weights)
    sums = np.zeros((count, *values.shape[1:]))
    np.add.at(sums, groups, values * weights[..., None])
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / totals[..., None]


def paired_differences(
    replicates: np.ndarray, estimates: np.ndarray, reference: int, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """Bias-corrected intervals of each group's difference from group `reference`, replicate by
    replicate: `replicates` (groups, B, d) and the `estimates` (groups, d) -> low and high, each (groups, d)."""
    differences = replicates - replicates[reference]
    return bias_corrected_interval(differences, estimates - estimates[reference], confidence, 1)
