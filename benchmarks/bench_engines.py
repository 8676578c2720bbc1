"""DuckDB against Spark (local[2]), classic and through Spark Connect, on the same computations, in one run.

Cases: Boston housing (all 506 tracts, 13 `quantile:0.1` windows), Titanic (all 1046 passengers,
the paper's kinds) and a synthetic Parquet table of 10,000,000 rows with 12 `abs:0.1` windows and
100 targets (the file `bench_scale.py` writes). Every case runs on both engines in the same process;
the Spark session is started once, before timing (its start-up time is printed on its own), and
also serves Spark Connect on a local port: the Connect column is the same Spark seen through gRPC,
as a cluster's remote clients see it.

    python benchmarks/bench_engines.py                # every case
    python benchmarks/bench_engines.py --rows 1000000 # a smaller synthetic table
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path

import numpy as np

import cohortsql

sys.path.insert(0, str(Path(__file__).parent))
from bench_scale import data_path  # noqa: E402
from common import machine, median_time  # noqa: E402

EXAMPLES = Path(__file__).parent.parent / "examples"
BOSTON = EXAMPLES / "data" / "boston_predictions.parquet"
TITANIC = EXAMPLES / "data" / "titanic_predictions.parquet"
BOSTON_FEATURES = ["crim", "zn", "indus", "chas", "nox", "rm", "age", "dis", "rad", "tax", "ptratio", "black", "lstat"]


def cases(rows: int) -> dict[str, tuple[str, dict, int]]:
    """name: (data, options, repeats)."""
    return {
        "Boston, 506 targets x 13": (
            str(BOSTON),
            dict(prediction="prediction", similarity={name: "quantile:0.1" for name in BOSTON_FEATURES}),
            3,
        ),
        "Titanic, 1046 targets x 5": (
            str(TITANIC),
            dict(
                prediction="prediction",
                similarity={"pclass": "exact", "sex": "exact", "age": "range:0.1", "sibsp": "exact", "parch": "exact"},
            ),
            3,
        ),
        f"{rows:,} rows x 12, 100 targets": (
            str(data_path(rows, 12)),
            dict(prediction="y", similarity={f"x{j}": "abs:0.1" for j in range(12)}, targets=list(range(100))),
            1,
        ),
    }


def main(rows: int) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    print(machine())
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the executors' Python must have cohortsql
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        port = probe.getsockname()[1]
    start = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "8g")
        .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
        .config("spark.connect.grpc.binding.port", str(port))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    remote = ConnectSession.builder.remote(f"sc://localhost:{port}").getOrCreate()
    # The classic session keeps Spark's default shuffle partitions (cohortsql scales them to the cores);
    # a Connect client cannot see the cores, so its shuffle partitions are set here.
    remote.conf.set("spark.sql.shuffle.partitions", "4")
    print(f"Spark {spark.version} local[2] session started in {time.perf_counter() - start:.1f} s (not counted below)")
    print(f"{'case':<34}{'DuckDB':>10}{'Spark':>10}{'Connect':>10}{'Spark/DuckDB':>14}{'max |diff|':>12}")
    for name, (data, options, repeats) in cases(rows).items():
        duck_time, duck = median_time(
            lambda data=data, options=options: cohortsql.cohort_shapley(data, **options, progress=False), repeats
        )
        spark_time, on_spark = median_time(
            lambda data=data, options=options: cohortsql.cohort_shapley(
                data, **options, connection=spark, progress=False
            ),
            repeats,
        )
        connect_time, on_connect = median_time(
            lambda data=data, options=options: cohortsql.cohort_shapley(
                data, **options, connection=remote, progress=False
            ),
            repeats,
        )
        difference = max(float(np.abs(duck.shapley - other.shapley).max()) for other in (on_spark, on_connect))
        print(
            f"{name:<34}{duck_time:>9.2f}s{spark_time:>9.2f}s{connect_time:>9.2f}s"
            f"{spark_time / duck_time:>13.1f}x{difference:>12.1e}",
            flush=True,
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    main(parser.parse_args().rows)
