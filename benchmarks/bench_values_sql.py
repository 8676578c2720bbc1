"""The whole computation in the engine, against the library's own path, in one run (DuckDB).

Three ways to the same cohort Shapley values:

    library    cohortsql.cohort_shapley: SQL histograms, then numpy (the reference)
    function   DuckDB's table function cohort_shapley (cohortsql.register): the same histograms, finished
               per target by a scalar function that runs the numpy stage inside the query
    values     the portable values query (sql_query(variant="values")): superset sums as passes of
               SQL over groups of mask bits, then the Shapley weights as a literal table; its bits per
               pass are timed from 1 to d (d: each mask expanded into all of its subsets in one pass)
    dense      the same query with the other transform the design considered: every target's 2^d sets
               as a dense table from the start, then d passes, each a self-join adding u + 2^j to u

on Boston housing (all 506 tracts, 13 quantile:0.1 windows) and on 1,000,000 uniform rows x 100
targets x 12 abs:0.1 windows (the file bench_scale.py writes). Each figure is the median of
`--repeats` runs, the ways interleaved so that drift on a shared machine hits them alike.

    python benchmarks/bench_values_sql.py [--rows 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

import cohortsql
from cohortsql.queries import values
from cohortsql.queries.steps import Step

sys.path.insert(0, str(Path(__file__).parent))
from bench_engines import BOSTON, BOSTON_FEATURES  # noqa: E402
from bench_scale import data_path  # noqa: E402
from common import machine  # noqa: E402


def interleaved(ways: dict[str, Callable[[], Any]], repeats: int) -> dict[str, tuple[float, Any]]:
    """Median time and last result of each way, run in turn `repeats` times."""
    times: dict[str, list[float]] = {name: [] for name in ways}
    results: dict[str, Any] = {}
    for _ in range(repeats):
        for name, way in ways.items():
            start = time.perf_counter()
            results[name] = way()
            times[name].append(time.perf_counter() - start)
    return {name: (statistics.median(times[name]), results[name]) for name in ways}


def dense_passes(histogram: str, d: int) -> list[Step]:
    """The superset sums as d self-joins over a dense table of every target's 2^d sets (a stand-in for
    `values.superset_passes`, timed beside it)."""
    steps = [
        Step(
            "lattice_0",
            f"SELECT g.target, r.range AS u, coalesce(h.w, 0) AS w, coalesce(h.s, 0) AS s FROM (SELECT DISTINCT"
            f" target FROM {histogram}) AS g CROSS JOIN range({1 << d}) AS r LEFT JOIN (SELECT target, mask0,"
            f" sum(w0) AS w, sum(s0_0) AS s FROM {histogram} GROUP BY 1, 2) AS h"
            " ON h.target = g.target AND h.mask0 = r.range",
        )
    ]
    for bit in range(d):
        previous = steps[-1].name
        steps.append(
            Step(
                f"lattice_{bit + 1}",
                f"SELECT a.target, a.u, a.w + coalesce(b.w, 0) AS w, a.s + coalesce(b.s, 0) AS s FROM {previous} AS a"
                f" LEFT JOIN {previous} AS b ON (a.u & {1 << bit}) = 0 AND b.target = a.target"
                f" AND b.u = a.u + {1 << bit}",
            )
        )
    return steps


def case(title: str, data: str, options: dict[str, Any], repeats: int, bits: list[int]) -> None:
    connection = duckdb.connect()
    cohortsql.register(connection)
    d = len(options["similarity"])
    text = ", ".join(f"{name}={kind}" for name, kind in options["similarity"].items())
    targets = options.get("targets")
    where = "" if targets is None else f", targets := '{targets}'"

    def query(bits_per_pass: int) -> str:
        values.BITS_PER_PASS = bits_per_pass
        return cohortsql.sql_query(data, variant="values", **options)

    queries = {bits_per_pass: query(bits_per_pass) for bits_per_pass in bits}
    sparse = values.superset_passes
    values.superset_passes = dense_passes
    dense = cohortsql.sql_query(data, variant="values", **options)
    values.superset_passes = sparse
    ways: dict[str, Callable[[], Any]] = {
        "library": lambda: cohortsql.cohort_shapley(data, **options, progress=False).shapley,
        "function": lambda: connection.execute(
            f"SELECT shapley FROM cohort_shapley('{data}', '{options['prediction']}', '{text}'{where})"
        ).fetchnumpy()["shapley"],
    }
    for bits_per_pass, sql in queries.items():
        label = f"values, {bits_per_pass} bits a pass" if bits_per_pass < d else f"values, all {d} bits in one pass"
        ways[label] = lambda sql=sql: connection.execute(sql).fetchnumpy()["shapley"]
    ways["dense, d self-joins"] = lambda: connection.execute(dense).fetchnumpy()["shapley"]
    timed = interleaved(ways, repeats)
    reference_time, reference = timed["library"]
    print(f"\n{title}: median of {repeats}")
    for name, (seconds, result) in timed.items():
        error = float(np.abs(np.asarray(result).reshape(reference.shape) - reference).max())
        print(f"    {name:30s} {seconds:7.2f} s  {seconds / reference_time:5.1f}x the library  max |diff| {error:.1e}")


def main(rows: int, repeats: int) -> None:
    print(machine())
    boston = {"prediction": "prediction", "similarity": {name: "quantile:0.1" for name in BOSTON_FEATURES}}
    case("Boston, 506 targets x 13 quantile:0.1", str(BOSTON), boston, repeats, [1, 2, 3, 4, 5, 7, 13])
    uniform = {
        "prediction": "y",
        "similarity": {f"x{j}": "abs:0.1" for j in range(12)},
        "targets": "x0 < 0.0001",
    }
    data = str(data_path(rows, 12))
    count = duckdb.sql(f"SELECT count(*) FROM '{data}' WHERE x0 < 0.0001").fetchall()[0][0]
    case(f"{rows:,} rows x {count} targets x 12 abs:0.1", data, uniform, repeats, [2, 4, 6])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    main(arguments.rows, arguments.repeats)
