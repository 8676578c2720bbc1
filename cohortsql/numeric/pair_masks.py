"""The mask histogram of subjects against targets in numpy (numba where installed), where an engine's
SQL aggregate is slower: Spark builds each task's partial histogram with it on its executors
(docs/design.md §2; `cohortsql.engines.spark_histogram`), DuckDB a run of many pairs in this process
(`cohortsql.engines.local_histogram`).

For target t and subject s the mask is m = sum_j z_tj(x_sj) << j, and the histogram holds, per
(t, m) that some subject reaches, the sums of the subjects' measures (their weights, and weights
times outcomes). Each kind's test is the numeric twin of its SQL predicate
(`cohortsql.request.similarity.Similarity.pair_test`), evaluated with the same arithmetic in the same
order, so that every comparison falls the same way as the engine's (a window's difference is taken
in integers for integer columns, as SQL subtracts BIGINTs, and only then compared as a double):

    EQUAL     x_s = x_t (NaN equal to NaN, as Spark compares doubles; text by codes)
    WINDOW    |x_s - x_t| <= delta
    RELATIVE  |x_s - x_t| <= delta |x_t|
    BINS      bin(x_s) = bin(x_t), bin(x) = min(floor((x - low) / width * k), k - 1); one bin when width <= 0

and a missing value (NULL) is similar to a missing value only. Pure numpy, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cohortsql.numeric import kernels
from cohortsql.numeric.pair_tests import EQUAL, RELATIVE, WINDOW, PairTest

CELL_BYTES = 128 * 2**20
"""A partial histogram's dense cells (targets x 2^d x sums) held at once: targets go through in passes that fit."""


@dataclass(frozen=True)
class Columns:
    """Features as the kernel reads them: (d, rows) arrays of doubles, of integers and of missing flags
    (a feature's values contiguous, for the loop over the subjects of one target and feature)."""

    floats: np.ndarray
    ints: np.ndarray
    missing: np.ndarray

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(floats, ints, missing), as the compiled kernels take them."""
        return self.floats, self.ints, self.missing

    @property
    def rows(self) -> int:
        """How many rows the columns hold (a compact array of no column is (d, 0))."""
        return max(array.shape[1] for array in self.arrays)

    def between(self, first: int, last: int) -> Columns:
        """Rows `first` to `last` (excluded) of columns that are not compact (views, not copies)."""
        return Columns(self.floats[:, first:last], self.ints[:, first:last], self.missing[:, first:last])

    @classmethod
    def of(
        cls,
        columns: Sequence[pa.ChunkedArray | pa.Array],
        tests: Sequence[PairTest],
        vocabulary: Sequence[pa.Array | None],
        *,
        compact: bool = False,
    ) -> Columns:
        """The feature `columns` (in feature order) under their `tests`; text as its index in the
        feature's `vocabulary` (the targets' distinct values; -1 where absent). `compact`: integers as
        bytes where every column's type allows it (`narrow_integers`), and an array no column
        fills (no double column, none with a missing value) is (d, 0): what the compiled kernels read
        of subjects kept in memory (100,000 x 1,024 binary features are 100 MB, not 1.7 GB)."""
        rows = len(columns[0]) if columns else 0
        gaps = [column.null_count > 0 for column in columns]  # most columns have none: no flags, no fills
        integer = [test.text or test.integer for test in tests]

        def width(used: bool) -> int:
            return rows if used or not compact else 0

        floats = np.zeros((len(columns), width(not all(integer))))
        ints = np.zeros(
            (len(columns), width(any(integer))), dtype=narrow_integers(columns, tests) if compact else np.int64
        )
        missing = np.zeros((len(columns), width(any(gaps))), dtype=np.bool_)
        for j, (column, test, words) in enumerate(zip(columns, tests, vocabulary)):
            column = _array(column)
            if gaps[j]:
                missing[j] = column.is_null().to_numpy(zero_copy_only=False)
            if test.text:
                assert words is not None, "text is coded against the targets' values"
                codes = pc.index_in(column, value_set=words)
                ints[j] = codes.fill_null(-1).to_numpy(zero_copy_only=False)
            elif test.integer:
                if pa.types.is_uint64(column.type):  # only `exact` streams it unconverted: equal bits, equal values
                    column = (column.fill_null(0) if gaps[j] else column).view(pa.int64())
                values: Any = column.cast(pa.from_numpy_dtype(ints.dtype))
                ints[j] = (values.fill_null(0) if gaps[j] else values).to_numpy(zero_copy_only=False)
            else:
                doubles = column.cast(pa.float64())
                floats[j] = (doubles.fill_null(0.0) if gaps[j] else doubles).to_numpy(zero_copy_only=False)
        return cls(floats, ints, missing)


def narrow_integers(columns: Sequence[pa.ChunkedArray | pa.Array], tests: Sequence[PairTest]) -> np.dtype:
    """Bytes when every integer column's type holds only byte values (int8, booleans: the same for every
    batch of a query) and no column is text (its codes need more), else 64-bit integers. Two types
    only: each is a variant of the compiled kernels, seconds to compile."""
    small = all(
        not test.text and (pa.types.is_int8(column.type) or pa.types.is_boolean(column.type))
        for column, test in zip(columns, tests)
        if test.integer or test.text
    )
    return np.dtype(np.int8 if small else np.int64)


def fits(d: int, sums: int) -> bool:
    """Whether one target's dense cells (2^d of `sums` and a reached flag) fit in `CELL_BYTES`."""
    return targets_per_pass(d, sums) >= 1


def vocabulary(column: pa.ChunkedArray | pa.Array, test: PairTest) -> pa.Array | None:
    """The distinct values a text feature's targets hold (what subjects' values are coded against)."""
    if not test.text:
        return None
    return pc.unique(_array(column)).drop_null()


def _array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


class PartialHistogram:
    """The mask histogram of `targets` (every one at once: at most `targets_per_pass`) against the
    subjects `add`ed so far, batch by batch: an executor's share of the subjects in one pass,
    whatever its size, and partial histograms that a small aggregate merges."""

    def __init__(self, targets: Columns, tests: Sequence[PairTest], sums: int) -> None:
        count, cells = targets.floats.shape[1], 1 << len(tests)
        if count > targets_per_pass(len(tests), sums):
            raise ValueError(f"{count} targets' dense histograms exceed {CELL_BYTES} bytes; pass fewer at once")
        self.by_target = tuple(np.ascontiguousarray(array.T) for array in targets.arrays)
        self.targets, self.parameters = targets, _parameters(tests)
        self.totals = np.zeros((count, cells, sums))
        self.reached = np.zeros((count, cells), dtype=np.bool_)

    def add(self, subjects: Columns, measures: np.ndarray) -> None:
        """Add subjects (`measures`: one row of sums each) to every target's cells."""
        if kernels.available():
            kernels.compiled_function("pair_histogram")(
                subjects.arrays,
                measures,
                self.by_target,
                self.parameters,
                self.totals,
                self.reached,
            )
        else:
            _numpy_histogram(subjects, measures, self.targets, self.parameters, self.totals, self.reached)

    def cells(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(target, mask, sums) for every (target, mask) some subject reached, targets numbered by
        their position in `targets`."""
        target, mask = np.nonzero(self.reached)
        return target, mask, self.totals[target, mask]


def histogram_of_batches(
    targets: Columns,
    tests: Sequence[PairTest],
    vocabulary: Sequence[pa.Array | None],
    columns: Sequence[str],
    sums: Sequence[str],
    batches: Iterable[pa.RecordBatch],
    *,
    threads: int = 1,
) -> PartialHistogram:
    """The mask histogram of the coded `targets` against every subject of `batches` (the feature
    `columns`, coded by `tests` against the targets' `vocabulary`, and one column per sum, each row's
    measure; a missing measure adds 0), one batch at a time. With `threads`, batch i is added to
    partial histogram i mod `threads` on a thread of its own (the compiled kernel releases the GIL)
    while the next batches are read and coded, and the partial histograms are summed in their order at
    the end: the same sums whatever the threads' timing (each holds its own cells: `threads` times the
    memory). The first batch is added on the calling thread, so that numba is imported and the kernel
    compiled (and announced) there, before any pool thread runs it (numba imported by two threads at
    once hung a run: `cohortsql.numeric.compilation.watch`)."""
    histograms = [PartialHistogram(targets, tests, len(sums)) for _ in range(threads)]
    with ThreadPoolExecutor(threads, thread_name_prefix="cohortsql-histogram") as pool:
        adding: list[Future[None] | None] = [None] * threads
        for index, batch in enumerate(batches):
            rows = Columns.of([batch.column(name) for name in columns], tests, vocabulary)
            measures = np.column_stack([batch.column(name).fill_null(0.0).to_numpy() for name in sums])
            slot = index % threads
            if index == 0:  # here: numba's import and the kernel's compilation for these types
                histograms[slot].add(rows, measures)
                continue
            if (previous := adding[slot]) is not None:
                previous.result()
            adding[slot] = pool.submit(histograms[slot].add, rows, measures)
        for added in adding:
            if added is not None:
                added.result()
    whole = histograms[0]
    for part in histograms[1:]:
        whole.totals += part.totals
        whole.reached |= part.reached
    return whole


def merged_cells(
    target: np.ndarray, mask: np.ndarray, totals: Sequence[np.ndarray], d: int
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Partial histograms' cells (a target, a mask of `d` bits, their `totals`: one array per sum) summed
    per (target, mask): each pair's cell once, ordered by target, then mask."""
    key = target.astype(np.int64) << d | mask.astype(np.int64)
    cells, position = np.unique(key, return_inverse=True)
    summed = [np.bincount(position, weights=total, minlength=len(cells)) for total in totals]
    return cells >> d, cells & ((1 << d) - 1), summed


def targets_per_pass(d: int, sums: int) -> int:
    """The targets whose dense cells (2^d of `sums` and a reached flag each) fit in `CELL_BYTES`."""
    return CELL_BYTES // cell_bytes(d, sums)


def cell_bytes(d: int, sums: int) -> int:
    """The bytes of one target's dense cells: 2^d of `sums` and a reached flag, 8 bytes each."""
    return (1 << d) * (sums + 1) * 8


def _parameters(tests: Sequence[PairTest]) -> tuple[np.ndarray, ...]:
    """The tests as the compiled kernel takes them: one array per field."""
    return (
        np.array([test.code for test in tests], dtype=np.int64),
        np.array([test.integer or test.text for test in tests], dtype=np.bool_),
        np.array([test.delta for test in tests], dtype=np.float64),
        np.array([float(test.low) for test in tests], dtype=np.float64),
        np.array([int(test.low) if test.integer else 0 for test in tests], dtype=np.int64),
        np.array([test.width for test in tests], dtype=np.float64),
        np.array([test.bins for test in tests], dtype=np.int64),
    )


def similar(subjects: Columns, targets: Columns, t: int, j: int, parameters: tuple[np.ndarray, ...]) -> np.ndarray:
    """z_tj(x_sj) for every subject s: feature j's test against target t, in numpy."""
    code, integer, delta, low_float, low_int, width, bins = (array[j] for array in parameters)
    s_missing = subjects.missing[j] if subjects.missing.shape[1] else np.zeros(subjects.rows, dtype=np.bool_)
    t_missing = targets.missing[j, t]
    if integer:
        s_values, t_value = subjects.ints[j], targets.ints[j, t]
        difference = np.abs(s_values - t_value).astype(np.float64)
    else:
        s_values, t_value = subjects.floats[j], targets.floats[j, t]
        difference = np.abs(s_values - t_value)
    with np.errstate(invalid="ignore"):
        if code == EQUAL:
            same = s_values == t_value
            if not integer and np.isnan(t_value):
                same = np.isnan(s_values)
        elif code == WINDOW:
            same = difference <= delta
        elif code == RELATIVE:
            same = difference <= delta * abs(float(t_value))
        elif not width > 0:
            same = np.ones(len(s_values), dtype=np.bool_)
        else:
            same = _bin(s_values, integer, low_float, low_int, width, bins) == _bin(
                np.array([t_value]), integer, low_float, low_int, width, bins
            )
    return np.where(s_missing | t_missing, s_missing & t_missing, same)


def _bin(values: np.ndarray, integer: bool, low_float: float, low_int: int, width: float, bins: int) -> np.ndarray:
    offset = (values - low_int).astype(np.float64) if integer else values - low_float
    return np.minimum(np.floor(offset / width * bins), bins - 1)


def _numpy_histogram(
    subjects: Columns,
    measures: np.ndarray,
    targets: Columns,
    parameters: tuple[np.ndarray, ...],
    totals: np.ndarray,
    reached: np.ndarray,
) -> None:
    """`PartialHistogram.add` without numba: a vectorised mask per target, then a bincount per sum."""
    d = len(parameters[0])
    cells = 1 << d
    for t in range(targets.floats.shape[1]):
        mask = np.zeros(len(measures), dtype=np.int64)
        for j in range(d):
            mask |= similar(subjects, targets, t, j, parameters).astype(np.int64) << j
        reached[t] |= np.bincount(mask, minlength=cells) > 0
        for column in range(measures.shape[1]):
            totals[t, :, column] += np.bincount(mask, weights=measures[:, column], minlength=cells)
