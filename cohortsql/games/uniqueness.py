"""Uniqueness Shapley (Seiler, Mase & Owen) from the engine's mask histograms: v(u) = -log(|C_{t,u}| / n),
from the cohort sizes alone. Pure numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from cohortsql import queries
from cohortsql.numeric import dividends, players, shapley
from cohortsql.spec.measures import Measures


def uniqueness_values(
    histogram: dict[str, np.ndarray], rows: int, d: int, measures: Measures, totals: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Uniqueness Shapley values of a batch of targets from their mask histogram: phi (rows, d),
    -log(|C_{t,1:d}| / n) (rows,) and |C_{t,1:d}| (rows,), under the data's own weighting."""
    target, mask, weight = histogram["target"], histogram["mask0"], histogram[measures.weight_name(0)]
    parts = []
    with threadpool_limits(limits=1, user_api="blas"):
        for start, stop, (counts,) in shapley.dense_chunks(target, mask, [weight.astype(np.float64)], rows, d):
            sizes = shapley.superset_sums(counts)
            phi, value = shapley.uniqueness_values(sizes, np.full(stop - start, totals[0]))
            parts.append((phi, value, sizes[:, -1]))
    phi, value, size = (np.concatenate(arrays) for arrays in zip(*parts))
    return phi, value, size


def uniqueness_owen(
    histogram: dict[str, np.ndarray], rows: int, unions: Sequence[Sequence[int]], measures: Measures, total: float
) -> np.ndarray:
    """Each feature's Owen value of v_U(t, u) = -log(|C_{t,u}| / n) under the union structure `unions`
    (feature indices that partition the features), (rows, d), from the mask histogram of a batch of
    `rows` targets over the features: each union's members valued in its reduced game (every other union
    whole, each member alone: `cohortsql.numeric.players.union_game`), whose Owen values there equal
    those in the game of every feature."""
    d = sum(len(union) for union in unions)
    values = np.zeros((rows, d))
    with threadpool_limits(limits=1, user_api="blas"):
        for index in range(len(unions)):
            reduced = players.union_game(unions, index)
            part = players.histogram_of_players(histogram, reduced.players, queries.histogram.MASK_WORD_BITS)
            size = len(reduced.players)
            weight = part[measures.weight_name(0)].astype(np.float64)
            for start, stop, (counts,) in shapley.dense_chunks(part["target"], part["mask0"], [weight], rows, size):
                game = -np.log(shapley.superset_sums(counts) / total)
                game[..., 0] = 0.0
                owen = dividends.owen_values(game, reduced.unions, only=len(reduced.unions) - 1)
                values[start:stop, reduced.members] = owen[:, size - len(reduced.members) :]
    return values
