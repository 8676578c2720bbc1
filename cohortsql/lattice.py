"""Every cohort of equivalence similarities at once, in pure numpy (DESIGN §2, grouping sets).

When every similarity is an equivalence relation (``exact``, ``bins``), the cohort C_{t,u} is the
cell of t in the partition of the subjects by their keys on u. SQL first collapses the subjects
into the cells of the finest partition (all d keys): each cell has a code per key, its weights and
its centred sums of y (one per game, see `cohortsql.measures`). This module walks the lattice of
subsets u depth first, builds every cell's group number on u from its parent's (one multiply-add per
step, so no n^2 join and no per-subset SQL), and sums with `np.bincount`.

Three things keep the walk fast (1,000,000 rows x 10 `bins:10`, see ``benchmarks/bench_perf.py``):
each key's codes are a contiguous array; group numbers are renumbered densely without sorting (a
bitmap and a cumulative sum over their range); and a cell that is alone in its group at some subset
u stays alone in every finer partition, so it leaves the walk below u and its fixed contribution is
added to all of u's descendants at once.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

_DENSE_FACTOR = 4
"""Group numbers are renumbered densely once their range exceeds this many times the cells."""

_BITMAP_FACTOR = 64
"""Up to this many times the cells, renumbering uses a bitmap over the range (no sort); beyond, np.unique."""

_ALONE_CHECK_SHARE = 4
"""Cells alone in their group are looked for only once there are at least a quarter as many groups as cells."""


class SubsetCohorts(NamedTuple):
    """What the lattice walk gives for every subset u of the d predictors and every game."""

    variance_game: np.ndarray
    """v_var(u) = sum_t w_t (ybar_{t,u} - ybar)^2 / sum_t w_t over every subject t, shape (games, 2^d)."""
    sizes: np.ndarray
    """|C_{t,u}| (the cohort's weight) for each requested target and weighting, shape (targets, weightings, 2^d)."""
    game: np.ndarray
    """v_CS(t, u) = ybar_{t,u} - ybar for each requested target and game, shape (targets, games, 2^d)."""
    feature_sizes: np.ndarray
    """For each cell, the size of its cohort on feature j alone (first weighting), shape (cells, d)."""


def dense(groups: np.ndarray, bound: int) -> tuple[np.ndarray, int]:
    """Group numbers in [0, bound) renumbered to 0, 1, ... in the same order; returns them and their count."""
    if bound <= _BITMAP_FACTOR * max(len(groups), 1):
        present = np.zeros(bound, dtype=np.int32)
        present[groups] = 1
        numbers = np.cumsum(present, dtype=np.int32)
        return (numbers[groups] - 1).astype(np.int64), int(numbers[-1]) if bound else 0
    unique, inverse = np.unique(groups, return_inverse=True)
    return inverse.reshape(-1), len(unique)


def group_totals(groups: np.ndarray, values: np.ndarray, bound: int) -> np.ndarray:
    """Column sums of `values` (cells, m) within each group number in [0, bound), shape (bound, m)."""
    columns = values.shape[1]
    if columns == 0:
        return np.zeros((bound, 0))
    if columns == 1:
        return np.bincount(groups, weights=values[:, 0], minlength=bound)[:, None]
    flat = (groups[:, None] * columns + np.arange(columns)).reshape(-1)
    return np.bincount(flat, weights=values.reshape(-1), minlength=bound * columns).reshape(bound, columns)


def subset_cohorts(
    codes: np.ndarray,
    weights: np.ndarray,
    centered_sums: np.ndarray,
    weighting: np.ndarray,
    target_cells: np.ndarray,
) -> SubsetCohorts:
    """Cohort sizes and values for every subset u and every game, from the finest cells.

    `weights[c, b]` is the weight (count) of cell c's subjects under weighting b and
    `centered_sums[c, g]` the weighted sum of their y - ybar in game g, which uses weighting
    `weighting[g]`; `target_cells[i]` is the cell of the i-th requested target. For a group of the
    partition by u, with weight n_g and centred sum s_g: ybar_g - ybar = s_g / n_g, and
    v_var(u) = (1/n) sum_g s_g^2 / n_g (no subtraction of ybar^2, so no cancellation).
    """
    cells, d = codes.shape
    games = centered_sums.shape[1]
    totals = weights.sum(axis=0)[weighting]
    columns = [np.ascontiguousarray(codes[:, key]) for key in range(d)]
    cardinalities = [int(column.max(initial=-1)) + 1 for column in columns]
    variance_game = np.zeros((games, 1 << d))
    sizes = np.zeros((len(target_cells), weights.shape[1], 1 << d))
    game = np.zeros((len(target_cells), games, 1 << d))
    feature_sizes = np.zeros((cells, d))

    def walk(
        subset: int,
        cell_weights: np.ndarray,
        cell_sums: np.ndarray,
        keys: list[np.ndarray],
        groups: np.ndarray,
        bound: int,
        first_free: int,
        targets: np.ndarray,
    ) -> None:
        """The cells still in the walk: their weights, centred sums and codes of each key k >= first_free;
        `targets`: the requested targets' positions among them (-1: the target's cell has left)."""
        group_weights = group_totals(groups, cell_weights, bound)
        group_sums = group_totals(groups, cell_sums, bound)
        divisors = group_weights[:, weighting]
        squares = np.divide(group_sums * group_sums, divisors, out=np.zeros_like(group_sums), where=divisors > 0)
        variance_game[:, subset] += squares.sum(axis=0) / totals
        here = targets >= 0
        target_groups = groups[targets[here]]
        sizes[here, :, subset] = group_weights[target_groups]
        game[here, :, subset] = group_sums[target_groups] / divisors[target_groups]
        if subset and not subset & (subset - 1):  # a single feature: every cell is still in the walk
            feature_sizes[:, subset.bit_length() - 1] = group_weights[groups, 0]
        if first_free == d:
            return
        if subset and bound * _ALONE_CHECK_SHARE >= len(groups):
            alone = np.bincount(groups, minlength=bound)[groups] == 1
            if alone.any():
                # Alone in its group now, alone in every finer partition: fill the subtree for these cells once.
                below = subset | (np.arange(1, 1 << (d - first_free)) << first_free)
                alone_sums = cell_sums[alone]
                variance_game[:, below] += ((alone_sums**2 / cell_weights[alone][:, weighting]).sum(axis=0) / totals)[
                    :, None
                ]
                leaving = here.copy()
                leaving[here] = alone[targets[here]]
                staying = targets[leaving]
                sizes[np.ix_(leaving, np.arange(sizes.shape[1]), below)] = cell_weights[staying][:, :, None]
                means = cell_sums[staying] / cell_weights[staying][:, weighting]
                game[np.ix_(leaving, np.arange(games), below)] = means[:, :, None]
                kept = ~alone
                position = np.cumsum(kept) - 1
                targets = np.where(here & ~leaving, position[np.maximum(targets, 0)], -1)
                cell_weights, cell_sums, groups = cell_weights[kept], cell_sums[kept], groups[kept]
                keys = [column if index < first_free else column[kept] for index, column in enumerate(keys)]
                if len(groups) == 0:
                    return
                groups, bound = dense(groups, bound)
        for key in range(first_free, d):
            child_groups = groups * cardinalities[key] + keys[key]
            child_bound = bound * cardinalities[key]
            if child_bound > _DENSE_FACTOR * len(groups):
                child_groups, child_bound = dense(child_groups, child_bound)
            walk(subset | 1 << key, cell_weights, cell_sums, keys, child_groups, child_bound, key + 1, targets)

    start = np.zeros(cells, dtype=np.int64)
    walk(0, weights, centered_sums, columns, start, 1, 0, np.asarray(target_cells, dtype=np.int64))
    variance_game[:, 0] = 0.0
    game[:, :, 0] = 0.0
    return SubsetCohorts(variance_game, sizes, game, feature_sizes)
