"""The numba-compiled functions behind `cohortsql.numeric.kernels` (imported only when they are used).

Module-level functions so that numba can cache their machine code on disk between processes.
"""

# mypy: ignore-errors

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def one_target(n, s, masks, counts, sums, low, high, d, mean, weight, tie_tolerance, out, squares, row):
    """Scatter, superset-sum and both Shapley sums of one game row; results into row `row` of `out`.

    phi_j = sum_{u containing j} v(u) (w(|u| - 1) + w(|u|)) - sum_u v(u) w(|u|) (see
    `cohortsql.numeric.shapley.shapley_values`): the first sum is split as u = high * 2^half + low, so it
    costs two passes over the 2^d values instead of d."""
    phi, phi2, size, cohort, order, path_size, path_mean, single, with_j, without_j = out
    cells = 1 << d
    n[:] = 0.0
    s[:] = 0.0
    for index in range(low, high):
        n[masks[index]] += counts[index]
        s[masks[index]] += sums[index]
    for bit in range(d):
        step = 1 << bit
        for base in range(0, cells, 2 * step):
            for i in range(base, base + step):
                n[i] += n[i + step]
                s[i] += s[i + step]
    total = 0.0
    total2 = 0.0
    half = d // 2
    lows = 1 << half
    by_low = np.zeros((2, lows))
    by_high = np.zeros((2, cells >> half))
    for u in range(1, cells):  # v(t, {}) = 0 adds nothing
        value = s[u] / n[u] - mean
        square = value * value
        squares[u] += weight * square
        members = 0
        rest = u
        while rest:
            rest &= rest - 1
            members += 1
        total += value * without_j[members]
        total2 += square * without_j[members]
        both = with_j[members] + without_j[members]
        by_low[0, u & (lows - 1)] += value * both
        by_low[1, u & (lows - 1)] += square * both
        by_high[0, u >> half] += value * both
        by_high[1, u >> half] += square * both
    for part in range(lows):
        for j in range(half):
            if part >> j & 1:
                phi[row, j] += by_low[0, part]
                phi2[row, j] += by_low[1, part]
    for part in range(cells >> half):
        for j in range(half, d):
            if part >> (j - half) & 1:
                phi[row, j] += by_high[0, part]
                phi2[row, j] += by_high[1, part]
    for j in range(d):
        phi[row, j] -= total
        phi2[row, j] -= total2
        single[row, j] = n[1 << j]
    size[row] = n[cells - 1]
    cohort[row] = s[cells - 1] / n[cells - 1]
    size_of = np.abs(phi[row])
    scale = tie_tolerance * max(1.0, size_of.max())  # as `cohortsql.numeric.shapley.importance_order`
    order[row] = np.argsort(-np.rint(size_of / scale), kind="mergesort")
    u = 0
    for k in range(d):
        u |= 1 << order[row, k]
        path_size[row, k] = n[u]
        path_mean[row, k] = s[u] / n[u]


@njit(cache=True, nogil=True, parallel=True)
def fused(starts, masks, counts, sums, d, means, with_j, without_j, groups, weights, slots, tie_tolerance):
    targets = starts.shape[0] - 1
    cells = 1 << d
    phi = np.zeros((targets, d))
    phi2 = np.zeros((targets, d))
    size = np.zeros(targets)
    cohort = np.zeros(targets)
    order = np.zeros((targets, d), dtype=np.int64)
    path_size = np.zeros((targets, d))
    path_mean = np.zeros((targets, d))
    single = np.zeros((targets, d))
    squared_games = np.zeros((groups, slots, cells))
    per_group = (targets + groups - 1) // groups
    for group in prange(groups):
        n = np.empty(cells)
        s = np.empty(cells)
        out = (phi, phi2, size, cohort, order, path_size, path_mean, single, with_j, without_j)
        for t in range(group * per_group, min(targets, (group + 1) * per_group)):
            squares = squared_games[group, t % slots]
            one_target(
                n,
                s,
                masks,
                counts,
                sums,
                starts[t],
                starts[t + 1],
                d,
                means[t],
                weights[t],
                tie_tolerance,
                out,
                squares,
                t,
            )
    return phi, phi2, size, cohort, order, path_size, path_mean, single, squared_games.sum(axis=0)
