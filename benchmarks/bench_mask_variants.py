"""Ways to write the similarity mask for DuckDB, timed on the same cross join and GROUP BY.

The mask-histogram step (DESIGN §2, ``sql/mask_histogram.sql``) spends most of its time evaluating
the mask expression once per (target, subject) pair. This script times spellings of the same mask
for `abs:0.1` windows on 2,000,000 uniform rows x 100 targets x 12 predictors, each a median of 3:

    case      CASE WHEN abs(s.x - t.x) <= delta THEN 2^j ELSE 0 END, summed (what cohortsql runs)
    between   CASE WHEN s.x BETWEEN t.lo AND t.hi ... with per-target bounds computed once
    cast      (s.x BETWEEN t.lo AND t.hi)::SMALLINT * 2^j, summed
    and       ((s.x >= t.lo)::SMALLINT & (s.x <= t.hi)::SMALLINT) * 2^j, summed
    shift     (s.x BETWEEN t.lo AND t.hi)::SMALLINT << j, OR-ed

    python benchmarks/bench_mask_variants.py [--rows 2000000] [--targets 100]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).parent))
from common import machine, median_time  # noqa: E402

D = 12
DELTA = 0.1


def variants() -> dict[str, str]:
    """Each spelling of the d-bit mask of subject s against target t."""
    bit = [f"CAST({1 << j} AS SMALLINT)" for j in range(D)]
    inside = [f"s.x{j} BETWEEN t.lo{j} AND t.hi{j}" for j in range(D)]
    return {
        "case": " + ".join(
            f"CASE WHEN abs(s.x{j} - t.x{j}) <= CAST({DELTA} AS DOUBLE) THEN {bit[j]} ELSE CAST(0 AS SMALLINT) END"
            for j in range(D)
        ),
        "between": " + ".join(f"CASE WHEN {inside[j]} THEN {bit[j]} ELSE CAST(0 AS SMALLINT) END" for j in range(D)),
        "cast": " + ".join(f"CAST({inside[j]} AS SMALLINT) * {bit[j]}" for j in range(D)),
        "and": " + ".join(
            f"(CAST(s.x{j} >= t.lo{j} AS SMALLINT) & CAST(s.x{j} <= t.hi{j} AS SMALLINT)) * {bit[j]}" for j in range(D)
        ),
        "shift": " | ".join(f"(CAST({inside[j]} AS SMALLINT) << {j})" for j in range(D)),
    }


def main(rows: int, targets: int) -> None:
    rng = np.random.default_rng(2026)
    x = rng.uniform(size=(rows, D))
    subjects = pa.table({f"x{j}": x[:, j] for j in range(D)} | {"y": x.sum(axis=1)})
    chosen = {"target": np.arange(targets, dtype=np.int32)} | {f"x{j}": x[:targets, j] for j in range(D)}
    chosen |= {f"lo{j}": x[:targets, j] - DELTA for j in range(D)} | {
        f"hi{j}": x[:targets, j] + DELTA for j in range(D)
    }
    connection = duckdb.connect()
    connection.register("subjects_view", subjects)
    connection.register("targets_view", pa.table(chosen))
    connection.execute("CREATE TABLE s AS SELECT * FROM subjects_view")
    connection.execute("CREATE TABLE t AS SELECT * FROM targets_view")  # stored: its statistics give a perfect hash
    print(machine())
    print(f"mask histogram of {rows:,} rows x {targets} targets x {D} abs:{DELTA} windows, median of 3")
    groups = None
    for name, mask in variants().items():
        sql = f"SELECT t.target, {mask} AS mask, count(*) AS n, sum(s.y) AS total FROM s CROSS JOIN t GROUP BY 1, 2"
        seconds, table = median_time(lambda sql=sql: connection.sql(sql).to_arrow_table(), 3)
        groups = groups or table.num_rows
        assert table.num_rows == groups, f"{name} found {table.num_rows} groups, not {groups}"
        print(f"    {name:8s} {seconds:6.2f} s  {rows * targets / seconds:.2e} pairs/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--targets", type=int, default=100)
    options = parser.parse_args()
    main(options.rows, options.targets)
