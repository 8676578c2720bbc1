"""Monte Carlo baseline Shapley for many features: random permutations and baselines (antithetic pairs).

A permutation pi of the features and a baseline b give a path of hybrid points from x_b to x_t:
z_0 = x_b, and z_k takes the target's values on the first k features of pi. The increment
v_b(z_k) - v_b(z_{k-1}) is an unbiased estimate of phi_{pi(k)} for that baseline, and over a baseline
drawn uniformly from B, of the mean over B (the same for v_b^2, and for the realistic part, which
keeps an increment when both of its points are realistic). Each permutation comes with its reverse,
drawn with the same baseline; standard errors are those of the mean over pairs. Each path costs d
model evaluations instead of 2^d; targets go through together, round by round, and leave when their
standard errors reach `tolerance` or their budget is spent. Pure numpy, with the model as a callback.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from cohortsql.games.baseline.points import Points
from cohortsql.games.baseline.realism import SubjectBitsets
from cohortsql.games.baseline.values import distinct_rows
from cohortsql.numeric.permutation import MIN_PAIRS, PAIRS_PER_ROUND
from cohortsql.run.baseline_exact import SLOW_MODEL_REMEDY, Model
from cohortsql.run.pace import note_if_long
from cohortsql.run.progress import Reporter

CODE_ENTRIES = 1 << 23
"""Codes of path points held at once (d per point, int64: 64 MB): targets per round are sized by it,
so that d = 128 costs no more memory than d = 8."""


@dataclass
class PairMoments:
    """Running count, mean and sum of squared deviations of each target's pair averages (Chan's merge)."""

    count: np.ndarray
    mean: np.ndarray
    squares: np.ndarray

    @classmethod
    def empty(cls, shape: tuple[int, ...]) -> PairMoments:
        return cls(np.zeros(shape[0], dtype=np.int64), np.zeros(shape), np.zeros(shape))

    def add(self, rows: np.ndarray, pairs: np.ndarray) -> None:
        """Merge `pairs` (rows, new pairs, ...) into the moments of targets `rows`."""
        count = pairs.shape[1]
        batch_mean = pairs.mean(axis=1)
        batch_squares = ((pairs - batch_mean[:, None]) ** 2).sum(axis=1)
        before = self.count[rows].reshape(-1, *([1] * (pairs.ndim - 2)))
        total = before + count
        delta = batch_mean - self.mean[rows]
        self.mean[rows] += delta * count / total
        self.squares[rows] += batch_squares + delta**2 * before * count / total
        self.count[rows] += count

    def standard_errors(self) -> np.ndarray:
        """The standard error of each mean (NaN with fewer than two pairs)."""
        count = self.count.reshape(-1, *([1] * (self.mean.ndim - 1))).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(count >= 2, np.sqrt(self.squares / np.maximum(count - 1, 1) / count), np.nan)


@dataclass(frozen=True)
class PermutationValues:
    """Estimates (targets, quantities, d) of phi, phi2 and their realistic parts, with standard errors."""

    estimates: np.ndarray
    errors: np.ndarray
    permutations: np.ndarray


def estimate_baseline_shapley(
    points: Points,
    model: Model,
    bitsets: SubjectBitsets | None,
    rng: np.random.Generator,
    *,
    max_permutations: int,
    tolerance: float | None,
    report: Reporter | None = None,
) -> PermutationValues:
    """Permutation estimates for every target of `points` (quantities: phi, phi2, and with `bitsets`
    their realistic parts), at most `max_permutations` permutations per target."""
    targets, d = points.target_codes.shape
    quantities = 2 if bitsets is None else 4
    moments = PairMoments.empty((targets, quantities, d))
    max_pairs = max(1, max_permutations // 2)
    active = np.arange(targets)
    step = max(1, CODE_ENTRIES // (PAIRS_PER_ROUND * 2 * (d + 1) * max(d, 1)))
    if report is not None:
        report.start(targets)
    started, measured = time.perf_counter(), False
    while active.size:
        pairs = min(PAIRS_PER_ROUND, max_pairs - int(moments.count[active[0]]))
        for start in range(0, active.size, step):
            rows = active[start : start + step]
            moments.add(rows, _pairs(points, rows, pairs, model, bitsets, rng))
            if report is not None and not measured:
                measured = True
                chunks = math.ceil(targets / step) * math.ceil(max_pairs / PAIRS_PER_ROUND)
                work = f"for {targets:,} targets x {2 * max_pairs:,} permutations (measured on {len(rows):,} x {2 * pairs})"
                note_if_long(
                    report, (time.perf_counter() - started) * (chunks - 1), work, SLOW_MODEL_REMEDY, at_most=True
                )
        done = moments.count[active] >= max_pairs
        if tolerance is not None:
            errors = moments.standard_errors()[active].reshape(active.size, -1)
            done |= (moments.count[active] >= MIN_PAIRS) & (np.nanmax(errors, axis=1) <= tolerance)
        active = active[~done]
        if report is not None:
            report.update(targets - active.size)
    if report is not None:
        report.finish()
    return PermutationValues(moments.mean, moments.standard_errors(), 2 * moments.count)


def _pairs(
    points: Points, rows: np.ndarray, pairs: int, model: Model, bitsets: SubjectBitsets | None, rng: np.random.Generator
) -> np.ndarray:
    """(rows, pairs, quantities, d): each antithetic pair's average increment per feature."""
    d = points.target_codes.shape[1]
    orders = np.argsort(rng.random((len(rows), pairs, d)), axis=2)
    place = np.argsort(orders, axis=2)  # place[j]: where feature j comes in the permutation
    chosen = rng.integers(0, len(points.baseline_codes), size=(len(rows), pairs))
    steps = np.arange(d + 1)
    # taken[..., s, k, j]: along path s (0 forward, 1 reverse) the k-th point takes feature j from the target.
    forward = place[:, :, None, :] < steps[None, None, :, None]
    reverse = (d - 1 - place)[:, :, None, :] < steps[None, None, :, None]
    taken = np.stack([forward, reverse], axis=2)
    target = points.target_codes[rows][:, None, None, None, :]
    base = points.baseline_codes[chosen][:, :, None, None, :]
    codes = np.where(taken, target, base)
    unique, inverse = distinct_rows(codes.reshape(-1, d))
    shape = codes.shape[:4]
    values = model(points.model_frame(unique))[inverse].reshape(shape)
    games = values - values[..., :1]
    increments = [np.diff(games, axis=3), np.diff(games**2, axis=3)]
    if bitsets is not None:
        real = bitsets.realistic(unique)[inverse].reshape(shape)
        both = real[..., 1:] & real[..., :-1]
        increments += [np.where(both, change, 0.0) for change in increments]
    # Feature j's increment is at step place[j] forward and d - 1 - place[j] in reverse.
    where = np.stack([place, d - 1 - place], axis=2)
    per_feature = [np.take_along_axis(change, where, axis=3).mean(axis=2) for change in increments]
    return np.stack(per_feature, axis=2)
