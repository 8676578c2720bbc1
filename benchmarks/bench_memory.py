"""Peak memory of a run under DuckDB memory limits, against the process's own baseline.

``--case table`` (default): a 5,000,000-row Parquet table (an id, a quantile-window predictor, an exact
predictor with 1,000 levels, y) is explained for 3 targets under each limit; the baseline is a
process that imports cohortsql and opens DuckDB, and nothing else.
``--case bootstrap``: 8,000 Bayesian-bootstrap replicates (the most a run takes) on 200 rows of 4 windows under 200 MB,
against the same run with 2 replicates.
``--case exact24``: exact values of 40 targets of a 300-row table with 24 features under 500 MB,
against the same run with 8 features.
Each run is a fresh process.

    python benchmarks/bench_memory.py [--case table|bootstrap|exact24]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
LIMITS = ["50MB", "200MB", "500MB", None]


def data() -> Path:
    import duckdb

    path = RESULTS / "memory_5e6.parquet"
    if not path.exists():
        RESULTS.mkdir(exist_ok=True)
        duckdb.sql(
            "COPY (SELECT range AS id, hash(range) % 1000000 / 1000000.0 AS x0, hash(range, 1) % 1000 AS x1,"
            f" hash(range, 2) % 1000000 / 1000000.0 AS y FROM range(5000000)) TO '{path}' (FORMAT parquet)"
        )
    return path


def child(limit: str) -> None:
    import warnings

    import cohortsql

    warnings.simplefilter("ignore", cohortsql.CohortWarning)
    if limit.startswith(("bootstrap:", "exact:")):
        small_table_run(limit)
    elif limit != "baseline":
        cohortsql.cohort_shapley(
            str(data()),
            prediction="y",
            similarity={"x0": "quantile:0.1", "x1": "exact"},
            id="id",
            targets=[1, 2, 3],
            engine=cohortsql.DuckDB(memory_limit=None if limit == "none" else limit),
        )
    else:
        import duckdb

        duckdb.connect().sql("SELECT 1").fetchall()
    print(json.dumps({"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def small_table_run(case: str) -> None:
    """``bootstrap:<B>``: B replicates, 200 rows, 4 windows, 200 MB; ``exact:<d>``: 40 targets of 300
    rows with d three-level features, 500 MB."""
    import numpy as np
    import polars as pl

    import cohortsql

    kind, number = case.split(":")
    rng = np.random.default_rng(0)
    if kind == "bootstrap":
        columns = {f"x{j}": rng.normal(size=200) for j in range(4)}
        frame = pl.DataFrame(columns).with_columns(y=pl.col("x0") + 2 * pl.col("x1"), id=pl.int_range(200))
        options = dict(similarity={name: "abs:0.3" for name in columns}, bootstrap=int(number), seed=1)
        memory_limit = "200MB"
    else:
        columns = {f"x{j}": rng.integers(0, 3, 300) for j in range(int(number))}
        noise = rng.normal(size=300)
        frame = pl.DataFrame(columns).with_columns(y=pl.col("x0") + 2 * pl.col("x1") + noise, id=pl.int_range(300))
        options = dict(similarity={name: "abs:1" for name in columns}, targets=list(range(40)), method="exact")
        memory_limit = "500MB"
    cohortsql.cohort_shapley(
        frame, prediction="y", id="id", engine=cohortsql.DuckDB(memory_limit=memory_limit), **options
    )


def measure(limit: str) -> float:
    done = subprocess.run([sys.executable, __file__, limit], capture_output=True, text=True, check=True)
    return float(json.loads(done.stdout.strip().splitlines()[-1])["peak_mb"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=["table", "bootstrap", "exact24"], default="table")
    case = parser.parse_args().case
    sys.path.insert(0, str(Path(__file__).parent))
    from common import machine

    print(machine())
    if case != "table":
        runs = ["bootstrap:2", "bootstrap:8000"] if case == "bootstrap" else ["exact:8", "exact:24"]
        for run in runs:
            started = time.perf_counter()
            peak = measure(run)
            print(f"{run:>16}: peak {peak:.0f} MB in {time.perf_counter() - started:.1f} s", flush=True)
        return
    data()
    baseline = measure("baseline")
    print(f"baseline (imports and a DuckDB connection): {baseline:.0f} MB")
    print(f"{'memory_limit':>14}{'peak':>10}{'above baseline':>16}")
    for limit in LIMITS:
        peak = measure(limit or "none")
        print(f"{limit or 'none':>14}{peak:>8.0f} MB{peak - baseline:>13.0f} MB", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("--"):
        child(sys.argv[1])
    else:
        main()
