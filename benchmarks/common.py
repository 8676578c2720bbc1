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
