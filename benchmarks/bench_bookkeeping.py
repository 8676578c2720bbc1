"""Every fixed step of a call, timed: what one target costs beyond its kernel, at 12 and at 1,024 features.

A call's fixed steps are its queries (each named by the context the engine runs it under: "computing
table statistics", "matching target ids ...", "reading a sample of the rows", ...) and, outside them,
the check of the data for copies of the explained column (`cohortsql.results.copies.warn_about_copies`).
Each table is explained for one target after a warm-up call, `--repeats` times; each step's median is
printed with the whole call's, and "everything else" is the call less the steps (Python between the
queries, the kernel and the integration). A step added to every call shows up here as a line.

Tables: 12 features (6 `abs:0.3` windows on doubles, 6 exact integer columns), 1,024 binary exact
features and 1,024 `abs:0.5` windows on doubles, `--rows` rows each (20,000 by default); the exact
method for d = 12, the integrated one for d = 1,024 (what each width runs).

Usage: python benchmarks/bench_bookkeeping.py [--rows 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from common import machine  # noqa: E402

import cohortsql  # noqa: E402
from cohortsql.api import effects, local  # noqa: E402
from cohortsql.engines.base import Engine  # noqa: E402

COPY_CHECK = "checking the data for copies of the explained column (outside SQL)"


def narrow(rows: int) -> tuple[pl.DataFrame, dict[str, str], str]:
    rng = np.random.default_rng(0)
    columns = {f"w{j}": rng.normal(size=rows) for j in range(6)} | {f"e{j}": rng.integers(0, 4, rows) for j in range(6)}
    frame = (
        pl.DataFrame(columns)
        .with_columns(y=pl.Series(sum(columns.values()) + rng.normal(scale=0.1, size=rows)))
        .with_row_index("id")
    )
    return frame, {f"w{j}": "abs:0.3" for j in range(6)} | {f"e{j}": "exact" for j in range(6)}, "exact"


def wide(rows: int) -> tuple[pl.DataFrame, dict[str, str], str]:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, (rows, 1024), dtype=np.int8)
    y = x[:, :16] @ rng.normal(size=16) + rng.normal(scale=0.1, size=rows)
    frame = pl.DataFrame({f"x{j}": x[:, j] for j in range(1024)}).with_columns(y=pl.Series(y)).with_row_index("id")
    return frame, {f"x{j}": "exact" for j in range(1024)}, "integrated"


def wide_floats(rows: int) -> tuple[pl.DataFrame, dict[str, str], str]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 1024))
    y = x[:, :16] @ rng.normal(size=16) + rng.normal(scale=0.1, size=rows)
    frame = pl.DataFrame({f"x{j}": x[:, j] for j in range(1024)}).with_columns(y=pl.Series(y)).with_row_index("id")
    return frame, {f"x{j}": "abs:0.5" for j in range(1024)}, "integrated"


class Steps:
    """Each query's time by its context, and the copy check's, over one call."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        run = Engine._run
        steps = self

        def timed_run(engine: Engine, action: Callable[[], Any], context: str) -> Any:
            began = time.perf_counter()
            try:
                return run(engine, action, context)
            finally:
                steps.seconds[context] += time.perf_counter() - began

        Engine._run = timed_run  # type: ignore[method-assign]
        for module in (local, effects):
            check = module.warn_about_copies

            def timed_check(*arguments: Any, _check: Callable[..., None] = check) -> None:
                began = time.perf_counter()
                try:
                    _check(*arguments)
                finally:
                    steps.seconds[COPY_CHECK] += time.perf_counter() - began

            module.warn_about_copies = timed_check  # type: ignore[assignment]


def measure(label: str, frame: pl.DataFrame, similarity: dict[str, str], method: str, repeats: int) -> None:
    steps = Steps()

    def call() -> float:
        began = time.perf_counter()
        cohortsql.cohort_shapley(frame, prediction="y", similarity=similarity, id="id", targets=[0], method=method)
        return time.perf_counter() - began

    call()  # warm-up: numba's cache, DuckDB's catalog
    per_step: dict[str, list[float]] = defaultdict(list)
    calls = []
    for _ in range(repeats):
        steps.seconds.clear()
        calls.append(call())
        for step, seconds in steps.seconds.items():
            per_step[step].append(seconds)
    whole = statistics.median(calls)
    print(f"{label}: one target, {method} method, {frame.height:,} rows: {whole:.3f} s (median of {repeats})")
    listed = 0.0
    for step, seconds in sorted(per_step.items(), key=lambda item: -statistics.median(item[1])):
        median = statistics.median(seconds + [0.0] * (repeats - len(seconds)))
        listed += median
        if median >= 0.001:
            print(f"  {median:7.3f} s  {step}")
    print(f"  {whole - listed:7.3f} s  everything else (Python between queries, the kernel, the integration)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    arguments = parser.parse_args()
    warnings.simplefilter("ignore")
    print(machine())
    tables = (("12 features", narrow), ("1,024 binary features", wide), ("1,024 float windows", wide_floats))
    for label, make in tables:
        measure(label, *make(arguments.rows), arguments.repeats)


if __name__ == "__main__":
    main()
