"""Independent forms of the numpy core, for checking it: the paper's anchored form of Shapley values
(Theorem 1, from the dividends that tests/numeric/test_dividends.py checks by their definition), and cohort Shapley from dense histograms (every subset's cell
spelled out). They reuse the library's transforms only where the test is about something else."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from cohortsql.numeric.dividends import dividends
from cohortsql.numeric.shapley import (
    CohortShapley,
    _games_of_pair,
    _in_chunks,
    _sums_over_sets_containing,
    game_dimension,
    set_sizes,
)


def anchored_shapley_values(game: np.ndarray) -> np.ndarray:
    """Shapley values via the anchored decomposition (paper, Theorem 1): phi_j = sum_{u containing j} g_u / |u|.

    An independent route to the same numbers as `shapley_values`, used to cross-check it.
    """
    game = np.asarray(game, dtype=np.float64)
    d = game_dimension(game)
    sizes = set_sizes(d)
    shares = dividends(game) / np.maximum(sizes, 1)
    phi = _sums_over_sets_containing(shares.reshape(-1, 1 << d))
    return phi.reshape(*game.shape[:-1], d)


def cohort_shapley(
    counts: np.ndarray, sums: np.ndarray, means: float | np.ndarray, weights: np.ndarray, slots: int = 1
) -> CohortShapley:
    """Exact cohort Shapley values of v_CS and v_CS2 from game rows' dense mask histograms.

    `weights[r]` is what game row r counts for in `squared_games` (how many targets it stands for);
    rows come in groups of `slots` games per target, and game row r adds to slot r % slots."""
    means = np.broadcast_to(np.asarray(means, dtype=np.float64), (len(counts),))

    def games(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        return _games_of_pair(np.stack([counts[start:stop], sums[start:stop]]), means[start:stop])

    # One BLAS thread, as the library runs it: with several, the two halves of the last transform sum
    # in another order, and values that are equal in exact arithmetic tie differently.
    with threadpool_limits(limits=1, user_api="blas"):
        return _in_chunks(games, len(counts), counts.shape[-1], means, weights, slots)


def scatter_histograms(
    target: np.ndarray, mask: np.ndarray, count: np.ndarray, sum_y: np.ndarray, targets: int, d: int
) -> tuple[np.ndarray, np.ndarray]:
    """Dense (targets, 2^d) histograms of subject counts and sums of y from sparse (target, mask) rows."""
    return _scatter(target, mask, count, targets, d), _scatter(target, mask, sum_y, targets, d)


def _scatter(row: np.ndarray, mask: np.ndarray, value: np.ndarray, rows: int, d: int) -> np.ndarray:
    dense = np.zeros((rows, 1 << d))
    dense[row, mask] = value
    return dense
