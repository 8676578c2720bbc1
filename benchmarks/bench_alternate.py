"""Time two checkouts of cohortsql on the same workloads, alternated, to say whether a change made them slower.

Each round runs every workload once under each tree, old then new, each in a fresh process (imports
and the first DuckDB connection outside the timing; one warm-up call first, then the median of
`--calls` timed calls): the machine's load
drifts, and alternating gives both trees the same drift. Workloads: Boston, all 506 targets, exact
cohort Shapley on the 13 predictors (`quantile:0.1`, the shipped model's predictions), and Shapley
effects of 1,000,000 rows x 10 binned predictors (`bins:10`, every row a target: the grouping-sets
path), as `bench_exact.py` and `bench_global.py` time them; and 20 targets of 2,000,000 rows x 12
`abs:0.3` windows under `memory_limit="300MB"` (a narrow table's fixed costs: statistics, ids, checks).

    git worktree add /tmp/old <commit>
    python benchmarks/bench_alternate.py --old /tmp/old [--new .] [--rounds 5] [--only '2,000,000'] [--calls 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import machine  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

WORKLOADS = {
    "Boston, 506 targets x 13 features, exact": f"""
import polars as pl
frame = pl.read_parquet({str(ROOT / "examples" / "data" / "boston_predictions.parquet")!r})
features = [name for name in frame.columns if name not in ("medv", "prediction")]
def run():
    return cohortsql.cohort_shapley(frame, prediction="prediction", similarity={{f: "quantile:0.1" for f in features}})
""",
    "effects, 1,000,000 rows x 10 bins:10": """
import numpy as np, polars as pl
rng = np.random.default_rng(2026)
x = rng.uniform(size=(1_000_000, 10))
frame = pl.DataFrame({f"x{j}": x[:, j] for j in range(10)} | {"y": x @ np.linspace(1, 0.1, 10) + x[:, 0] * x[:, 1]})
def run():
    return cohortsql.shapley_effects(frame, prediction="y", similarity={f"x{j}": "bins:10" for j in range(10)})
""",
    "2,000,000 rows x 12 abs:0.3 x 20 targets, memory_limit 300MB": """
import numpy as np, polars as pl
rng = np.random.default_rng(2026)
x = rng.normal(size=(2_000_000, 12))
frame = pl.DataFrame({f"x{j}": x[:, j] for j in range(12)} | {"y": x @ np.linspace(1, 0.1, 12)}).with_row_index("id")
def run():
    return cohortsql.cohort_shapley(frame, prediction="y", similarity={f"x{j}": "abs:0.3" for j in range(12)},
                                    id="id", targets=list(range(20)), engine=cohortsql.DuckDB(memory_limit="300MB"))
""",
}

TIMED = """
import statistics, time, warnings
warnings.simplefilter("ignore")
import cohortsql
print(cohortsql.__file__)
{setup}
run()
seen = []
for _ in range({calls}):
    began = time.perf_counter()
    run()
    seen.append(time.perf_counter() - began)
print(statistics.median(seen))
"""


def timed(tree: Path, setup: str, calls: int) -> float:
    """The median of `calls` timed calls of a workload under the package of `tree`, in a fresh process.
    ``-P``: ``python -c`` would put the working directory first on the path, so that run from a
    checkout both trees timed that checkout's package (until 2026-11-29 this script did, when run from
    the repository's root as its usage says); the process says which package it imported, and a
    package from elsewhere stops the comparison."""
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-P", "-c", TIMED.format(setup=setup, calls=calls)],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    imported, *_, median = done.stdout.strip().splitlines()
    if not Path(imported).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"the run for {tree} imported cohortsql from {imported}")
    return float(median)


def main(old: Path, new: Path, rounds: int, only: str, calls: int) -> None:
    print(machine())
    for name, setup in WORKLOADS.items():
        if only not in name:
            continue
        times: dict[str, list[float]] = {"old": [], "new": []}
        for _ in range(rounds):
            times["old"].append(timed(old, setup, calls))
            times["new"].append(timed(new, setup, calls))
        medians = {tree: statistics.median(values) for tree, values in times.items()}
        print(
            f"{name}: old {medians['old']:.3f} s, new {medians['new']:.3f} s (medians of {rounds} processes"
            f" alternated, each the median of {calls} calls); new / old = {medians['new'] / medians['old']:.3f}"
        )
        print(
            f"    old {', '.join(f'{t:.3f}' for t in times['old'])}; new {', '.join(f'{t:.3f}' for t in times['new'])}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True, help="the checkout to compare with (e.g. a git worktree)")
    parser.add_argument("--new", type=Path, default=ROOT)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default="", help="run only the workloads whose names hold this text")
    parser.add_argument("--calls", type=int, default=1, help="timed calls in each process (after a warm-up call)")
    options = parser.parse_args()
    main(options.old.resolve(), options.new.resolve(), options.rounds, options.only, options.calls)
