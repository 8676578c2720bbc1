"""Exact cohort Shapley values in pure numpy (docs/design.md §2). No SQL, no I/O.

Conventions: a set u of predictors is the integer whose bit j is set when predictor j is in u, so
a game on d players is an array whose last axis has length 2^d (earlier axes batch over targets).

For one target t, SQL gives a histogram over similarity masks m_i = sum_j z_tj(x_ij) << j. The
cohort C_{t,u} = {i : m_i contains u}, so the superset sum ("zeta transform") of the histogram
gives |C_{t,u}| and sum_{i in C_{t,u}} y_i for every u at once.
"""

from __future__ import annotations

import concurrent.futures
import functools
import math
import os
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np

from cohortsql.numeric.local_values import LocalValues


def bit_halves(values: np.ndarray, bit: int) -> np.ndarray:
    """View of `values` (..., 2^d) as (rest, 2, 2^bit), where axis 1 is the value of `bit`."""
    return values.reshape(-1, 2, 1 << bit)


MATRIX_BITS = 4
"""The lowest bits of the superset-sum transform are one small matrix product: slicing passes over
bits 0-3 have inner loops of 1-8 values, which numpy runs several times slower."""


def superset_sums(values: np.ndarray) -> np.ndarray:
    """F(u) = sum over m containing u of f(m), along the last axis (length 2^d); returns a new array."""
    values = np.asarray(values, dtype=np.float64)
    d = game_dimension(values)
    low = min(d, MATRIX_BITS)
    result = (values.reshape(-1, 1 << low) @ _superset_matrix(low).T).reshape(values.shape)
    for bit in range(low, d):
        halves = bit_halves(result, bit)
        halves[:, 0, :] += halves[:, 1, :]
    return result


@functools.cache
def _superset_matrix(bits: int) -> np.ndarray:
    """Z[u, m] = 1 when m contains u: the superset-sum transform on `bits` bits as a matrix."""
    sets = np.arange(1 << bits)
    return ((sets[None, :] & sets[:, None]) == sets[:, None]).astype(np.float64)


@functools.cache
def _membership(bits: int) -> np.ndarray:
    """M[u, j] = 1 when j is in u, shape (2^bits, bits)."""
    return (np.arange(1 << bits)[:, None] >> np.arange(bits) & 1).astype(np.float64)


def set_sizes(d: int) -> np.ndarray:
    """|u| for every u in 0 .. 2^d - 1."""
    sizes = np.zeros(1 << d, dtype=np.int64)
    for bit in range(d):
        sizes[1 << bit : 2 << bit] = sizes[: 1 << bit] + 1
    return sizes


def shapley_weights(d: int) -> np.ndarray:
    """w(s) = s! (d - s - 1)! / d! = 1 / (d * C(d - 1, s)) for s = 0 .. d - 1."""
    return np.array([1.0 / (d * math.comb(d - 1, s)) for s in range(d)])


def shapley_values(game: np.ndarray) -> np.ndarray:
    """Exact Shapley values of a batch of games, shape (..., 2^d) -> (..., d).

    phi_j = sum_{u not containing j} w(|u|) (v(u + j) - v(u)), computed as
    phi_j = sum_{u containing j} v(u) (w(|u| - 1) + w(|u|)) - sum_u v(u) w(|u|),
    with w(-1) = w(d) = 0, in d vectorised passes over the batch; beyond 2^`BLOCK_BITS` sets, a block
    of sets at a time, so that the weights and products never take more than a block's memory.
    """
    game = np.asarray(game, dtype=np.float64)
    d = game_dimension(game)
    batch_shape = game.shape[:-1]
    if d == 0:
        return np.zeros((*batch_shape, 0))
    padded = np.concatenate(([0.0], shapley_weights(d), [0.0]))  # padded[s + 1] = w(s)
    flat = game.reshape(-1, 1 << d)
    low = min(d, BLOCK_BITS)
    low_sizes = set_sizes(low)
    phi = np.zeros((len(flat), d))
    for block in range(1 << (d - low)):  # u = block * 2^low + r: the high bits are the block's
        values = flat[:, block << low : (block + 1) << low]
        sizes = low_sizes + block.bit_count()
        weighted = values * (padded[sizes] + padded[sizes + 1])
        phi[:, :low] += _sums_over_sets_containing(weighted)
        high = (block >> np.arange(d - low)) & 1
        phi[:, low:] += weighted.sum(axis=1)[:, None] * high
        phi -= (values @ padded[sizes + 1])[:, None]
    return phi.reshape(*batch_shape, d)


BLOCK_BITS = 20
"""Sets of one block in `shapley_values`: 2^20 (8 MiB of float64 per game row and array)."""


def _sums_over_sets_containing(values: np.ndarray) -> np.ndarray:
    """(targets, 2^d) -> (targets, d): entry j is the sum of values[t, u] over the sets u containing j.

    u = high * 2^low + rest: sums over the high bits' sets, then one small matrix product per half.
    """
    targets, length = values.shape
    d = length.bit_length() - 1
    low = d // 2
    grid = values.reshape(targets, 1 << (d - low), 1 << low)
    return np.concatenate([grid.sum(axis=1) @ _membership(low), grid.sum(axis=2) @ _membership(d - low)], axis=1)


class CohortShapley(NamedTuple):
    """Exact cohort Shapley values of a batch of games: each game row's values, and its squared games."""

    per_row: LocalValues
    """Each game row's values (exact: no standard errors)."""
    squared_games: np.ndarray
    """For each of the `slots` games per target, the weighted sum over the batch's targets of
    v_CS(t, u)^2, shape (slots, 2^d): the targets' total of v_var."""


def _games_of_pair(pair: np.ndarray, means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cohort sizes |C_{t,u}| and the games v_CS(t,u) = ybar_{t,u} - ybar and v_CS(t,u)^2 from mask histograms.

    `pair[0][r, m]` and `pair[1][r, m]` are the weight (number) of subjects with similarity mask m in
    game row r and the (weighted) sum of their explained values; `means` is ybar per row. Returns the
    sizes and `pair` overwritten with v_CS and v_CS^2 (v_CS(t, {}) = 0 exactly, since C_{t,{}} is
    every subject), ready for one Shapley pass over both."""
    sizes, sums = superset_sums(pair)  # one transform of both: half the passes' overhead
    if np.any(sizes[..., -1] <= 0):
        raise ValueError("a target is missing from its own cohort: similarity masks are not reflexive")
    game, squared = pair
    np.divide(sums, sizes, out=game)
    game -= means[:, None]
    game[:, 0] = 0.0
    np.square(game, out=squared)
    return sizes, pair


CACHE_CHUNK_VALUES = 1 << 17
"""Values per array in one chunk of game rows (1 MiB of float64): every pass of the transforms then
runs in the CPU cache instead of streaming the whole batch from memory d times."""

_ARRAYS_PER_TARGET = 6
"""float64 arrays of length 2^d held per target while a batch is assembled."""


def targets_per_batch(d: int, budget_bytes: int) -> int:
    """How many targets' 2^d cohort values fit in `budget_bytes` of numpy arrays."""
    return max(1, budget_bytes // (_ARRAYS_PER_TARGET * 8 << d))


class GameBatch(NamedTuple):
    """A batch of cohort games as sparse mask-histogram entries (game row, mask, weight, sum of y),
    in any order: what the exact methods value (docs/design.md §2)."""

    row: np.ndarray
    """Each entry's game row, 0..rows-1."""
    mask: np.ndarray
    """Each entry's similarity mask (bit j: similar on feature j)."""
    subjects: np.ndarray
    """The weight (number) of subjects with that mask."""
    sum_y: np.ndarray
    """The (weighted) sum of their centred explained values."""
    rows: int
    """How many game rows the batch holds."""
    d: int
    """How many features."""
    means: np.ndarray
    """Each game row's centred overall mean (or one for every row)."""
    weights: np.ndarray
    """What each game row counts for in `CohortShapley.squared_games` (how many targets it stands for)."""
    slots: int = 1
    """Games per target: game rows come in groups of `slots`, and row r adds to slot r % slots."""


def cohort_shapley_of_histograms(batch: GameBatch) -> CohortShapley:
    """Exact cohort Shapley values of v_CS and v_CS2 from sparse histogram entries (game row, mask,
    weight, sum of y), scattered into dense arrays one cache-sized chunk of game rows at a time (never
    the whole batch at once). `weights[r]` is what game row r counts for in `squared_games` (how many
    targets it stands for); rows come in groups of `slots` games per target, and game row r adds to
    slot r % slots."""
    entries = _SortedEntries.of(batch.row, batch.mask, [batch.subjects, batch.sum_y])
    means = np.broadcast_to(np.asarray(batch.means, dtype=np.float64), (batch.rows,))

    def games(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        return _games_of_pair(entries.dense(start, stop, batch.d), means[start:stop])

    return _in_chunks(games, batch.rows, 1 << batch.d, means, batch.weights, batch.slots)


class _SortedEntries(NamedTuple):
    """Sparse entries (game row, mask, values...) sorted by game row."""

    row: np.ndarray
    mask: np.ndarray
    values: list[np.ndarray]

    @classmethod
    def of(cls, row: np.ndarray, mask: np.ndarray, values: list[np.ndarray]) -> _SortedEntries:
        order = np.argsort(row, kind="stable")
        return cls(row[order], mask[order], [value[order] for value in values])

    def dense(self, start: int, stop: int, d: int) -> np.ndarray:
        """Game rows start..stop-1 as dense arrays, shape (values, stop - start, 2^d)."""
        low, high = np.searchsorted(self.row, [start, stop])
        dense = np.zeros((len(self.values), stop - start, 1 << d))
        rows, masks = self.row[low:high] - start, self.mask[low:high]
        for index, value in enumerate(self.values):
            dense[index, rows, masks] = value[low:high]
        return dense


def dense_chunks(
    row: np.ndarray, mask: np.ndarray, values: list[np.ndarray], rows: int, d: int, slots: int = 1
) -> Iterator[tuple[int, int, np.ndarray]]:
    """Sparse entries (game row, mask, values...) as dense (values, chunk, 2^d) arrays, one cache-sized
    chunk of game rows at a time (a whole number of targets' `slots` games)."""
    entries = _SortedEntries.of(row, mask, values)
    chunk = _chunk_rows(d, slots)
    for start in range(0, rows, chunk):
        stop = min(rows, start + chunk)
        yield start, stop, entries.dense(start, stop, d)


def cohort_games(batch: GameBatch) -> Iterator[tuple[int, int, np.ndarray]]:
    """v_CS(r, u) = ybar_{r,u} - ybar of every game row r of `batch` and every u, one cache-sized chunk
    of rows at a time: (first row, row after the last, games of shape (rows, 2^d))."""
    means = np.broadcast_to(np.asarray(batch.means, dtype=np.float64), (batch.rows,))
    values = [batch.subjects, batch.sum_y]
    for start, stop, dense in dense_chunks(batch.row, batch.mask, values, batch.rows, batch.d, batch.slots):
        _, (game, _) = _games_of_pair(dense, means[start:stop])
        yield start, stop, game


def cohort_shapley_of_games(
    sizes: np.ndarray, game: np.ndarray, means: float | np.ndarray, weights: np.ndarray, slots: int = 1
) -> CohortShapley:
    """Exact cohort Shapley values of v_CS and v_CS2 from cohort sizes and v_CS(t, u) for every u."""
    means = np.broadcast_to(np.asarray(means, dtype=np.float64), (len(sizes),))

    def games(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        pair = np.empty((2, stop - start, game.shape[-1]))
        pair[0] = game[start:stop]
        np.square(pair[0], out=pair[1])
        return sizes[start:stop], pair

    return _in_chunks(games, len(sizes), sizes.shape[-1], means, weights, slots)


def _of_games(sizes: np.ndarray, pair: np.ndarray, means: np.ndarray) -> list[np.ndarray]:
    """The per-row fields of `CohortShapley` (its `LocalValues`) from the sizes and (v_CS, v_CS^2)."""
    game = pair[0]
    phi, phi_squared = shapley_values(pair)
    order = importance_order(phi)
    subsets = np.cumsum(1 << order, axis=1)  # u_k: the first k + 1 features of the order, as bits
    rows = np.arange(len(game))[:, None]
    return [
        phi,
        phi_squared,
        sizes[..., -1].copy(),  # not a view: it would keep the chunk's arrays alive
        game[..., -1] + means,
        order,
        sizes[rows, subsets],
        game[rows, subsets] + means[:, None],
        sizes[:, 1 << np.arange(game.shape[-1].bit_length() - 1)],
    ]


TIE_TOLERANCE = 1e-12
"""|phi_j| are ranked in steps of this size relative to the target's largest (never an absolute size,
so that the order is the same at any scale of the explained column), values in one step tied, so that
rounding noise (different summation orders, engines, kernels) does not reorder features that are
equally important."""


def tie_steps(values: np.ndarray, axis: int | None = None) -> np.ndarray:
    """`values` in whole steps of `TIE_TOLERANCE` times the largest |value| along `axis` (all of them for
    None): equal steps are ties. Relative, so that multiplying every value by any c > 0 keeps the steps;
    with every value 0 (or none finite) every step is 0."""
    size = np.abs(values)
    largest = np.max(np.where(np.isfinite(size), size, 0.0), axis=axis, keepdims=axis is not None, initial=0.0)
    scale = TIE_TOLERANCE * np.where(largest > 0, largest, 1.0)
    # rint, not floor: values equal in exact arithmetic (often round numbers) sit at the centre of a
    # step, not at an edge where the last bit of rounding noise decides which side they fall.
    return np.rint(values / scale)


def importance_order(phi: np.ndarray) -> np.ndarray:
    """Features of each target by decreasing |phi_j| (ties, up to `TIE_TOLERANCE`, in feature order), shape (..., d)."""
    return np.argsort(-tie_steps(np.abs(phi), axis=-1), axis=-1, kind="stable")


def _chunk_rows(d: int, slots: int) -> int:
    """Game rows per chunk of dense arrays: a whole number of targets' `slots` games, about
    `CACHE_CHUNK_VALUES` values (one target's games when those are more)."""
    return max(1, CACHE_CHUNK_VALUES // (slots << d)) * slots


_CORES = concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="cohortsql-numpy")
"""One thread per core for chunks of game rows: numpy releases the GIL in its array loops, so chunks
run side by side (with the stack-free games above, Boston's 506 targets x 2^13 went from 0.208 s to
0.103 s a call on 2 cores)."""


def _in_chunks(
    games: Callable[[int, int], tuple[np.ndarray, np.ndarray]],
    rows: int,
    cells: int,
    means: np.ndarray,
    weights: np.ndarray,
    slots: int,
) -> CohortShapley:
    """The values of game rows from `games(start, stop)` (cohort sizes and the stacked v_CS, v_CS^2 of
    those rows), over cache-sized chunks of rows on every core. The weighted squared games of row r
    add up in slot r % slots, chunk after chunk in order (the same sums whatever the threads do); chunks
    need not hold whole targets."""
    chunk = max(1, CACHE_CHUNK_VALUES // cells)

    def values(start: int) -> tuple[list[np.ndarray], np.ndarray]:
        stop = min(rows, start + chunk)
        sizes, pair = games(start, stop)
        return _of_games(sizes, pair, means[start:stop]), weights[start:stop, None] * pair[1]

    starts = range(0, rows, chunk)
    # A row of more than a block of cells is memory-bound and holds hundreds of MB: one at a time.
    serial = len(starts) < 2 or cells > 1 << BLOCK_BITS
    results = map(values, starts) if serial else _CORES.map(values, starts)
    squared_games = np.zeros((slots, cells))
    parts = []
    for start, (fields, squared) in zip(starts, results):
        _add_by_slot(squared_games, start, squared)
        parts.append(fields)
    return CohortShapley(LocalValues(*(np.concatenate(arrays) for arrays in zip(*parts))), squared_games)


def _add_by_slot(totals: np.ndarray, first_row: int, values: np.ndarray) -> None:
    """Add row r of `values` (game row first_row + r) to slot (first_row + r) % slots of `totals`."""
    slots = len(totals)
    if slots == 1:
        totals[0] += values.sum(axis=0)
        return
    slot, start = first_row % slots, 0
    while start < len(values):
        count = min(len(values) - start, slots - slot)
        totals[slot : slot + count] += values[start : start + count]
        start, slot = start + count, 0


def concatenate(parts: list[CohortShapley]) -> CohortShapley:
    """Join the results of consecutive batches of game rows (their squared games add up)."""
    return CohortShapley(
        LocalValues.joined([part.per_row for part in parts]), np.sum([part.squared_games for part in parts], axis=0)
    )


def game_dimension(values: np.ndarray) -> int:
    """d, for a game (or a batch of games) whose last axis has length 2^d."""
    length = values.shape[-1]
    d = length.bit_length() - 1
    if length < 1 or 1 << d != length:
        raise ValueError(f"a game needs a last axis of length 2^d, got {length}")
    return d
