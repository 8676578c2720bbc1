"""Scale benchmark: the scaling table (rows 1e5..1e7, targets 10..1000, d 8..20) and the permutation method.

Each case runs in a fresh process so its peak memory (max RSS) is its own, first with cohortsql
and then (except in the table) with a simple baseline: per target, numpy computes the similarity
masks of every row and their histogram (np.unique), then the same numpy Shapley code finishes. The
data are uniform predictors with `abs:0.1` windows, written once to Parquet; cohortsql reads the
file, the baseline loads it into memory.

    python benchmarks/bench_scale.py                 # every case
    python benchmarks/bench_scale.py --only table    # the scaling table only (no baseline)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

import cohortsql
from cohortsql.numeric import permutation, shapley

sys.path.insert(0, str(Path(__file__).parent))
from common import machine  # noqa: E402

DATA = Path(__file__).parent / "results"

# name: (rows, predictors, targets, method, memory limit)
TABLE = {
    **{
        f"table n=1e{power} T={targets} d=12": (10**power, 12, targets, "exact", None)
        for power in (5, 6, 7)
        for targets in (10, 100, 1000)
    },
    **{f"table n=1e5 T=100 d={d}": (100_000, d, 100, "exact", None) for d in (8, 16, 20)},
}
CASES = {
    **TABLE,
    "exact d=8": (100_000, 8, 20, "exact", None),
    "exact d=20": (100_000, 20, 20, "exact", None),
    "permutation d=30": (100_000, 30, 10, "permutation", None),
    "permutation d=60": (100_000, 60, 10, "permutation", None),
    "rows 1e7, d=12, 1GB": (10_000_000, 12, 100, "exact", "1GB"),
}
GROUPS = {
    "table": list(TABLE),
    "exact": [c for c in CASES if c.startswith("exact")],
    "permutation": [c for c in CASES if c.startswith("perm")],
    "rows": [c for c in CASES if c.startswith("rows")],
}
DELTA = 0.1
PERMUTATIONS = 200


def data_path(rows: int, d: int) -> Path:
    path = DATA / f"uniform_{rows}x{d}.parquet"
    if not path.exists():
        DATA.mkdir(exist_ok=True)
        columns = ", ".join(f"hash(range, {j}) % 1000000 / 1000000.0 AS x{j}" for j in range(d))
        weights = " + ".join(f"{(j % 5) - 2} * x{j}" for j in range(d))
        duckdb.sql(
            f"COPY (SELECT *, {weights} AS y FROM (SELECT {columns} FROM range({rows}))) TO '{path}' (FORMAT parquet)"
        )
    return path


def run_cohortsql(rows: int, d: int, targets: int, method: str, memory_limit: str | None) -> None:
    path = str(data_path(rows, d))
    cohortsql.cohort_shapley(
        path,
        prediction="y",
        similarity={f"x{j}": f"abs:{DELTA}" for j in range(d)},
        targets=list(range(targets)),
        method=method,
        seed=0,
        max_permutations=PERMUTATIONS,
        engine=cohortsql.DuckDB(memory_limit=memory_limit),
        progress=False,
    )


def run_numpy(rows: int, d: int, targets: int, method: str, memory_limit: str | None) -> None:
    frame = pl.read_parquet(data_path(rows, d))
    x = frame.select(f"x{j}" for j in range(d)).to_numpy()
    y = frame["y"].to_numpy()
    mean = y.mean()
    generators = [np.random.default_rng(child) for child in np.random.SeedSequence(0).spawn(targets)]
    for t in range(targets):
        masks = np.zeros(rows, dtype=np.int64)
        for j in range(d):
            masks |= (np.abs(x[:, j] - x[t, j]) <= DELTA).astype(np.int64) << j
        distinct, inverse = np.unique(masks, return_inverse=True)
        counts = np.bincount(inverse).astype(float)
        sums = np.bincount(inverse, weights=y)
        if method == "exact":
            entries = (np.zeros_like(distinct), distinct, counts, sums)
            shapley.cohort_shapley_of_histograms(shapley.GameBatch(*entries, 1, d, np.array([mean]), np.ones(1), 1))
        else:
            bits = permutation.unpack_masks([distinct], d, 63)
            permutation.estimate(bits, counts, sums, mean, generators[t], max_permutations=PERMUTATIONS, tolerance=None)


def child(case: str, implementation: str) -> None:
    rows, d, targets, method, memory_limit = CASES[case]
    data_path(rows, d)
    start = time.perf_counter()
    (run_cohortsql if implementation == "cohortsql" else run_numpy)(rows, d, targets, method, memory_limit)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak}))


def measure(case: str, implementation: str) -> dict:
    command = [sys.executable, __file__, "--child", case, "--implementation", implementation]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(cases: list[str]) -> None:
    print(machine())
    print(f"{'case':<26}{'rows':>12}{'targets':>8}  {'cohortsql':>30}  {'numpy per-target loop':>30}")
    for case in cases:
        rows, d, targets, method, memory_limit = CASES[case]
        data_path(rows, d)
        ours = measure(case, "cohortsql")
        pairs = rows * targets
        line = f"{case:<26}{rows:>12,}{targets:>8}  {ours['seconds']:>7.2f} s {ours['peak_mb']:>6.0f} MB {pairs / ours['seconds']:>7.1e}/s"
        if case not in TABLE:
            baseline = measure(case, "numpy")
            line += (
                f"  {baseline['seconds']:>7.2f} s {baseline['peak_mb']:>6.0f} MB {pairs / baseline['seconds']:>7.1e}/s"
            )
        print(line, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=sorted(GROUPS))
    parser.add_argument("--child")
    parser.add_argument("--implementation", choices=["cohortsql", "numpy"])
    options = parser.parse_args()
    if options.child:
        child(options.child, options.implementation)
    else:
        main(GROUPS[options.only] if options.only else list(CASES))
