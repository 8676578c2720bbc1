"""Ways to write the similarity mask for DuckDB, timed on the same cross join and GROUP BY.

The mask-histogram step (docs/design.md §2, ``sql/mask_histogram.sql``) evaluates the mask expression once
per (target, subject) pair and then aggregates the pairs by (target, mask). This script times
spellings of the same mask for `abs:0.1` windows on 2,000,000 uniform rows x 100 targets x 12
predictors, each a median of 3, on a connection with cohortsql's settings (its perfect-hash
aggregate), beside two references in the same run:

    case      CASE WHEN abs(s.x - t.x) <= delta THEN 2^j ELSE 0 END, summed (what cohortsql runs)
    between   CASE WHEN s.x BETWEEN t.lo AND t.hi ... with per-target bounds computed once
    cast      (s.x BETWEEN t.lo AND t.hi)::SMALLINT * 2^j, summed
    and       ((s.x >= t.lo)::SMALLINT & (s.x <= t.hi)::SMALLINT) * 2^j, summed
    shift     (s.x BETWEEN t.lo AND t.hi)::SMALLINT << j, OR-ed
    packed    ((s.p | H) - t.lo) & ((t.hi | H) - s.p) & H: every predictor's rank among the targets'
              window edges packed 9 bits apart into one UHUGEINT per subject (ranked in numpy, not
              timed), so that two subtractions test all d windows; grouped by the guard bits H
    half      CASE WHEN s.x <= t.hi ...: one comparison per predictor, half a window (wrong groups),
              a lower bound for any mask that tests d predictors
    floor     no mask at all: a SMALLINT column of the subjects stands in for it, so this is the
              cross join and the aggregate alone -- the least any spelling can cost in DuckDB
    kernel    the compiled (numba) histogram of bench_perf.py (d), when numba is installed

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
from common import compiled_histogram_kernel, machine, median_time  # noqa: E402

from cohortsql.engines.duckdb_settings import PERFECT_HASH_BITS

D = 12
DELTA = 0.1
FIELD = 9
"""Bits per predictor in the packed variant: a rank among at most 255 window edges, and a guard bit."""
GUARDS = sum(1 << (FIELD * j + FIELD - 1) for j in range(D))


def variants() -> dict[str, str]:
    """Each spelling of the d-bit mask of subject s against target t."""
    bit = [f"CAST({1 << j} AS SMALLINT)" for j in range(D)]
    inside = [f"s.x{j} BETWEEN t.lo{j} AND t.hi{j}" for j in range(D)]
    guards = f"CAST('{GUARDS}' AS UHUGEINT)"
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
        "packed": f"((s.p | {guards}) - t.lo) & (t.hi_guarded - s.p) & {guards}",
        "half": " + ".join(f"CASE WHEN s.x{j} <= t.hi{j} THEN {bit[j]} ELSE CAST(0 AS SMALLINT) END" for j in range(D)),
        "floor": "s.code",
    }


def packed_ranks(x: np.ndarray, targets: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Subjects' ranks among the window edges of the first `targets` rows, and each target's first and
    last rank inside its window, packed FIELD bits apart as two 64-bit words (predictors 0-6, 7-11).
    A subject is in target t's window on predictor j exactly when its rank is in t's range."""
    assert targets <= (1 << (FIELD - 1)) // 2 - 1, "ranks among 2 edges per target must fit in FIELD - 1 bits"
    ranks = np.empty_like(x, dtype=np.uint64)
    first = np.empty((targets, D), np.uint64)
    last = np.empty((targets, D), np.uint64)
    for j in range(D):
        below, above = x[:targets, j] - DELTA, np.nextafter(x[:targets, j] + DELTA, np.inf)
        edges = np.unique(np.concatenate([below, above]))
        ranks[:, j] = np.searchsorted(edges, x[:, j], side="right")
        first[:, j] = np.searchsorted(edges, below, side="right")
        last[:, j] = np.searchsorted(edges, above, side="right") - 1

    def words(columns: np.ndarray, name: str) -> dict[str, np.ndarray]:
        packed = {f"{name}_low": np.zeros(len(columns), np.uint64), f"{name}_high": np.zeros(len(columns), np.uint64)}
        for j in range(D):
            word, field = divmod(j, 7)
            packed[f"{name}_{('low', 'high')[word]}"] |= columns[:, j] << np.uint64(FIELD * field)
        return packed

    return words(ranks, "p"), words(first, "lo") | words(last, "hi")


def uhugeint(name: str) -> str:
    """The 128-bit integer of the two words of `name`."""
    return f"(CAST({name}_high AS UHUGEINT) << {7 * FIELD}) | CAST({name}_low AS UHUGEINT)"


def main(rows: int, targets: int) -> None:
    rng = np.random.default_rng(2026)
    x = rng.uniform(size=(rows, D))
    code = rng.integers(0, 1 << D, size=rows, dtype=np.int16)  # as many groups as real masks make, about
    subject_ranks, target_ranks = packed_ranks(x, targets)
    subjects = pa.table({f"x{j}": x[:, j] for j in range(D)} | {"y": x.sum(axis=1), "code": code} | subject_ranks)
    chosen = {"target": np.arange(targets, dtype=np.int32)} | {f"x{j}": x[:targets, j] for j in range(D)}
    chosen |= {f"lo{j}": x[:targets, j] - DELTA for j in range(D)} | {
        f"hi{j}": x[:targets, j] + DELTA for j in range(D)
    }
    chosen |= target_ranks
    connection = duckdb.connect(config={"perfect_ht_threshold": str(PERFECT_HASH_BITS)})
    connection.register("subjects_view", subjects)
    connection.register("targets_view", pa.table(chosen))
    connection.execute(f"CREATE TABLE s AS SELECT *, {uhugeint('p')} AS p FROM subjects_view")
    guarded = f"{uhugeint('hi')} | CAST('{GUARDS}' AS UHUGEINT)"
    # stored: its statistics give a perfect hash
    connection.execute(f"CREATE TABLE t AS SELECT *, {uhugeint('lo')} AS lo, {guarded} AS hi_guarded FROM targets_view")
    print(machine())
    print(f"mask histogram of {rows:,} rows x {targets} targets x {D} abs:{DELTA} windows, median of 3")
    kernel = compiled_histogram_kernel()
    compiled = None
    if kernel is not None:
        contiguous = np.ascontiguousarray(x)
        compiled, _ = median_time(lambda: kernel(contiguous, subjects["y"].to_numpy(), contiguous[:targets], DELTA), 3)
    groups = None
    for name, mask in variants().items():
        sql = f"SELECT t.target, {mask} AS mask, count(*) AS n, sum(s.y) AS total FROM s CROSS JOIN t GROUP BY 1, 2"
        seconds, table = median_time(lambda sql=sql: connection.sql(sql).to_arrow_table(), 3)
        if name not in ("half", "floor"):  # bounds, not masks
            groups = groups or table.num_rows
            assert table.num_rows == groups, f"{name} found {table.num_rows} groups, not {groups}"
        against = f"  {seconds / compiled:4.1f}x the kernel" if compiled else ""
        print(f"    {name:8s} {seconds:6.2f} s  {rows * targets / seconds:.2e} pairs/s{against}")
    if compiled:
        print(f"    {'kernel':8s} {compiled:6.2f} s  {rows * targets / compiled:.2e} pairs/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--targets", type=int, default=100)
    options = parser.parse_args()
    main(options.rows, options.targets)
