"""Peak memory of a run under DuckDB memory limits, against the process's own baseline.

A 5,000,000-row Parquet table (an id, a quantile-window predictor, an exact predictor with 1,000
levels, y) is explained for 3 targets under each limit, each run in a fresh process; the baseline
is a process that imports cohortsql and opens DuckDB, and nothing else.

    python benchmarks/bench_memory.py
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
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
    if limit != "baseline":
        cohortsql.cohort_shapley(
            str(data()),
            prediction="y",
            similarity={"x0": "quantile:0.1", "x1": "exact"},
            id="id",
            targets=[1, 2, 3],
            memory_limit=None if limit == "none" else limit,
        )
    else:
        import duckdb

        duckdb.connect().sql("SELECT 1").fetchall()
    print(json.dumps({"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def measure(limit: str) -> float:
    done = subprocess.run([sys.executable, __file__, limit], capture_output=True, text=True, check=True)
    return float(json.loads(done.stdout.strip().splitlines()[-1])["peak_mb"])


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from common import machine

    print(machine())
    data()
    baseline = measure("baseline")
    print(f"baseline (imports and a DuckDB connection): {baseline:.0f} MB")
    print(f"{'memory_limit':>14}{'peak':>10}{'above baseline':>16}")
    for limit in LIMITS:
        peak = measure(limit or "none")
        print(f"{limit or 'none':>14}{peak:>8.0f} MB{peak - baseline:>13.0f} MB", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        child(sys.argv[1])
    else:
        main()
