"""Realism at scale: baseline Shapley with and without the realism test, time and peak memory.

Uniform predictors (8 `abs:0.1` windows), a linear model, 5 targets and the mean baseline: the
realism test then checks 5 x 2^8 hybrid points against every subject row. Each case runs in a
fresh process: the data alone (the baseline for memory), BS without realism, BS with realism.

    python benchmarks/bench_realism.py [--rows 5000000]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

CASES = ["data only", "without realism", "with realism"]
D = 8


def child(case: str, rows: int) -> None:
    import warnings

    import polars as pl

    import cohortsql

    warnings.simplefilter("ignore", cohortsql.CohortWarning)
    x = np.random.default_rng(0).uniform(size=(rows, D))
    frame = pl.DataFrame({f"x{j}": x[:, j] for j in range(D)} | {"y": x.sum(axis=1)})
    del x
    seconds, realistic = 0.0, None
    if case != "data only":
        start = time.perf_counter()
        result = cohortsql.baseline_shapley(
            frame,
            model=lambda batch: np.asarray(batch).sum(axis=1),
            features={f"x{j}": "abs:0.1" for j in range(D)},
            targets=[0, 1, 2, 3, 4],
            realistic=case == "with realism",
            model_input="numpy",
            progress=False,
        )
        seconds = time.perf_counter() - start
        if case == "with realism":
            realistic = result.totals["realistic_points"].to_list()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak, "realistic": realistic}))


def main(rows: int) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from common import machine

    print(machine())
    print(f"baseline Shapley, {rows:,} rows x {D} abs:0.1, 5 targets, the mean baseline (2^{D} points each)")
    for case in CASES:
        done = subprocess.run(
            [sys.executable, __file__, "--child", case, "--rows", str(rows)], capture_output=True, text=True, check=True
        )
        measured = json.loads(done.stdout.strip().splitlines()[-1])
        realistic = "" if measured["realistic"] is None else f"  realistic points {measured['realistic']}"
        print(f"{case:>16}: {measured['seconds']:6.2f} s, peak {measured['peak_mb']:6.0f} MB{realistic}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child, options.rows)
    else:
        main(options.rows)
