"""Independent forms of the numpy core, for checking it: the paper's anchored form of Shapley values
(Theorem 1, from the dividends that tests/numeric/test_dividends.py checks by their definition), and
cohort Shapley from dense histograms with every cohort found by its definition (the masks that
contain u) and every value by the Shapley formula. Nothing private of the package is used."""

from __future__ import annotations

import math

import numpy as np

from cohortsql.numeric.dividends import dividends
from cohortsql.numeric.local_values import LocalValues
from cohortsql.numeric.shapley import CohortShapley, game_dimension, importance_order, set_sizes


def anchored_shapley_values(game: np.ndarray) -> np.ndarray:
    """Shapley values via the anchored decomposition (paper, Theorem 1): phi_j = sum_{u containing j} g_u / |u|.

    An independent route to the same numbers as `shapley_values`, used to cross-check it.
    """
    game = np.asarray(game, dtype=np.float64)
    d = game_dimension(game)
    shares = dividends(game) / np.maximum(set_sizes(d), 1)
    members = (np.arange(1 << d)[:, None] >> np.arange(d)) & 1  # (sets, d): 1 where j is in u
    return shares @ members


def _shapley(game: np.ndarray) -> np.ndarray:
    """phi_j = sum over u not containing j of |u|! (d - |u| - 1)! / d! (v(u + j) - v(u)), one game."""
    d = game_dimension(game)
    phi = np.zeros(d)
    for j in range(d):
        for u in range(1 << d):
            if not u >> j & 1:
                size = u.bit_count()
                phi[j] += (
                    math.factorial(size)
                    * math.factorial(d - size - 1)
                    / math.factorial(d)
                    * (game[u | 1 << j] - game[u])
                )
    return phi


def cohort_shapley(
    counts: np.ndarray, sums: np.ndarray, means: float | np.ndarray, weights: np.ndarray, slots: int = 1
) -> CohortShapley:
    """Exact cohort Shapley values of v_CS and v_CS2 from game rows' dense mask histograms, by the
    definitions: the cohort of u is every mask containing u, v(u) its mean less the row's mean.

    `weights[r]` is what game row r counts for in `squared_games` (how many targets it stands for);
    rows come in groups of `slots` games per target, and game row r adds to slot r % slots."""
    rows, cells = counts.shape
    d = cells.bit_length() - 1
    means = np.broadcast_to(np.asarray(means, dtype=np.float64), (rows,))
    sets = np.arange(cells)
    contains = (sets[None, :] & sets[:, None]) == sets[:, None]  # contains[u, m]: mask m holds u
    sizes, totals = counts @ contains.T, sums @ contains.T
    game = totals / sizes - means[:, None]
    game[:, 0] = 0.0
    phi = np.array([_shapley(row) for row in game])
    phi_squared = np.array([_shapley(row**2) for row in game])
    order = importance_order(phi)
    path = np.cumsum(1 << order, axis=1)
    index = np.arange(rows)[:, None]
    squared_games = np.zeros((slots, cells))
    for row in range(rows):
        squared_games[row % slots] += weights[row] * game[row] ** 2
    per_row = LocalValues(
        shapley=phi,
        shapley_squared=phi_squared,
        cohort_size=sizes[:, -1],
        cohort_mean=game[:, -1] + means,
        path_order=order,
        path_size=sizes[index, path],
        path_mean=game[index, path] + means[:, None],
        feature_cohort_size=sizes[:, 1 << np.arange(d)],
    )
    return CohortShapley(per_row, squared_games)


def flat(values: CohortShapley) -> dict[str, np.ndarray]:
    """Every array of exact values by name: each row's fields, then the squared games."""
    arrays = {name: array for name, array in values.per_row._asdict().items() if array is not None}
    return arrays | {"squared_games": values.squared_games}


def scatter_histograms(
    target: np.ndarray, mask: np.ndarray, count: np.ndarray, sum_y: np.ndarray, targets: int, d: int
) -> tuple[np.ndarray, np.ndarray]:
    """Dense (targets, 2^d) histograms of subject counts and sums of y from sparse (target, mask) rows."""
    return _scatter(target, mask, count, targets, d), _scatter(target, mask, sum_y, targets, d)


def _scatter(row: np.ndarray, mask: np.ndarray, value: np.ndarray, rows: int, d: int) -> np.ndarray:
    dense = np.zeros((rows, 1 << d))
    dense[row, mask] = value
    return dense
