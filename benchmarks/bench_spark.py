"""Spark at scale, in one run: where its mask histogram spends its time, and `shapley_table`, whose
values never pass through the driver.

1. The mask histogram (docs/design.md §2) of `--rows` uniform rows x `--targets` targets x 12 abs:0.1
   windows, subjects cached, on Spark local[2] beside DuckDB on the same 2 cores:

       cohortsql    the query cohortsql runs: CROSS JOIN the (broadcast) targets, mask, GROUP BY target, mask
       floor        the same join and aggregate with a stored column in place of the mask: the least
                    this query shape can cost
       mask only    the join and the mask, summed without grouping: what the aggregate adds is the rest
       packed key   GROUP BY one BIGINT target * 2^d + mask
       subjects     the subjects broadcast and the targets streamed, so that each task walks one
         broadcast  target's pairs after another (its groups stay in cache); a broadcast per query
       executors    what cohortsql runs on Spark: no hash aggregate of the pairs, but each executor
         (kernel)   task's partial histogram of its subjects in a compiled loop, merged by the driver
       ids check    the check that ids are unique (with the estimate of distinct rows) as Spark SQL's
                    grouped query, on the executors (what cohortsql runs past 4,000,000 rows or for
                    text ids) and in this process (what it runs for this table)
       cohort_      the whole call on Spark and on DuckDB, the same targets (100, then 1,000): statistics,
         shapley    checks, the histogram and the numpy stage; the first call of each, then medians of 5
                    alternated (calls 2-6), and at 100 targets of 5 more (calls 7-11): the JVM compiles
                    Spark's own code over a session's first calls

2. `cohortsql.shapley_table` on Spark local[2] for 1,000, 10,000 and 50,000 targets (8 binary
   `exact` features: the grouping-sets path), written as a table after one call of each way: time,
   time per target and the driver's peak memory (Python's allocations and Arrow's, polled), beside the two
   alternatives: the portable values query run by Spark (superset sums as SQL passes) and
   `cohort_shapley` on Spark (histograms assembled on the driver).

    python benchmarks/bench_spark.py [--rows 1000000] [--targets 100] [--calls 100,1000]
                                     [--sizes 1000,10000,50000] [--parts 1,2|calls]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

import cohortsql

sys.path.insert(0, str(Path(__file__).parent))
from common import machine, median_time  # noqa: E402

D = 12
DELTA = 0.1


def histogram_queries(spark_names: bool) -> dict[str, str]:
    """Each variant of the histogram step over relations s (subjects) and t (targets)."""
    case = " + ".join(
        f"CASE WHEN abs(s.x{j} - t.x{j}) <= CAST({DELTA} AS DOUBLE) THEN CAST({1 << j} AS SMALLINT)"
        " ELSE CAST(0 AS SMALLINT) END"
        for j in range(D)
    )
    hint = "/*+ BROADCAST(s) */ " if spark_names else ""
    return {
        "cohortsql": f"SELECT t.target, {case} AS mask, count(*) AS n, sum(s.y) AS total FROM s CROSS JOIN t GROUP BY 1, 2",
        "floor": "SELECT t.target, s.code AS mask, count(*) AS n, sum(s.y) AS total FROM s CROSS JOIN t GROUP BY 1, 2",
        "mask only": f"SELECT count(*) AS n, sum({case}) AS total FROM s CROSS JOIN t",
        "packed key": f"SELECT t.target * {1 << D} + ({case}) AS key, count(*) AS n, sum(s.y) AS total"
        " FROM s CROSS JOIN t GROUP BY 1",
        "subjects broadcast": f"SELECT {hint}t.target, {case} AS mask, count(*) AS n, sum(s.y) AS total"
        " FROM t CROSS JOIN s GROUP BY 1, 2",
    }


def totals(sql: str) -> str:
    """One row summing every column a histogram query returns, so that nothing of it is left uncomputed."""
    return f"SELECT count(*), sum(n), sum(total) FROM ({sql}) AS h"


def uniform_rows(rows: int) -> pa.Table:
    """`rows` rows of D uniform features, y their sum, and a random D-bit code (a stored stand-in for the mask)."""
    rng = np.random.default_rng(2026)
    x = rng.uniform(size=(rows, D))
    return pa.table(
        {f"x{j}": x[:, j] for j in range(D)}
        | {"y": x.sum(axis=1), "code": rng.integers(0, 1 << D, size=rows).astype(np.int16)}
    )


def histogram_part(spark: Any, rows: int, targets: int, calls: list[int]) -> None:
    subjects = uniform_rows(rows)
    chosen = pa.table(
        {"target": np.arange(targets, dtype=np.int32)} | {f"x{j}": subjects.column(f"x{j}")[:targets] for j in range(D)}
    )
    spark.createDataFrame(subjects).createOrReplaceTempView("s_input")
    spark.sql("CACHE TABLE s AS SELECT * FROM s_input")
    spark.createDataFrame(chosen).createOrReplaceTempView("t")
    connection = duckdb.connect()
    connection.execute("SET perfect_ht_threshold = 20")  # as cohortsql's DuckDB engine sets it
    connection.register("s_input", subjects)
    connection.register("t_input", chosen)
    connection.execute("CREATE TABLE s AS SELECT * FROM s_input")
    connection.execute("CREATE TABLE t AS SELECT * FROM t_input")  # stored: statistics for a perfect hash
    pairs = rows * targets
    print(f"\n1. mask histogram, {rows:,} rows x {targets} targets x {D} abs:{DELTA} windows, median of 3")
    print(f"    {'query':20s}{'Spark':>10s}{'pairs/s':>11s}{'DuckDB':>10s}{'pairs/s':>11s}{'Spark/DuckDB':>14s}")
    for (name, on_spark), on_duckdb in zip(histogram_queries(True).items(), histogram_queries(False).values()):
        # Every column summed: a bare count(*) would let the optimizers drop the aggregates.
        spark_time, _ = median_time(lambda sql=on_spark: spark.sql(totals(sql)).collect(), 3)
        duck_time, _ = median_time(lambda sql=on_duckdb: connection.execute(totals(sql)).fetchall(), 3)
        print(
            f"    {name:20s}{spark_time:9.2f}s{pairs / spark_time:11.2e}{duck_time:9.2f}s{pairs / duck_time:11.2e}"
            f"{spark_time / duck_time:13.1f}x",
            flush=True,
        )
    expected = connection.execute(totals(histogram_queries(False)["cohortsql"])).fetchall()[0]
    executors, found = median_time(lambda: histogram_on_the_executors(spark, chosen), 3)
    duck_time, _ = median_time(lambda: connection.execute(totals(histogram_queries(False)["cohortsql"])).fetchall(), 3)
    same = (
        found[0] == expected[0] and found[1] == expected[1] and abs(found[2] - expected[2]) <= 1e-9 * abs(expected[2])
    )
    print(
        f"    {'executors (kernel)':20s}{executors:9.2f}s{pairs / executors:11.2e}{duck_time:9.2f}s{pairs / duck_time:11.2e}"
        f"{executors / duck_time:13.1f}x   (DuckDB: cohortsql's query; the same histogram: {same})",
        flush=True,
    )
    whole_call(spark, subjects, calls)
    spark.sql("UNCACHE TABLE s")


def histogram_on_the_executors(spark: Any, chosen: pa.Table) -> tuple[int, float, float]:
    """The mask histogram as cohortsql builds it on Spark (`SparkEngine.pair_histogram`): each executor
    task's share of the cached subjects in Arrow batches, masks and partial histograms in a compiled loop
    (numba), merged by the driver (or, beyond a few tasks, by a small Spark aggregate). Returns the
    totals `totals` gives."""
    from cohortsql.engines.spark import SparkEngine
    from cohortsql.numeric.pair_tests import WINDOW, PairTest

    names = [f"x{j}" for j in range(D)]
    targets = chosen.rename_columns(["__cohort_batch", *names])
    subjects = f"SELECT {', '.join(names)}, CAST(1 AS DOUBLE) AS n, y AS total FROM s"
    tests = [PairTest(WINDOW, delta=DELTA)] * D
    with SparkEngine(spark) as engine:
        found = engine.pair_histogram(
            subjects, targets, tests, names, ["n", "total"], pairs=chosen.num_rows * 10**6, context="the benchmark"
        )
    assert found is not None, "the executors' Python could not import cohortsql"
    return len(found["target"]), float(found["n"].sum()), float(found["total"].sum())


def ids_check(spark: Any, frame: Any, rows: int) -> None:
    """The check that ids are unique with the estimate of distinct rows, as Spark SQL's grouped query, on
    the executors and in this process (`cohortsql.engines.spark_ids`), medians of 5 alternated after one
    of each."""
    from types import SimpleNamespace

    from cohortsql import queries
    from cohortsql.dialects import SPARK
    from cohortsql.engines import spark_ids

    frame.createOrReplaceTempView("scored")
    features = [SimpleNamespace(name=f"x{j}") for j in range(D)]  # all the queries read of a feature
    grouped = queries.statistics.duplicate_ids("scored", "`id`", SPARK, features)
    ids = queries.statistics.ids_and_row_hashes("scored", "`id`", SPARK, features)
    tasks = spark.sparkContext.defaultParallelism
    ways: dict[str, Callable[[], Any]] = {
        "Spark SQL": lambda: spark.sql(grouped).collect(),
        "executors": lambda: spark_ids.duplicate_ids(spark, ids, rows=rows, tasks=tasks),
        "here": lambda: spark_ids.counted_here(spark, ids),
    }
    times = alternated(ways, 5)
    print(
        f"    {'ids check':20s}{times['Spark SQL']:9.2f}s (Spark SQL's grouped query){times['executors']:9.2f}s"
        f" (on the executors){times['here']:9.2f}s (in this process)",
        flush=True,
    )


def alternated(ways: dict[str, Callable[[], Any]], repeats: int, warm_up: int = 1) -> dict[str, float]:
    """Each way's median wall time of `repeats` calls, the ways taking turns, after `warm_up` calls of
    each (the JVM compiles Spark's own code over a session's first calls)."""
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(repeats + warm_up):
        for name, way in ways.items():
            start = time.perf_counter()
            way()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(seen[warm_up:]) for name, seen in times.items()}


def whole_call(spark: Any, subjects: pa.Table, counts: list[int]) -> None:
    """`cohortsql.cohort_shapley` of the first `count` rows end to end (statistics, checks, histogram,
    numpy stage) on Spark (the subjects cached) and on DuckDB (the Arrow table), for each of `counts`:
    the first call of each, then medians of 5 alternated (calls 2 to 6), and for the first of `counts`
    of the next 5 as well (calls 7 to 11: the JVM has compiled more of Spark's code). What a call costs
    whatever its targets, and what each target adds."""
    table = subjects.drop_columns(["code"]).append_column("id", pa.array(np.arange(subjects.num_rows)))
    frame = spark.createDataFrame(table).cache()
    frame.count()
    ids_check(spark, frame, table.num_rows)
    for count in counts:
        options = {
            "prediction": "y",
            "similarity": {f"x{j}": f"abs:{DELTA}" for j in range(D)},
            "id": "id",
            "targets": list(range(count)),
            "progress": False,
        }
        values: dict[str, Any] = {}
        first: dict[str, float] = {}

        def timed(
            name: str,
            data: Any,
            options: dict[str, Any] = options,
            values: dict[str, Any] = values,
            first: dict[str, float] = first,
        ) -> Callable[[], None]:
            def call() -> None:
                start = time.perf_counter()
                values[name] = cohortsql.cohort_shapley(data, **options)
                first.setdefault(name, time.perf_counter() - start)

            return call

        ways = {"spark": timed("spark", frame), "duckdb": timed("duckdb", table)}
        with warnings.catch_warnings():  # uniform rows in 12 narrow windows: most cohorts end in one row
            warnings.filterwarnings("ignore", ".* of the targets end in a cohort of one row", cohortsql.CohortWarning)
            times = alternated(ways, 5)
            warmer = alternated(ways, 5, warm_up=0) if count == counts[0] else None
        difference = float(np.abs(values["spark"].shapley - values["duckdb"].shapley).max())
        pairs = subjects.num_rows * count
        rows = [(times, f"{count} targets, calls 2-6")] + ([(warmer, "the same, calls 7-11")] if warmer else [])
        for measured, label in rows:
            on_spark, on_duckdb = measured["spark"], measured["duckdb"]
            print(
                f"    {'cohort_shapley':15s}{count:5d}{on_spark:9.2f}s{pairs / on_spark:11.2e}{on_duckdb:9.2f}s"
                f"{pairs / on_duckdb:11.2e}{on_spark / on_duckdb:13.2f}x   (the whole call, {label};"
                f" values differ by {difference:.1e}; first calls {first['spark']:.2f} s and {first['duckdb']:.2f} s)",
                flush=True,
            )
    frame.unpersist()


def peak_driver_memory(action: Callable[[], Any]) -> tuple[float, int]:
    """Seconds `action` takes and the driver's peak memory meanwhile (Python's and Arrow's allocations)."""
    base, peak, done = pa.total_allocated_bytes(), [0], threading.Event()

    def poll() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], pa.total_allocated_bytes() - base)
            time.sleep(0.002)

    watcher = threading.Thread(target=poll)
    tracemalloc.start()
    watcher.start()
    start = time.perf_counter()
    try:
        action()
    finally:
        seconds = time.perf_counter() - start
        done.set()
        watcher.join()
        python = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return seconds, python + peak[0]


def table_ways(spark: Any, data: str, similarity: dict[str, str], *, with_driver: bool) -> dict[str, Callable[[], Any]]:
    """The ways to a Spark table of every target's values that part 2 times."""
    options = {"prediction": "y", "similarity": similarity, "id": "key"}
    values_sql = cohortsql.sql_query(data, **options, table="binary", dialect="spark", variant="values")

    def through_shapley_table() -> None:
        table = cohortsql.shapley_table(data, **options, connection=spark)
        table.write.mode("overwrite").saveAsTable("bench_values")

    def through_the_values_query() -> None:
        spark.sql(values_sql).write.mode("overwrite").saveAsTable("bench_values")

    ways: dict[str, Callable[[], Any]] = {
        "shapley_table": through_shapley_table,
        "the values query, run by Spark": through_the_values_query,
    }
    if with_driver:
        ways["cohort_shapley on Spark (driver assembles)"] = lambda: cohortsql.cohort_shapley(
            data, **options, connection=spark, progress=False
        )
    return ways


def table_part(spark: Any, sizes: list[int], directory: Path) -> None:
    print("\n2. every target's values written as a Spark table (8 binary features; d = 8); after one call of each")
    print("   way, medians of 5 alternated (one run at 50,000 targets), the driver's largest peak")
    print(f"    {'way':42s}{'targets':>9s}{'seconds':>9s}{'ms/target':>11s}{'driver peak':>13s}")
    similarity = {f"f{j}": "exact" for j in range(8)}
    for size in sizes:
        rng = np.random.default_rng(size)
        data = directory / f"binary_{size}.parquet"
        pl.DataFrame(
            {
                "key": np.arange(size),
                **{f"f{j}": rng.integers(0, 2, size) for j in range(8)},
                "y": rng.uniform(size=size),
            }
        ).write_parquet(data)
        spark.read.parquet(str(data)).createOrReplaceTempView("binary")
        ways = table_ways(spark, str(data), similarity, with_driver=size <= 10_000)
        repeats = 1 if size > 10_000 else 5  # the values query takes minutes there
        if size == sizes[0]:  # one untimed call of each way first, as in part 1: the JVM compiles as it runs
            for way in ways.values():
                way()
        measured: dict[str, list[tuple[float, int]]] = {name: [] for name in ways}
        for _ in range(repeats):  # the ways alternated, so that the machine's drift falls on each alike
            for name, way in ways.items():
                measured[name].append(peak_driver_memory(way))
        for name, runs in measured.items():
            seconds = statistics.median(run[0] for run in runs)
            peak = max(run[1] for run in runs)
            print(
                f"    {name:42s}{size:9,d}{seconds:8.2f}s{1000 * seconds / size:10.3f}{peak / 2**20:11.1f} MB",
                flush=True,
            )
        print(f"    (shapley_table's values differ from DuckDB's by {table_difference(spark, data, similarity):.1e})")
    spark.sql("DROP TABLE IF EXISTS bench_values")


def table_difference(spark: Any, data: Path, similarity: dict[str, str]) -> float:
    """The largest difference between `shapley_table`'s values on Spark and `cohort_shapley`'s on DuckDB."""
    options = {"prediction": "y", "similarity": similarity, "id": "key"}
    table = pl.from_arrow(cohortsql.shapley_table(str(data), **options, connection=spark).toArrow())
    here = cohortsql.cohort_shapley(pl.read_parquet(data), **options, progress=False).local
    assert isinstance(table, pl.DataFrame)
    joined = table.join(here, on=["id", "feature"], suffix="_duckdb")
    assert joined.height == here.height == table.height, "shapley_table's rows are not every target's features"
    return float((joined["shapley"] - joined["shapley_duckdb"]).abs().max())


def main(rows: int, targets: int, calls: list[int], sizes: list[int], parts: list[str]) -> None:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the executors' Python must have cohortsql
    directory = Path(tempfile.mkdtemp(prefix="cohortsql-bench-"))
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "8g")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.autoBroadcastJoinThreshold", str(2**30))
        .config("spark.sql.warehouse.dir", str(directory / "warehouse"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    print(machine() + f"; Spark {spark.version} local[2]")
    if "1" in parts:
        histogram_part(spark, rows, targets, calls)
    elif "calls" in parts:  # part 1's whole calls alone
        print(f"\n1. the whole calls alone, {rows:,} rows x {D} abs:{DELTA} windows")
        whole_call(spark, uniform_rows(rows), calls)
    if "2" in parts:
        table_part(spark, sizes, directory)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--targets", type=int, default=100)
    parser.add_argument("--calls", default="100,1000", help="targets of the whole calls timed in part 1")
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument(
        "--parts", default="1,2", help="which parts to run, e.g. 2; 'calls': part 1's whole calls alone"
    )
    arguments = parser.parse_args()
    sizes = [int(size) for size in arguments.sizes.split(",")]
    calls = [int(count) for count in arguments.calls.split(",")]
    main(arguments.rows, arguments.targets, calls, sizes, arguments.parts.split(","))
