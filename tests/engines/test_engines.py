"""The engine seam: Spark equals DuckDB case by case, inputs only one engine reads, and the import rule."""

import ast
import socket
import threading
import time
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app
from cohortsql.engines import engine_for

PACKAGE = Path(cohortsql.__file__).parent


def table(seed=0, n=90):
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "key": [f"k{i:03d}" for i in range(n)],
            "x": rng.uniform(0, 10, n),
            "z": rng.integers(0, 4, n),
            "label": pl.Series(rng.choice(["a", "b", None], n).tolist(), dtype=pl.String),
            "day": pl.date_range(pl.date(2024, 1, 1), pl.date(2024, 1, 1) + pl.duration(days=n - 1), eager=True),
            "y": rng.normal(size=n) + 1e9,
        }
    )


CASES = {
    "windows": dict(similarity={"x": "quantile:0.2", "z": "abs:1", "day": "abs:10"}),
    "mixed": dict(similarity={"x": "range:0.15", "label": "exact", "z": "bins:2"}, targets="z >= 2"),
    "sql-kind": dict(similarity={"x": "sql:abs(s.x - t.x) < 2 AND s.z = t.z", "label": "exact"}, targets=[3, 50]),
    "defaults": dict(similarity=["x", "z", "label", "day"], targets=25, seed=9),
    "grouping-sets": dict(similarity={"z": "exact", "label": "exact", "x": "bins:3"}, path="grouping_sets"),
    "ids": dict(similarity={"x": "abs:2", "label": "exact"}, id="key", targets=["k005", "k077"]),
    "permutation": dict(
        similarity={"x": "abs:2", "z": "exact", "day": "range:0.2"},
        method="permutation",
        seed=4,
        targets=[0, 1, 2],
        max_permutations=30,
    ),
    "weights-bootstrap": dict(
        similarity={"x": "abs:2", "label": "exact", "day": "range:0.1"},
        weight="z",
        bootstrap=10,
        seed=3,
        targets=[1, 2, 3],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_spark_equals_duckdb(spark_client, case, monkeypatch):
    """Every batch's mask histogram built on the executors (`cohortsql.engines.spark_histogram`; SQL's
    for the sql: kind and for replicates in long form), equal to DuckDB's SQL."""
    from cohortsql.engines import spark as spark_engine  # pyspark is an extra

    monkeypatch.setattr(spark_engine, "EXECUTOR_HISTOGRAM_PAIRS", 0)
    frame = table()
    options = CASES[case]
    on_duckdb = cohortsql.cohort_shapley(frame, prediction="y", **options)
    on_spark = cohortsql.cohort_shapley(frame, prediction="y", connection=spark_client, **options)
    assert on_spark.ids.to_list() == on_duckdb.ids.to_list()
    assert on_spark.similarity == on_duckdb.similarity
    np.testing.assert_allclose(on_spark.shapley, on_duckdb.shapley, atol=1e-12)
    np.testing.assert_allclose(on_spark.shapley_squared, on_duckdb.shapley_squared, atol=1e-12)
    assert on_spark.totals["cohort_size"].to_list() == on_duckdb.totals["cohort_size"].to_list()
    np.testing.assert_allclose(on_spark.totals["cohort_mean"], on_duckdb.totals["cohort_mean"], rtol=1e-15)
    assert on_spark.targets.equals(on_duckdb.targets)
    if on_duckdb.shapley_se is not None:
        np.testing.assert_allclose(on_spark.shapley_se, on_duckdb.shapley_se, atol=1e-12)


def test_spark_effects_equal_duckdb(spark_client):
    frame = table(1)
    for similarity in ({"z": "exact", "label": "exact"}, {"x": "abs:1", "z": "exact"}):
        on_duckdb = cohortsql.variance_shapley(frame, prediction="y", similarity=similarity)
        on_spark = cohortsql.variance_shapley(frame, prediction="y", similarity=similarity, connection=spark_client)
        assert on_spark.path == on_duckdb.path
        np.testing.assert_allclose(
            on_spark.effects["shapley_effect"], on_duckdb.effects["shapley_effect"], rtol=1e-10, atol=1e-14
        )


def test_spark_dataframes_need_an_id(spark_client):
    """A DataFrame alone runs on the session it belongs to (classic or Connect)."""
    frame = table(2)
    data = spark_client.createDataFrame(frame.to_arrow())
    with pytest.raises(cohortsql.CohortError, match="Spark does not promise a row order.*pass id="):
        cohortsql.cohort_shapley(data, prediction="y", similarity=["x"])
    result = cohortsql.cohort_shapley(data, prediction="y", similarity=["x"], id="key", targets=["k001"])
    expected = cohortsql.cohort_shapley(frame, prediction="y", similarity=["x"], id="key", targets=["k001"])
    np.testing.assert_allclose(result.shapley, expected.shapley, atol=1e-12)


def test_spark_tables_by_name_and_csv_files(spark_client, tmp_path):
    frame = table(3)
    spark_client.createDataFrame(frame.to_arrow()).createOrReplaceTempView("scores")
    result = cohortsql.cohort_shapley(
        "scores", prediction="y", similarity=["x", "z"], id="key", connection=spark_client
    )
    expected = cohortsql.cohort_shapley(frame, prediction="y", similarity=["x", "z"], id="key")
    np.testing.assert_allclose(result.shapley, expected.shapley, atol=1e-12)
    frame.write_csv(tmp_path / "scores.csv")
    with pytest.raises(cohortsql.CohortError, match="pass id="):
        cohortsql.cohort_shapley(
            str(tmp_path / "scores.csv"), prediction="y", similarity=["x"], connection=spark_client
        )
    from_csv = cohortsql.cohort_shapley(
        str(tmp_path / "scores.csv"), prediction="y", similarity=["x", "z"], id="key", connection=spark_client
    )
    np.testing.assert_allclose(from_csv.shapley, expected.shapley, atol=1e-12)
    frame.write_parquet(tmp_path / "scores.parquet")  # numbered by file and row index: no id needed
    from_parquet = cohortsql.cohort_shapley(
        str(tmp_path / "scores.parquet"), prediction="y", similarity=["x", "z"], connection=spark_client
    )
    np.testing.assert_allclose(
        from_parquet.shapley, cohortsql.cohort_shapley(frame, prediction="y", similarity=["x", "z"]).shapley, atol=1e-12
    )


def start_session():
    """The session the command line starts on Spark (imported here: pyspark is an extra)."""
    from cohortsql.engines.spark_session import start_session as started

    return started()


def test_a_spark_run_of_the_command_line_prints_no_spark_log_lines(tmp_path):
    """Spark's default log profile printed eight lines of banner and warnings before the output."""
    import subprocess
    import sys

    pytest.importorskip("pyspark")
    data = tmp_path / "s.parquet"
    pl.DataFrame({"a": np.arange(30) % 3, "y": np.arange(30) / 30}).write_parquet(data)
    command = [sys.executable, "-m", "cohortsql", "shapley", str(data), "--prediction", "y", "--features", "a"]
    done = subprocess.run([*command, "--engine", "spark"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "30 targets x 1 features" in done.stdout
    noise = [line for line in done.stderr.splitlines() if " WARN " in line or "log4j" in line]
    assert not noise, done.stderr


def test_spark_tables_written_from_the_command_line(spark_client, monkeypatch, tmp_path):
    """--into-table on Spark (classic, or Connect through SPARK_REMOTE): the tables and the runs log,
    and no table replaced without --replace."""
    remote = type(spark_client).__module__.startswith("pyspark.sql.connect")
    if remote:
        port = spark_client.conf.get("spark.connect.grpc.binding.port")
        monkeypatch.setenv("SPARK_REMOTE", f"sc://localhost:{port}")
        assert type(start_session()).__module__.startswith("pyspark.sql.connect")
    frame = table(5)
    frame.write_parquet(tmp_path / "scores.parquet")
    name = "explained_connect" if remote else "explained_classic"
    arguments = ["run", str(tmp_path / "scores.parquet"), "--prediction", "y", "--features", "x,z"]
    arguments += ["--engine", "spark", "--into-table", name, "--targets", "z >= 2"]
    try:
        result = CliRunner().invoke(app, arguments)
        assert result.exit_code == 0, result.output
        written = spark_client.table(name).toArrow()
        expected = cohortsql.cohort_shapley(frame, prediction="y", similarity=["x", "z"], targets="z >= 2")
        assert written.num_rows == expected.local.height
        np.testing.assert_allclose(
            pl.from_arrow(written).sort("id", "feature")["shapley"].to_numpy(),
            expected.local.sort("id", "feature")["shapley"].to_numpy(),
            atol=1e-12,
        )
        assert "computed and written by spark" in result.output  # through shapley_table: nothing on the driver
        assert not spark_client.catalog.tableExists(f"{name}_totals")
        assert spark_client.table("cohortsql_runs").filter(f"tables LIKE '{name}%'").count() == 1
        again = CliRunner().invoke(app, arguments)
        assert again.exit_code == 2 and f"table '{name}' already exists; pass --replace" in again.output
    finally:
        for suffix in ("", "_totals"):
            spark_client.sql(f"DROP TABLE IF EXISTS {name}{suffix}")


def test_an_unreachable_spark_connect_address_fails_at_once(spark_connect, monkeypatch):
    """In a second, not after minutes of retries, and without echoing the address's token."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("localhost", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("SPARK_REMOTE", f"sc://localhost:{port}/;token=s3cr3t")
    with pytest.raises(
        cohortsql.CohortError, match=rf"cannot reach Spark Connect at localhost:{port} \(from SPARK_REMOTE\)"
    ):
        start_session()
    arguments = ["run", "scores.parquet", "--prediction", "y", "--features", "x", "--engine", "spark"]
    result = CliRunner().invoke(app, arguments)
    # Said by cohortsql's own check of the address, before the client's minutes of retries could begin.
    assert result.exit_code == 2 and "cannot reach Spark Connect" in result.output and "s3cr3t" not in result.output
    monkeypatch.setenv("SPARK_REMOTE", "sc://localhost:port")
    with pytest.raises(cohortsql.CohortError, match="SPARK_REMOTE names no valid port"):
        start_session()


def test_spark_dataframes_stay_with_their_session(spark_session, spark_connect):
    frame = table(6)
    remote = spark_connect.createDataFrame(frame.to_arrow())
    with pytest.raises(cohortsql.CohortError, match="belongs to another SparkSession than connection="):
        cohortsql.cohort_shapley(remote, prediction="y", similarity=["x"], id="key", connection=spark_session)
    with pytest.raises(cohortsql.CohortError, match="connection must be a SparkSession for the spark engine"):
        cohortsql.cohort_shapley(remote, prediction="y", similarity=["x"], id="key", connection="spark")


def test_command_line_on_spark(spark_session, tmp_path):
    frame = table(4)
    frame.write_parquet(tmp_path / "scores.parquet")
    out = tmp_path / "out.parquet"
    arguments = ["run", str(tmp_path / "scores.parquet"), "--prediction", "y", "--features", "x,z", "--out", str(out)]
    result = CliRunner().invoke(app, [*arguments, "--engine", "spark"])
    assert result.exit_code == 0, result.output
    expected = cohortsql.cohort_shapley(frame, prediction="y", similarity=["x", "z"])
    np.testing.assert_allclose(
        pl.read_parquet(out)["shapley"].to_numpy(), expected.local["shapley"].to_numpy(), atol=1e-12
    )
    bad = CliRunner().invoke(app, [*arguments, "--spark-master", "local[1]"])
    assert bad.exit_code == 2 and "--spark-master is not a setting of the duckdb engine" in bad.output


def test_engine_choice_between_duckdb_and_spark(spark_session):
    import duckdb

    assert engine_for(pl.DataFrame(), None, None) == "duckdb"
    assert engine_for("scores.parquet", spark_session, None) == "spark"
    assert engine_for(spark_session.range(1), None, None) == "spark"
    assert engine_for(duckdb.sql("SELECT 1"), None, None) == "duckdb"
    with pytest.raises(cohortsql.CohortError, match="engine must be one of duckdb, spark, adbc"):
        engine_for(None, None, "postgres")
    with pytest.raises(cohortsql.CohortError, match="cannot read a spark connection"):
        engine_for(None, spark_session, "duckdb")
    with pytest.raises(cohortsql.CohortError, match="engine='duckdb' cannot read a spark connection"):
        cohortsql.cohort_shapley(
            pl.DataFrame({"x": [1.0], "y": [1.0]}),
            prediction="y",
            similarity=["x"],
            connection=spark_session,
            engine=cohortsql.DuckDB(memory_limit="1GB"),
        )


OWN_ENGINES = {PACKAGE / "engines", PACKAGE / "dialects"}
"""Where an engine's library may be imported and its name spelled: its module and its dialect's."""


def _outside_the_engines():
    for path in PACKAGE.rglob("*.py"):
        if path.parent not in OWN_ENGINES:
            yield path, ast.parse(path.read_text())


def test_no_module_outside_the_engines_imports_an_engine_library():
    for path, tree in _outside_the_engines():
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in ("duckdb", "pyspark", "adbc_driver_manager"), (
                    f"{path.name} imports {name}"
                )


def test_no_module_outside_the_engines_compares_an_engine_name():
    """Engines own their policy (their attributes say what they can do): nothing else asks which one it holds."""
    from cohortsql._typing import ENGINES

    for path, tree in _outside_the_engines():
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                named = [o.value for o in operands if isinstance(o, ast.Constant) and o.value in ENGINES]
                assert not named, f"{path.name}:{node.lineno} compares with engine name {named[0]!r}"


def test_small_arrow_tables_are_cut_into_batches_every_thread_can_scan():
    """DuckDB scans an Arrow table in tasks of 122,880 rows: a smaller one is cut into 16,384-row slices
    (same rows, no copy) so that every thread gets work; a large one is left to DuckDB."""
    from cohortsql.engines import duckdb_settings as duckdb_engine

    small = pa.table({"x": np.arange(100_000, dtype=np.float64)})
    cut = duckdb_engine.in_parallel_batches(small)
    assert [len(batch) for batch in cut.to_batches()] == [16_384] * 6 + [1_696]
    assert cut.equals(small)
    second = cut.column("x").chunk(1)
    assert second.offset == 16_384 and second.buffers()[1].address == small.column("x").chunk(0).buffers()[1].address
    large = pa.table({"x": np.zeros(2 * duckdb_engine.ARROW_TASK_ROWS)})
    assert duckdb_engine.in_parallel_batches(large) is large


def test_spark_queries_fail_in_one_line_and_stop_when_interrupted(spark_client):
    """A query failing while its rows stream back is one CohortError saying why, and Engine.interrupt
    (what Ctrl-C calls) stops a running query, on either kind of session."""
    from cohortsql.engines import open_engine

    engine = open_engine(engine="spark", connection=spark_client)
    with pytest.raises(cohortsql.CohortError, match=r"^the failing query: .*no such luck") as failed:
        engine.fetch_arrow("SELECT raise_error('no such luck') FROM range(3)", context="the failing query")
    assert "\n" not in str(failed.value) and "SQLSTATE" not in str(failed.value)
    heavy = "SELECT sum(hash(a.id, b.id)) FROM range(300000) AS a CROSS JOIN range(300000) AS b"  # minutes of work
    failures = []

    def run():
        try:
            engine.fetch_arrow(heavy, context="the heavy query")
        except cohortsql.CohortError as error:
            failures.append(str(error))

    worker = threading.Thread(target=run)
    worker.start()
    try:
        time.sleep(2)
        assert worker.is_alive()
        engine.interrupt()
        worker.join(150)  # the query takes minutes: ended here, it was stopped, however busy the machine
        assert not worker.is_alive()
        assert len(failures) == 1 and failures[0].startswith("the heavy query: ") and "cancel" in failures[0], failures
    finally:  # whatever happened, the heavy query must not outlive the test (it would slow every later one)
        connect = type(spark_client).__module__.startswith("pyspark.sql.connect.")
        (spark_client.interruptAll if connect else spark_client.sparkContext.cancelAllJobs)()
        worker.join(30)
        engine.close()


def test_a_calls_memory_limit_never_reaches_the_shared_database():
    """memory_limit is a setting of a whole DuckDB database: a call that sets one works in a database of
    its own, so other calls (and threads) on the shared one never run under it, even while it runs."""
    from cohortsql.engines import EngineSettings, open_engine
    from cohortsql.engines.duckdb_settings import shared_database as _shared_database

    def shared_limit():
        return _shared_database().execute("SELECT current_setting('memory_limit')").fetchall()

    before = shared_limit()
    limited = open_engine(engine="duckdb", settings=EngineSettings(memory_limit="20MB"))
    try:
        assert shared_limit() == before
        assert limited.memory_budget is not None and limited.memory_budget <= 21 * 2**20
    finally:
        limited.close()
    frame = pl.DataFrame({"x": [1, 2, 3, 4], "y": [0.1, 0.5, 0.9, 0.3]})
    cohortsql.cohort_shapley(frame, prediction="y", similarity=["x"], engine=cohortsql.DuckDB(memory_limit="20MB"))
    assert shared_limit() == before


def test_an_engine_implements_six_members_and_shares_the_rest():
    """The abstract core is six members (open, register an input, upload, fetch Arrow, run a statement,
    interrupt); the bookkeeping of named relations and of result tables is the base class's templates,
    which DuckDB and ADBC use rather than define again (Spark keeps its own `create`, of DataFrames)."""
    from cohortsql.engines.adbc import AdbcEngine
    from cohortsql.engines.base import Engine
    from cohortsql.engines.duckdb import DuckDBEngine
    from cohortsql.engines.spark import SparkEngine

    assert sorted(Engine.__abstractmethods__) == [
        "_execute",
        "fetch_arrow",
        "interrupt",
        "open",
        "register_input",
        "upload",
    ]
    templates = {"create", "drop", "_temporary_name", "write_tables", "check_writable", "temporary"}
    for backend in (DuckDBEngine, AdbcEngine):
        assert not templates & set(vars(backend)), backend.name
    assert not (templates - {"create"}) & set(vars(SparkEngine))
