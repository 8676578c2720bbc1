"""Features in groups (issue 25's measure): 60 features in 10 groups of 6, 100,000 rows, 100 targets.

Each group is one player (its members' similarities joined by AND), so the lattice has 2^10 cohorts
per target instead of 2^60; the Owen values of the 60 features come from each group's reduced game
(the 9 other groups whole, its 6 features alone: 2^15 cells) from the same kind of mask histogram.
The baseline in the same run is the groups as players (group_values="players"): one pass, 2^10 cells
per target; "owen" adds a pass over the data and the ten reduced games. Every group is a block of six
related measurements (a lab value's readings), the score depends on a few of them.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_groups.py [--rows 100000] [--targets 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import polars as pl

import cohortsql

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from common import machine, median_time  # noqa: E402

warnings.simplefilter("ignore", cohortsql.CohortWarning)
GROUPS, MEMBERS = 10, 6


def table(rows: int, seed: int = 0) -> pl.DataFrame:
    """Ten blocks of six correlated readings (a shared level plus noise, rounded to a tenth) and a score."""
    rng = np.random.default_rng(seed)
    columns = {}
    for group in range(GROUPS):
        level = rng.normal(size=rows)
        for member in range(MEMBERS):
            columns[f"g{group}_m{member}"] = np.round(level + rng.normal(scale=0.5, size=rows), 1)
    frame = pl.DataFrame(columns)
    score = frame["g0_m0"] + 0.5 * frame["g1_m2"] * frame["g2_m1"] + 0.3 * frame["g3_m4"] ** 2
    return frame.with_columns(score=score + rng.normal(scale=0.1, size=rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--targets", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    frame = table(arguments.rows)
    features = [name for name in frame.columns if name != "score"]
    groups = {f"g{group}": [name for name in features if name.startswith(f"g{group}_")] for group in range(GROUPS)}
    options = dict(
        prediction="score",
        similarity={name: "quantile:0.2" for name in features},
        groups=groups,
        sample=arguments.targets,
        seed=1,
    )
    print(machine())
    print(f"{arguments.rows:,} rows x {len(features)} features in {len(groups)} groups, {arguments.targets} targets")
    times = {}
    for values in ("players", "owen"):
        run = lambda values=values: cohortsql.cohort_shapley(frame, group_values=values, **options)  # noqa: E731
        run()  # warm: the numpy thread pool, DuckDB's first scan
        times[values], result = median_time(run, arguments.repeats)
        print(f'group_values="{values}":  median {times[values]:.2f} s of {arguments.repeats}')
    print(f"owen / players: {times['owen'] / times['players']:.2f}x")
    owen = result.owen_table.group_by("group", "feature").agg(pl.col("owen").abs().mean()).sort("owen", descending=True)
    print("largest mean |Owen value|:", ", ".join(f"{row[1]} {row[2]:.3f}" for row in owen.head(4).iter_rows()))
    gap = np.abs(result.owen.reshape(len(result.ids), GROUPS, MEMBERS).sum(axis=2) - result.shapley).max()
    print(f"largest |sum of a group's Owen values - the group's value|: {gap:.1e}")


if __name__ == "__main__":
    main()
