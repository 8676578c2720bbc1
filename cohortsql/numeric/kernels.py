"""A compiled, fused kernel for the exact numpy stage (numba; optional: ``pip install 'cohortsql[fast]'``).

For each target it scatters the mask histogram into 2^d cells, superset-sums them in place, forms
v_CS and v_CS^2 and applies both Shapley sums while the arrays are in the CPU cache, in parallel over
targets — the same arithmetic as `cohortsql.numeric.shapley` (which stays the reference and is tested
against it), without d passes over a whole batch in memory.

Compiling takes seconds and importing numba about 0.3 s, so the kernel is used only for work that
repays that (`worth_compiling`), or once it is compiled in this process; the compiled code is cached
on disk (numba's cache: beside this file, or in the user's cache directory when that is read-only).
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from cohortsql.numeric import compilation
from cohortsql.numeric.local_values import LocalValues
from cohortsql.numeric.shapley import TIE_TOLERANCE, CohortShapley, GameBatch, shapley_weights

COMPILE_WORTH_CELLS = 200_000_000
"""Targets x 2^d cells from which compiling (a few seconds, once) beats numpy (about 7e7 cells/s here)."""

KERNEL_MEMORY_BYTES = 512 * 2**20
"""What the kernel's groups of targets may hold at once: at d = 24 one group (384 MB), so one
thread; at d = 20, 21 groups. With 64 groups at d = 24, 40 targets peaked at 6.6 GB."""

_compiled: list[Any] = []


def available() -> bool:
    """Whether numba is installed."""
    return importlib.util.find_spec("numba") is not None


def ready() -> bool:
    """Whether the kernel is compiled in this process."""
    return bool(_compiled)


def worth_compiling(targets: int, d: int) -> bool:
    """Whether a batch of this size should use the compiled kernel (compiling it first if need be)."""
    return available() and (ready() or targets << d >= COMPILE_WORTH_CELLS)


def compiled_function(name: str) -> Any:
    """A function of `cohortsql.numeric.compiled` (numba is imported, and the function compiled or
    read from numba's cache, on first use: each compilation counted and announced,
    `cohortsql.numeric.compilation`)."""
    compilation.watch()
    from cohortsql.numeric import compiled

    return getattr(compiled, name)


def _kernel() -> Any:
    if not _compiled:
        _compiled.append(compiled_function("fused"))
    return _compiled[0]


def compile_now() -> None:
    """Compile the kernel now (or read it from numba's cache), on a batch of one target and one
    player: what a dry run does before it times a pilot that the run would compute compiled, so that no
    estimate includes a compilation (a first dry run said 11,520 s, the next 1,920 s)."""
    if available() and not ready():
        row, mask = np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.int64)  # one subject, similar to its target
        exact_values(GameBatch(row, mask, np.ones(1), np.zeros(1), 1, 1, np.zeros(1), np.ones(1)))


def exact_values(batch: GameBatch) -> CohortShapley:
    """`cohortsql.numeric.shapley.cohort_shapley_of_histograms`, fused and compiled.

    Entries (game row, mask, weight, sum of y) may come in any order (`GameBatch`)."""
    row, rows, d = batch.row, batch.rows, batch.d
    order = np.argsort(row, kind="stable")
    starts = np.searchsorted(row[order], np.arange(rows + 1)).astype(np.int64)
    padded = np.concatenate(([0.0], shapley_weights(d), [0.0]))
    with_j = padded[np.arange(d + 1)]  # w(s - 1) for a set of size s containing j
    without_j = padded[np.arange(d + 1) + 1]  # w(s) for a set of size s
    # Each group of targets holds two 2^d work arrays and its own squared games: bound them by memory.
    per_group = (2 + batch.slots) * 8 << d
    groups = max(1, min(rows, 64, KERNEL_MEMORY_BYTES // per_group))
    *per_row, squared_games = (
        _kernel()(  # the kernel returns LocalValues' first fields in order, then the squared games
            starts,
            batch.mask[order].astype(np.int64),
            batch.subjects[order].astype(np.float64),
            batch.sum_y[order].astype(np.float64),
            d,
            np.broadcast_to(np.asarray(batch.means, dtype=np.float64), (rows,)).copy(),
            with_j,
            without_j,
            groups,
            np.asarray(batch.weights, dtype=np.float64),
            batch.slots,
            TIE_TOLERANCE,
        )
    )
    values = CohortShapley(LocalValues(*per_row), squared_games)
    if np.any(values.per_row.cohort_size <= 0):
        raise ValueError("a target is missing from its own cohort: similarity masks are not reflexive")
    return values
