"""The cohort game from the engine's mask histograms: each target's 2^d cohort sizes and sums by the
superset-sum transform, then exact Shapley values of v(u) = ybar_{t,u} - ybar and v(u)^2 for every
outcome, weighting and bootstrap replicate (docs/design.md §2); or Monte Carlo estimates over random
permutations. Pure numpy (or the compiled kernel where it pays), no SQL.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
from threadpoolctl import threadpool_limits

from cohortsql import queries
from cohortsql.games.base import Cohorts, Game
from cohortsql.numeric import kernels, permutation, shapley
from cohortsql.request.measures import Measures


class CohortGame(Game):
    """v_CS(t, u) = ybar_{t,u} - ybar of explained column number `outcome` (the paper's cohort game);
    `squared`: its square v_CS2, whose mean over the targets is the variance game v_var."""

    name = "cohort"

    def __init__(self, outcome: int = 0, *, squared: bool = False) -> None:
        self.outcome = outcome
        self.squared = squared

    def values(self, cohorts: Cohorts) -> np.ndarray:
        game = cohorts.value(self.outcome, 1)[0]
        return np.square(game) if self.squared else game.copy()


GAME_ENTRY_BYTES = 128 * 2**20
"""Memory for the histogram entries of every game formed at once (four arrays of 2^22 entries),
unless the batch's budget is smaller."""


def game_batch(
    histogram: dict[str, np.ndarray], rows: int, d: int, measures: Measures, means: np.ndarray, weights: np.ndarray
) -> shapley.GameBatch:
    """The histogram of `rows` targets as entries of every game: game row = target * games + game,
    each game with its outcome's sum and its weighting's weight; `means[g]` is game g's centred
    overall mean and `weights[t, g]` what target t counts for in game g's squared games."""
    games = measures.games
    target, mask = histogram["target"], histogram["mask0"]
    counts = np.stack([histogram[name] for name in measures.weight_names]).astype(np.float64)
    if games == 1:
        entries = (target, mask, counts[0], histogram[measures.sum_name(0, 0)])
    else:
        sums = np.stack([histogram[name] for name in measures.sum_names])
        row = (target[None, :] * games + np.arange(games)[:, None]).reshape(-1)
        entries = (row, np.tile(mask, games), counts[measures.weighting_of_game].reshape(-1), sums.reshape(-1))
    row_means = np.tile(np.asarray(means, dtype=np.float64), rows)
    row_weights = np.asarray(weights, dtype=np.float64).reshape(-1)
    return shapley.GameBatch(*entries, rows * games, d, row_means, row_weights, games)


def exact_values(
    histogram: dict[str, np.ndarray],
    rows: int,
    d: int,
    measures: Measures,
    means: np.ndarray,
    weights: np.ndarray,
    run_targets: int | None = None,
    memory_bytes: int = GAME_ENTRY_BYTES,
) -> shapley.CohortShapley:
    """Exact values of every game of a batch of `rows` targets from their mask histogram (``target``
    numbers them 0..rows-1): game row r is target r // games, game r % games (`cohortsql.request.measures`).

    `means` is each game's centred overall mean and `weights[t, g]` what target t counts for in game
    g's squared games. The compiled kernel runs where it pays over the whole run (`run_targets`
    targets, default this batch's; `cohortsql.numeric.kernels`), else numpy with one BLAS thread (the
    small matrix products of the transforms ran 3.5-5x slower with BLAS threads fighting for busy cores).

    Several games per target (weights, outcomes, replicates) multiply the histogram's entries by
    the number of games, so those are formed in `memory_bytes` (32 bytes an entry), a run of targets
    after another."""
    games = measures.games
    compiled = kernels.worth_compiling((run_targets or rows) * games, d)

    def values(part: dict[str, np.ndarray], count: int, part_weights: np.ndarray) -> shapley.CohortShapley:
        return _valued(game_batch(part, count, d, measures, means, part_weights), compiled)

    if games == 1:
        return values(histogram, rows, weights)
    order = np.argsort(histogram["target"], kind="stable")
    ordered = {name: column[order] for name, column in histogram.items()}
    bounds = np.searchsorted(ordered["target"], np.arange(rows + 1))
    step = max(1, memory_bytes // 32 // (games * max(1, int(np.diff(bounds).max(initial=1)))))
    parts = []
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        part = {name: column[bounds[start] : bounds[stop]] for name, column in ordered.items()}
        part["target"] = part["target"] - start
        parts.append(values(part, stop - start, weights[start:stop]))
    return shapley.concatenate(parts)


def _valued(batch: shapley.GameBatch, compiled: bool) -> shapley.CohortShapley:
    """A batch's exact values: by the compiled kernel, or by numpy with one BLAS thread."""
    if compiled:
        return kernels.exact_values(batch)
    with threadpool_limits(limits=1, user_api="blas"):
        return shapley.cohort_shapley_of_histograms(batch)


def histogram_values(
    row: np.ndarray, mask: np.ndarray, weight: np.ndarray, sums: np.ndarray, rows: int, d: int
) -> shapley.CohortShapley:
    """Exact values of `rows` targets from mask-histogram entries (target row 0..rows-1, mask, weight
    W and sum S of the explained value), as a SQL function receives a histogram it did not compute:
    each target's overall mean is its own histogram's S(all) / W(all), so the sums may be of y or of
    y - mean alike."""
    overall = np.bincount(row, sums, rows) / np.bincount(row, weight, rows)
    batch = shapley.GameBatch(row, mask, weight, sums, rows, d, overall, np.ones(rows))
    return _valued(batch, kernels.worth_compiling(rows, d))


def permutation_values(
    histogram: dict[str, np.ndarray],
    rows: int,
    d: int,
    centred_mean: float,
    generators: list[np.random.Generator],
    *,
    max_permutations: int,
    tolerance: float | None,
    sum_column: str = "s0_0",
    interactions: bool = False,
) -> list[permutation.PermutationEstimate]:
    """Monte Carlo estimates of a batch of `rows` targets from their mask histogram, target i with
    generator i; the outcome is the histogram's `sum_column` (weights are ``w0``); with `interactions`,
    each with its interaction values."""
    return [
        permutation.estimate(
            bits,
            sums[0],
            sums[1],
            centred_mean,
            generators[target],
            max_permutations=max_permutations,
            tolerance=tolerance,
            interactions=interactions,
        )
        for target, bits, sums in targets_masks(histogram, rows, d, ["w0", sum_column])
    ]


def targets_masks(
    histogram: dict[str, np.ndarray], rows: int, d: int, columns: list[str]
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Each of a batch's `rows` targets' distinct masks: (target, bits (d, masks), the histogram's
    `columns` (columns, masks) as floats, the first of them the weight)."""
    order = np.argsort(histogram["target"], kind="stable")
    words = [histogram[f"mask{index}"][order] for index in range(math.ceil(d / queries.histogram.MASK_WORD_BITS))]
    bits = permutation.unpack_masks(words, d, queries.histogram.MASK_WORD_BITS)
    sums = np.stack([np.asarray(histogram[column], dtype=np.float64)[order] for column in columns])
    bounds = np.searchsorted(histogram["target"][order], np.arange(rows + 1))
    for target, (low, high) in enumerate(zip(bounds[:-1], bounds[1:])):
        yield target, bits[:, low:high], sums[:, low:high]


def target_generators(count: int, seed: int | None) -> list[np.random.Generator]:
    """One random generator per distinct target, children of `seed`: estimates do not depend on batching."""
    return [np.random.default_rng(child) for child in np.random.SeedSequence(seed).spawn(count)]
