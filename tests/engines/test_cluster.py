"""cohortsql on a real Spark standalone cluster: a master and two 1-core workers, each its own JVM
started with pyspark's own ``spark-class``, on loopback. What ``local[*]`` hides shows here: executors
in other processes (with their own Python workers, which import cohortsql), functions and Arrow batches
serialised between them, results gathered from both. The driver runs in a subprocess (a Python
process holds one SparkContext, and the suite's own is ``local[2]``); it prints what it measured as
JSON, and the test compares it with DuckDB. Every mask histogram is built on the executors
(`cohortsql.engines.spark_histogram`), partial histograms of each worker merged."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

WORKERS = 2
RUN_CLUSTER = "COHORTSQL_CLUSTER_TESTS"
"""Set this environment variable to 1 to run the cluster test: starting a master, two workers and a
driver adds four to five minutes to the suite on a 2-core machine, for what
``local[2]`` already checks number for number. Run it after a change to the Spark engine."""
CLUSTER_TEST_SECONDS = 900
"""The test's own limit (the suite's is 300 s a test): starting a master and two workers, then a driver,
takes minutes on a busy machine; nothing in the test waits on a clock of its own."""

DRIVER = textwrap.dedent(
    """
    import json, sys
    import numpy as np, polars as pl
    from pyspark.sql import SparkSession
    import cohortsql
    import cohortsql.engines.spark

    cohortsql.engines.spark.EXECUTOR_HISTOGRAM_PAIRS = 0  # every mask histogram built on the executors
    spark = (
        SparkSession.builder.master(sys.argv[1]).appName("cohortsql-cluster-test")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1").config("spark.executor.memory", "512m")
        .config("spark.sql.shuffle.partitions", "4").config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    titanic = pl.read_parquet(sys.argv[2]).with_row_index("id").with_columns(pl.col("id").cast(pl.Int64), w=pl.col("sibsp") + 1)
    frame = spark.createDataFrame(titanic.to_arrow()).repartition(4)
    measured = {}
    kinds = {"sex": "exact", "pclass": "exact", "age": "quantile:0.1", "parch": "abs:1"}
    cases = {
        "every kind": dict(similarity=kinds, id="id"),
        "weights, bootstrap, a predicate": dict(similarity=kinds, id="id", weight="w", bootstrap=8, seed=3, targets="age > 30"),
        "grouping sets": dict(similarity={"sex": "exact", "pclass": "exact", "sibsp": "bins:3"}, id="id", path="grouping_sets"),
    }
    for name, options in cases.items():
        on_cluster = cohortsql.cohort_shapley(frame, prediction="prediction", **options)
        here = cohortsql.cohort_shapley(titanic, prediction="prediction", **options)
        measured[name] = float(np.abs(on_cluster.shapley - here.shapley).max())
        if on_cluster.bootstrap is not None:
            measured[name + " (intervals)"] = float(np.abs(on_cluster.bootstrap.shapley_low - here.bootstrap.shapley_low).max())
    table = cohortsql.shapley_table(frame, prediction="prediction", similarity=kinds, id="id").toArrow()
    here = cohortsql.cohort_shapley(titanic, prediction="prediction", similarity=kinds, id="id").local
    joined = pl.from_arrow(table).join(here, on=["id", "feature"], suffix="_here")
    measured["shapley_table"] = float((joined["shapley"] - joined["shapley_here"]).abs().max())
    measured["shapley_table rows"] = joined.height
    measured["expected rows"] = here.height
    measured["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    print(json.dumps(measured))
    spark.stop()
    """
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory) -> Iterator[tuple[str, dict[str, str]]]:
    """The URL of a standalone master with `WORKERS` registered 1-core workers, and the environment
    its driver runs in; stopped when the module's tests end."""
    pyspark = pytest.importorskip("pyspark", reason="the spark extra is not installed")
    if shutil.which("java") is None:
        pytest.skip("Spark needs a Java runtime (java not found)")
    home = Path(pyspark.__file__).parent
    logs = tmp_path_factory.mktemp("cluster")
    environment = os.environ | {
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,  # the executors' Python workers: this environment, with cohortsql
        "SPARK_NO_DAEMONIZE": "1",
    }
    environment.pop("SPARK_REMOTE", None)
    port = _free_port()
    master_log = logs / "master.log"
    started = [
        subprocess.Popen(
            [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
            + ["--port", str(port), "--webui-port", str(_free_port())],
            env=environment,
            stdout=master_log.open("w"),
            stderr=subprocess.STDOUT,
        )
    ]
    url = f"spark://127.0.0.1:{port}"
    for number in range(WORKERS):
        started.append(
            subprocess.Popen(
                [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1"]
                + ["--cores", "1", "--memory", "1g", "--webui-port", str(_free_port())]
                + ["--work-dir", str(logs / f"work{number}")],
                env=environment,
                stdout=(logs / f"worker{number}.log").open("w"),
                stderr=subprocess.STDOUT,
            )
        )
    try:
        # Waits on the condition, not a clock: a busy machine makes the start slower, and the test's own
        # timeout (below) is the only limit.
        while master_log.read_text(errors="replace").count("Registering worker") < WORKERS:
            if any(process.poll() is not None for process in started):
                pytest.fail(f"the standalone cluster did not start:\n{master_log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.5)
        yield url, environment
    finally:
        for process in started:  # a throw-away cluster: nothing of it needs a graceful stop
            process.kill()
        for process in started:
            process.wait()


@pytest.mark.skipif(
    os.environ.get(RUN_CLUSTER) != "1", reason=f"a standalone cluster takes minutes to start: {RUN_CLUSTER}=1 runs it"
)
@pytest.mark.timeout(CLUSTER_TEST_SECONDS)
def test_a_standalone_cluster_computes_what_duckdb_computes(standalone_cluster):
    url, environment = standalone_cluster
    titanic = Path(__file__).parents[2] / "examples" / "data" / "titanic_predictions.parquet"
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, url, str(titanic)],
        env=environment,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    assert measured["executors"] == WORKERS  # executors in processes of their own, not the driver's
    for name in ("every kind", "weights, bootstrap, a predicate", "weights, bootstrap, a predicate (intervals)"):
        assert measured[name] < 1e-12, measured
    assert measured["grouping sets"] < 1e-12, measured
    assert measured["shapley_table"] < 1e-12 and measured["shapley_table rows"] == measured["expected rows"], measured
