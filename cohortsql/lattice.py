"""Every cohort of equivalence similarities at once, in pure numpy (DESIGN §2, grouping sets).

When every similarity is an equivalence relation (``exact``, ``bins``), the cohort C_{t,u} is the
cell of t in the partition of the subjects by their keys on u. SQL first collapses the subjects
into the cells of the finest partition (all d keys): each cell has a code per key, a count and a
sum of y - ybar. This module walks the lattice of subsets u depth first, builds every cell's group
number on u from its parent's (one multiply-add per step, so no n^2 join and no per-subset SQL),
and sums with `np.bincount`. A plain DuckDB ``GROUP BY CUBE`` of the same cells does the same work
several times slower and with far more memory (measured in ``benchmarks/bench_global.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

_DENSE_FACTOR = 4
"""Group numbers are renumbered densely (np.unique) once their range exceeds this many times the cells."""


class SubsetCohorts(NamedTuple):
    """What the lattice walk gives for every subset u of the d predictors."""

    variance_game: np.ndarray
    """v_var(u) = (1/n) sum_t (ybar_{t,u} - ybar)^2, shape (2^d,)."""
    sizes: np.ndarray
    """|C_{t,u}| for each requested target, shape (targets, 2^d)."""
    game: np.ndarray
    """v_CS(t, u) = ybar_{t,u} - ybar for each requested target, shape (targets, 2^d)."""
    feature_sizes: np.ndarray
    """For each cell, the size of its cohort on feature j alone, shape (cells, d)."""


def subset_groups(codes: np.ndarray) -> Iterator[tuple[int, np.ndarray, int]]:
    """For every subset u (bit j set: key j in u), each cell's group number in the partition by u.

    `codes` has one row per cell and one column per key, holding 0-based codes. Yields (u, group
    numbers, an upper bound of them); subsets come depth first, each built from its parent by one
    multiply-add, so only the d arrays on the current path are alive at once. Group numbers are
    renumbered densely when their range grows too large.
    """
    cells, d = codes.shape
    cardinalities = [int(c) for c in codes.max(axis=0, initial=-1) + 1]

    def walk(subset: int, groups: np.ndarray, bound: int, first_free: int) -> Iterator[tuple[int, np.ndarray, int]]:
        yield subset, groups, bound
        for key in range(first_free, d):
            child_groups = groups * cardinalities[key] + codes[:, key]
            child_bound = bound * cardinalities[key]
            if child_bound > _DENSE_FACTOR * max(cells, 1):
                unique, child_groups = np.unique(child_groups, return_inverse=True)
                child_bound = len(unique)
            yield from walk(subset | 1 << key, child_groups, child_bound, key + 1)

    yield from walk(0, np.zeros(cells, dtype=np.int64), 1, 0)


def subset_cohorts(
    codes: np.ndarray,
    counts: np.ndarray,
    centered_sums: np.ndarray,
    target_cells: np.ndarray,
) -> SubsetCohorts:
    """Cohort sizes and values for every subset u, from the finest cells.

    `counts[c]` is the number of subjects in cell c and `centered_sums[c]` the sum of their
    y - ybar; `target_cells[i]` is the cell of the i-th requested target. For a group g of the
    partition by u, with size n_g and centred sum s_g: ybar_g - ybar = s_g / n_g, and
    v_var(u) = (1/n) sum_g s_g^2 / n_g (no subtraction of ybar^2, so no cancellation).
    """
    d = codes.shape[1]
    subjects = counts.sum()
    variance_game = np.zeros(1 << d)
    sizes = np.zeros((len(target_cells), 1 << d))
    game = np.zeros((len(target_cells), 1 << d))
    feature_sizes = np.zeros((len(counts), d))
    for subset, groups, bound in subset_groups(codes):
        group_sizes = np.bincount(groups, weights=counts, minlength=bound)
        group_sums = np.bincount(groups, weights=centered_sums, minlength=bound)
        if subset and not subset & (subset - 1):  # a single feature
            feature_sizes[:, subset.bit_length() - 1] = group_sizes[groups]
        present = group_sizes > 0
        variance_game[subset] = (group_sums[present] ** 2 / group_sizes[present]).sum() / subjects
        target_groups = groups[target_cells]
        sizes[:, subset] = group_sizes[target_groups]
        game[:, subset] = group_sums[target_groups] / sizes[:, subset]
    variance_game[0] = 0.0
    game[:, 0] = 0.0
    return SubsetCohorts(variance_game, sizes, game, feature_sizes)
