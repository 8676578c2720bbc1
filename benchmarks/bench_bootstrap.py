"""The one-pass Bayesian bootstrap against B separate weighted runs, in the same process.

One pass: ``cohort_shapley(..., bootstrap=B)`` draws B replicate weightings in SQL and sums every
replicate's cohort totals in the same histogram. The baseline is what the authors' code does: B runs,
each with one replicate's Exp(1) weights as a case-weight column (drawn in numpy beforehand; the
draws are not timed). Both give every target's B replicate values.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_bootstrap.py [--only boston|rows] [--separate N]

With ``--separate N`` only N of the B separate runs are timed, and their total is N's median times
B (the runs are alike: only the weights change).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import polars as pl

import cohortsql

sys.path.insert(0, str(Path(__file__).parent))
from bench_exact import PREDICTORS  # noqa: E402
from common import machine  # noqa: E402

BOSTON = Path(__file__).parent.parent / "examples" / "data" / "boston_predictions.parquet"
REPLICATES = 200
warnings.simplefilter("ignore", cohortsql.CohortWarning)


def compare(name: str, frame: pl.DataFrame, options: dict, separate: int | None) -> None:
    began = time.perf_counter()
    one_pass = cohortsql.cohort_shapley(frame, **options, bootstrap=REPLICATES, seed=1, progress=False)
    together = time.perf_counter() - began
    assert one_pass.bootstrap is not None
    rng = np.random.default_rng(1)
    runs = REPLICATES if separate is None else separate
    times = []
    for _ in range(runs):
        weighted = frame.with_columns(__weight=pl.Series(rng.exponential(size=frame.height)))
        began = time.perf_counter()
        cohortsql.cohort_shapley(weighted, **options, weight="__weight", progress=False)
        times.append(time.perf_counter() - began)
    apart = sum(times) if separate is None else statistics.median(times) * REPLICATES
    how = f"{runs} runs" if separate is None else f"median of {runs} runs x {REPLICATES}"
    print(
        f"{name}: one pass with B = {REPLICATES}: {together:.1f} s; {REPLICATES} separate weighted runs"
        f" ({how}): {apart:.1f} s -> {apart / together:.1f}x faster"
    )


def boston(separate: int | None) -> None:
    frame = pl.read_parquet(BOSTON)
    options = dict(prediction="prediction", similarity={name: "quantile:0.1" for name in PREDICTORS})
    compare("Boston, 506 targets x 13", frame, options, separate)


def rows(separate: int | None) -> None:
    rng = np.random.default_rng(2026)
    x = rng.uniform(size=(1_000_000, 12))
    y = x @ rng.normal(size=12) + rng.normal(scale=0.1, size=len(x))
    frame = pl.DataFrame({f"x{j}": x[:, j] for j in range(12)} | {"y": y})
    options = dict(prediction="y", similarity={f"x{j}": "abs:0.1" for j in range(12)}, targets=list(range(100)))
    compare("1,000,000 rows x 100 targets x 12", frame, options, separate)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["boston", "rows"])
    parser.add_argument("--separate", type=int, help="time this many separate runs and scale their median to B")
    options = parser.parse_args()
    print(machine())
    for name, case in {"boston": boston, "rows": rows}.items():
        if options.only in (None, name):
            case(options.separate)
