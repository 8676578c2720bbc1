"""Every cohort of equivalence similarities at once, in pure numpy (docs/design.md §2, the grouping-sets path).

When every similarity is an equivalence relation (``exact``, ``bins``), the cohort C_{t,u} is the
cell of t in the partition of the subjects by their keys on u. SQL first collapses the subjects
into the cells of the finest partition (all d keys): each cell has a code per key, its weights and
its centred sums of y (one per game, see `cohortsql.request.measures`). This module finds the groups of
every subset u of the keys from those cells, with no n^2 join and no per-subset SQL, in two ways:

* **Dense tables** for subsets whose keys have few combinations (at most `_DENSE_FACTOR` times the
  cells): the table of u holds the totals of every combination of u's codes. A few of them (the
  roots) are summed from the cells with `np.bincount`; every other one is its parent's table summed
  over one axis (the parent of u adds the highest-numbered key u lacks), which costs the size of
  a table instead of a pass over the cells. Keys are numbered by decreasing cardinality, so parents
  add the smallest keys and most tables are sums of others.
* **The refinement walk** for the rest: subsets are visited depth first, each cell's group number on
  u built from its parent's (one multiply-add per step). A cell alone in its group at u stays alone
  in every finer partition, so below the dense subsets it leaves the walk and its fixed contribution
  is added to all of u's descendants at once; group numbers are renumbered densely without sorting
  (a bitmap and a cumulative sum over their range).

1,000,000 rows x 10 `bins:10` (``benchmarks/bench_global.py``): the subsets of up to six keys are
dense tables, the 176 larger ones walk over the cells not yet alone.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

_DENSE_FACTOR = 4
"""A subset's groups are a dense table when its key combinations are at most this many times the
cells; in the walk, group numbers are renumbered densely once their range exceeds this many times
the cells still walking."""

_BITMAP_FACTOR = 64
"""Up to this many times the cells, renumbering uses a bitmap over the range (no sort); beyond, np.unique."""

_ALONE_CHECK_SHARE = 4
"""Cells alone in their group are looked for only once there are at least a quarter as many groups as cells."""


class SubsetCohorts(NamedTuple):
    """What the lattice gives for every subset u of the d predictors and every game."""

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
        present = np.zeros(bound, dtype=np.uint8)
        present[groups] = 1
        numbers = np.cumsum(present, dtype=np.int32)
        renumbered = numbers.take(groups).astype(np.int64)
        renumbered -= 1
        return renumbered, int(numbers[-1]) if bound else 0
    unique, inverse = np.unique(groups, return_inverse=True)
    return inverse.reshape(-1), len(unique)


def group_totals(groups: np.ndarray, values: np.ndarray, bound: int) -> np.ndarray:
    """Column sums of `values` (cells, m) within each group number in [0, bound), shape (bound, m).

    One weighted bincount per column: for two or three columns (several predictions explained at
    once) 2-2.4x faster than one bincount over a flattened (cells x m) index, which has to be built
    first, and as fast for many; each group adds its cells in the same order either way, so the sums
    are identical."""
    if values.shape[1] == 1:
        return np.bincount(groups, weights=values[:, 0], minlength=bound)[:, None]
    totals = np.empty((bound, values.shape[1]))
    for column in range(values.shape[1]):
        totals[:, column] = np.bincount(groups, weights=values[:, column], minlength=bound)
    return totals


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
    lattice = _Lattice(codes, weights, centered_sums, weighting, target_cells)
    cells = codes.shape[0]
    lattice.refine(0, weights, centered_sums, lattice.keys, np.zeros(cells, dtype=np.int64), 1, 0, lattice.all_targets)
    lattice.variance_game[:, 0] = 0.0
    lattice.game[:, :, 0] = 0.0
    return SubsetCohorts(lattice.variance_game, lattice.sizes, lattice.game, lattice.feature_sizes)


class _Lattice:
    """The walk's fixed inputs and the arrays it fills. Keys are renumbered by decreasing cardinality
    (position p is the original key `order[p]`); `label[u]` is subset u in the original numbering."""

    def __init__(
        self,
        codes: np.ndarray,
        weights: np.ndarray,
        centered_sums: np.ndarray,
        weighting: np.ndarray,
        target_cells: np.ndarray,
    ) -> None:
        cells, self.d = codes.shape
        cardinalities = codes.max(axis=0, initial=-1) + 1
        self.order = np.argsort(-cardinalities, kind="stable")
        self.keys = [np.ascontiguousarray(codes[:, key]) for key in self.order]
        self.cardinalities = [int(cardinalities[key]) for key in self.order]
        subsets = np.arange(1 << self.d)
        self.label = np.zeros(1 << self.d, dtype=np.int64)
        self.table_size = np.ones(1 << self.d)  # key combinations of each subset (floats: no overflow)
        for position, key in enumerate(self.order):
            member = (subsets >> position & 1).astype(bool)
            self.label[member] |= 1 << int(key)
            self.table_size[member] *= self.cardinalities[position]
        self.dense_limit = _DENSE_FACTOR * max(cells, 1)
        self.weighting = _columns(np.asarray(weighting, dtype=np.int64))
        self.totals = weights.sum(axis=0)[weighting]
        self.all_targets = np.asarray(target_cells, dtype=np.int64)
        self.target_codes = [key[self.all_targets] for key in self.keys]
        games, weightings = centered_sums.shape[1], weights.shape[1]
        self.variance_game = np.zeros((games, 1 << self.d))
        self.sizes = np.zeros((len(self.all_targets), weightings, 1 << self.d))
        self.game = np.zeros((len(self.all_targets), games, 1 << self.d))
        self.feature_sizes = np.zeros((cells, self.d))

    def is_dense(self, subset: int) -> bool:
        return bool(self.table_size[subset] <= self.dense_limit)

    def members(self, subset: int) -> list[int]:
        return [key for key in range(self.d) if subset >> key & 1]

    def highest_missing(self, subset: int) -> int:
        """The highest-numbered key not in `subset` (-1 when it holds every key)."""
        missing = ~subset & ((1 << self.d) - 1)
        return missing.bit_length() - 1

    def is_root(self, subset: int) -> bool:
        """A dense subset whose parent (it with its highest missing key) is not dense, or every key."""
        missing = self.highest_missing(subset)
        return missing < 0 or not self.is_dense(subset | 1 << missing)

    def needs_walk(self, subset: int, first_free: int) -> bool:
        """Whether the walk must visit `subset` and the subsets adding keys >= first_free: not when all of
        them are dense tables that are not roots (each is summed from its parent's table instead)."""
        largest = subset | ((1 << self.d) - (1 << first_free))
        return not self.is_dense(largest) or self.is_root(largest)

    def refine(
        self,
        subset: int,
        cell_weights: np.ndarray,
        cell_sums: np.ndarray,
        keys: list[np.ndarray],
        groups: np.ndarray,
        bound: int,
        first_free: int,
        targets: np.ndarray,
    ) -> None:
        """Visit `subset` and the subsets that add keys >= first_free. The cells still walking: their
        weights, centred sums, codes of each key and group numbers in [0, bound) on `subset`;
        `targets`: the requested targets' positions among them (-1: the target's cell has left).
        While subsets are dense, every cell walks and group numbers are the table's flat index (the
        lowest key least significant)."""
        if self.is_dense(subset):
            if self.is_root(subset):  # its table from the cells, then the tables of its subtree
                shape = [self.cardinalities[key] for key in reversed(self.members(subset))]
                table_weights = group_totals(groups, cell_weights, bound).reshape(*shape, cell_weights.shape[1])
                table_sums = group_totals(groups, cell_sums, bound).reshape(*shape, cell_sums.shape[1])
                self.coarsen(subset, table_weights, table_sums)
        else:
            self.record_groups(subset, cell_weights, cell_sums, groups, bound, targets)
        if first_free == self.d:
            return
        children_sparse = all(not self.is_dense(subset | 1 << key) for key in range(first_free, self.d))
        if subset and children_sparse and bound * _ALONE_CHECK_SHARE >= len(groups):
            alone = np.bincount(groups, minlength=bound).take(groups) == 1
            if alone.any():
                # Index arrays and `take`, not boolean masks: those are several times slower on scattered masks.
                targets = self.leave_alone(subset, first_free, cell_weights, cell_sums, alone, targets)
                kept = np.flatnonzero(~alone)
                cell_weights, cell_sums, groups = (
                    array.take(kept, axis=0) for array in (cell_weights, cell_sums, groups)
                )
                keys = [column if index < first_free else column.take(kept) for index, column in enumerate(keys)]
                if len(groups) == 0:
                    return
                groups, bound = dense(groups, bound)
        for key in range(first_free, self.d):
            child = subset | 1 << key
            if not self.needs_walk(child, key + 1):
                continue
            child_groups = keys[key] * bound + groups
            child_bound = bound * self.cardinalities[key]
            if not self.is_dense(child) and child_bound > _DENSE_FACTOR * len(groups):
                child_groups, child_bound = dense(child_groups, child_bound)
            self.refine(child, cell_weights, cell_sums, keys, child_groups, child_bound, key + 1, targets)

    def coarsen(self, subset: int, table_weights: np.ndarray, table_sums: np.ndarray) -> None:
        """Record the dense table of `subset` (axes: its keys from the highest, then the columns), then
        those of the subsets whose parent it is: it without one of its keys above its highest missing key."""
        self.record_table(subset, table_weights, table_sums)
        highest_missing = self.highest_missing(subset)
        for axis, key in enumerate(reversed(self.members(subset))):
            if key < highest_missing:
                break
            self.coarsen(subset & ~(1 << key), table_weights.sum(axis=axis), table_sums.sum(axis=axis))

    def record_table(self, subset: int, table_weights: np.ndarray, table_sums: np.ndarray) -> None:
        """v_var(u) and the targets' cohorts of a subset from its dense table."""
        label = self.label[subset]
        group_weights = table_weights.reshape(-1, table_weights.shape[-1])
        group_sums = table_sums.reshape(len(group_weights), table_sums.shape[-1])
        divisors = group_weights[:, self.weighting]
        self.variance_game[:, label] = _sum_of_squares(group_sums, divisors) / self.totals
        members = self.members(subset)
        if len(self.all_targets):
            index = np.zeros(len(self.all_targets), dtype=np.int64)
            stride = 1
            for key in members:
                index += self.target_codes[key] * stride
                stride *= self.cardinalities[key]
            self.sizes[:, :, label] = group_weights[index]
            self.game[:, :, label] = group_sums[index] / divisors[index]
        if len(members) == 1:
            self.feature_sizes[:, self.order[members[0]]] = group_weights[self.keys[members[0]], 0]

    def record_groups(
        self,
        subset: int,
        cell_weights: np.ndarray,
        cell_sums: np.ndarray,
        groups: np.ndarray,
        bound: int,
        targets: np.ndarray,
    ) -> None:
        """v_var(u) and the targets' cohorts of a subset from the group numbers of the cells still walking."""
        label = self.label[subset]
        group_weights = group_totals(groups, cell_weights, bound)
        group_sums = group_totals(groups, cell_sums, bound)
        divisors = group_weights[:, self.weighting]
        self.variance_game[:, label] += _sum_of_squares(group_sums, divisors) / self.totals
        here = targets >= 0
        target_groups = groups[targets[here]]
        self.sizes[here, :, label] = group_weights[target_groups]
        self.game[here, :, label] = group_sums[target_groups] / divisors[target_groups]
        if not subset & (subset - 1):  # a single key wider than the dense limit: every cell still walks
            self.feature_sizes[:, self.order[subset.bit_length() - 1]] = group_weights[groups, 0]

    def leave_alone(
        self,
        subset: int,
        first_free: int,
        cell_weights: np.ndarray,
        cell_sums: np.ndarray,
        alone: np.ndarray,
        targets: np.ndarray,
    ) -> np.ndarray:
        """Fill the subsets below `subset` for the cells alone in their group (alone in every finer
        partition too); returns the targets' positions among the cells that keep walking."""
        below = self.label[subset | (np.arange(1, 1 << (self.d - first_free)) << first_free)]
        leaving_all = np.flatnonzero(alone)
        alone_sums = cell_sums.take(leaving_all, axis=0)
        own = (alone_sums**2 / cell_weights.take(leaving_all, axis=0)[:, self.weighting]).sum(axis=0) / self.totals
        self.variance_game[:, below] += own[:, None]
        if not len(targets):
            return targets
        here = targets >= 0
        leaving = here.copy()
        leaving[here] = alone[targets[here]]
        leaving_cells = targets[leaving]
        self.sizes[np.ix_(leaving, np.arange(self.sizes.shape[1]), below)] = cell_weights[leaving_cells][:, :, None]
        means = cell_sums[leaving_cells] / cell_weights[leaving_cells][:, self.weighting]
        self.game[np.ix_(leaving, np.arange(self.game.shape[1]), below)] = means[:, :, None]
        position = np.cumsum(~alone) - 1
        return np.where(here & ~leaving, position[np.maximum(targets, 0)], -1)


def _columns(weighting: np.ndarray) -> slice | np.ndarray:
    """The weight column of each game as a slice where one serves (no copy when indexing the tables)."""
    if len(weighting) and (weighting == weighting[0]).all():
        return slice(int(weighting[0]), int(weighting[0]) + 1)  # one weighting for every game: broadcast
    if (weighting == np.arange(len(weighting))).all():
        return slice(0, len(weighting))
    return weighting


def _sum_of_squares(group_sums: np.ndarray, divisors: np.ndarray) -> np.ndarray:
    """sum_g s_g^2 / n_g per column over the groups with weight (empty groups add nothing)."""
    # An empty group has weight 0 and centred sum exactly 0 (weights are never negative): 0 / tiny = 0.
    means = np.maximum(divisors, np.finfo(np.float64).tiny)
    if means.shape == group_sums.shape:
        np.divide(group_sums, means, out=means)
    else:
        means = group_sums / means
    return np.einsum("gc,gc->c", group_sums, means)
