"""Shared helpers for the benchmark scripts: timing medians and a description of the machine."""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import duckdb
import numpy as np


def machine() -> str:
    """CPU model, cores, memory and library versions, for the record beside every figure."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{model}, {os.cpu_count()} cores, {memory:.0f} GiB; Python {platform.python_version()},"
        f" DuckDB {duckdb.__version__}, numpy {np.__version__}"
    )


def median_time(function: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall time of `repeats` calls, and the last call's result."""
    times = []
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def compiled_histogram_kernel() -> Callable[[np.ndarray, np.ndarray, np.ndarray, float], Any] | None:
    """A numba kernel for the mask histogram of `abs:delta` windows, on every core: for each target row
    of `targets` and subject row of `x`, the d-bit mask of |x_j - t_j| <= delta, then the subjects'
    count and sum of `y` per (target, mask). The "limit" column of the benchmarks: the same pairs and
    groups as the SQL step, with nothing interpreted. Compiled here (outside any timing); None without
    numba (pip install 'cohortsql[fast]')."""
    try:
        from numba import njit, prange
    except ImportError:
        return None

    @njit(parallel=True, cache=True)
    def kernel(x, y, targets, delta):  # type: ignore[no-untyped-def]
        d = x.shape[1]
        counts = np.zeros((targets.shape[0], 1 << d))
        sums = np.zeros((targets.shape[0], 1 << d))
        for t in prange(targets.shape[0]):
            for i in range(x.shape[0]):
                mask = 0
                for j in range(d):
                    if abs(x[i, j] - targets[t, j]) <= delta:
                        mask |= 1 << j
                counts[t, mask] += 1.0
                sums[t, mask] += y[i]
        return counts, sums

    small = np.random.default_rng(0).uniform(size=(4, 2))
    kernel(small, small[:, 0].copy(), small[:1], 0.1)
    return kernel  # type: ignore[no-any-return]
