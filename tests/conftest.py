"""Shared fixtures: the engines every correctness test runs on.

`engine` is parametrised over DuckDB, Spark and PostgreSQL through ADBC: a test that takes it runs
once per engine and passes ``**engine.options`` to the API. Spark tests share one local session (2 cores, no UI) and are skipped,
with the reason, where pyspark or Java is missing. The same JVM also serves Spark Connect on a free
local port, so `spark_connect` is a remote session on the same Spark, as a cluster's clients see it.
"""

import os
import shutil
import signal
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

settings.register_profile(
    "cohortsql",
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("cohortsql")
"""Every property test of the suite: no deadline (a busy machine makes an example slower, never wrong;
timing belongs in benchmarks/), and examples derived from each test's name, so that every run draws the
same ones (seeds are constants)."""

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
"""A suite started in the background by a shell without job control (``pytest ... &``, nohup, cron)
inherits Ctrl-C as ignored, and so would every command it starts: the tests that press Ctrl-C would
see nothing happen. Python's own handler is put back, for this process and (reset to the default by
exec) for its children. xdist's workers read this file too."""

ENGINES = ["duckdb", "spark", "adbc"]


@dataclass(frozen=True)
class EngineUnderTest:
    """An engine's name and the keyword arguments that make the API run on it."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)

    def open(self):
        """The engine itself, for tests that run SQL through the protocol."""
        from cohortsql.engines import open_engine

        return open_engine(engine=self.name, connection=self.options.get("connection"))

    def __str__(self) -> str:
        return self.name


@pytest.fixture(scope="session")
def spark_session(tmp_path_factory):
    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    if shutil.which("java") is None:
        pytest.skip("Spark needs a Java runtime (java not found)")
    from pyspark.sql import SparkSession

    # Python functions on the executors (shapley_table, the SQL table function) run this interpreter,
    # whose environment has cohortsql, not whatever `python3` the PATH finds first.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with socket.socket() as probe:  # a free port for Spark Connect's server
        probe.bind(("localhost", 0))
        port = probe.getsockname()[1]
    session = (
        SparkSession.builder.master("local[2]")
        .appName("cohortsql-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-warehouse")))
        .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
        .config("spark.connect.grpc.binding.port", str(port))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_connect(spark_session):
    """A Spark Connect session on the shared Spark (skipped without pyspark's connect extra)."""
    pytest.importorskip("grpc", reason="Spark Connect needs pyspark[connect]")
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    port = spark_session.conf.get("spark.connect.grpc.binding.port")
    session = ConnectSession.builder.remote(f"sc://localhost:{port}").getOrCreate()
    session.conf.set("spark.sql.shuffle.partitions", "2")
    session.conf.set("spark.sql.session.timeZone", "UTC")
    yield session
    session.stop()


@pytest.fixture(params=["classic", "connect"])
def spark_client(request):
    """The shared Spark through each kind of session: classic (py4j) and Spark Connect (gRPC)."""
    return request.getfixturevalue("spark_session" if request.param == "classic" else "spark_connect")


@pytest.fixture(params=ENGINES)
def engine(request) -> EngineUnderTest:
    if request.param == "spark":
        return EngineUnderTest("spark", {"connection": request.getfixturevalue("spark_session")})
    if request.param == "adbc":
        return EngineUnderTest("adbc", {"connection": request.getfixturevalue("adbc_postgres")})
    return EngineUnderTest("duckdb")


@pytest.fixture
def duckdb_only(engine):
    """Skip a parametrised test on engines other than DuckDB (for DuckDB-specific inputs)."""
    if engine.name != "duckdb":
        pytest.skip("DuckDB-specific")
    return engine


@pytest.fixture
def local_files(engine):
    """Skip a parametrised test on engines that read no files of this machine: a warehouse reads its
    own tables (the adbc engine refuses a path in one line, see tests/engines/test_adbc.py)."""
    if engine.name == "adbc":
        pytest.skip("the adbc engine reads the server's tables, not this machine's files")
    return engine


@pytest.fixture(scope="session")
def postgres():
    """An autocommit connection to a PostgreSQL server of the tests' own (see tests/postgres.py);
    skipped, with the reason, where the server or psycopg is missing."""
    pytest.importorskip("psycopg", reason="the PostgreSQL tests need psycopg (the dev extra)")
    from postgres import running_server, server_binaries

    binaries = server_binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL server (initdb, pg_ctl) found: apt-get install postgresql")
    with running_server(binaries) as connection:
        yield connection


@pytest.fixture(scope="session")
def postgres_uri(postgres) -> str:
    """The URI of the tests' PostgreSQL server, as the command line's --engine takes it."""
    return f"postgresql://cohortsql@localhost:{postgres.info.port}/postgres"


@pytest.fixture(scope="session")
def adbc_postgres(postgres_uri):
    """An ADBC connection (autocommit) to the tests' PostgreSQL server: the adbc engine of the correctness suite."""
    dbapi = pytest.importorskip("adbc_driver_postgresql.dbapi", reason="the postgres extra is not installed")
    connection = dbapi.connect(postgres_uri, autocommit=True)
    yield connection
    connection.close()


CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium driven by selenium, for the report's tests (skipped, with the reason, without them)."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (dev extra)")
    if not (shutil.which("chromium") or Path(CHROMIUM).exists()) or not Path(CHROMEDRIVER).exists():
        pytest.skip("no Chromium: apt-get install chromium chromium-driver (.ci/run does)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1100,1400",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def pytest_xdist_make_scheduler(config, log):
    """The suite runs in two processes (``-n 2``, pytest-xdist): every test whose id names Spark in
    one unit of work (but those that start a Spark of their own, `SPARK_OF_THEIR_OWN`), so that one
    worker starts the shared Spark session once while the other runs everything else; each other
    test is its own unit. (xdist's ``loadgroup`` marks do not reach the ids under pytest 9.2, so the
    unit is read from the id.)"""
    from xdist.scheduler import LoadScopeScheduling

    class SparkInOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "spark" if on_the_shared_spark(nodeid) else nodeid

    return SparkInOneWorker(config, log)


SPARK_FIXTURES = {"spark_session", "spark_connect", "spark_client"}
SPARK_OF_THEIR_OWN = (
    "test_a_spark_run_of_the_command_line_prints_no_spark_log_lines",
    "test_executors_without_the_libraries_are_one_line",
    "test_a_spark_master_spark_would_refuse_is_one_line_before_java_starts",
)
"""Tests that start Spark in a process of their own (never the shared session): any worker runs them."""


def on_the_shared_spark(nodeid: str) -> bool:
    """Whether a test (by its id) belongs with the shared Spark session's tests."""
    name = nodeid.split("::")[-1].split("[")[0]
    return "spark" in nodeid.lower() and name not in SPARK_OF_THEIR_OWN


SPARK_ROWS = "COHORTSQL_SPARK_ROWS"
"""Set to 1 (CI does, in ``.ci/run``): run the Spark rows of the tests every engine runs. Without it those
rows are skipped, with the reason, and `python -m pytest` takes about 7 minutes on 2 cores instead of 10;
the tests about Spark itself (Spark in their names: Spark against DuckDB on every option, its Connect
clients, its tables, failures and executors) run either way."""


def spark_row(nodeid: str) -> bool:
    """Whether a test (by its id) is the Spark row of a test parametrised over engines or surfaces:
    Spark only in its parameters (``test_weights.py::test_x[spark-1]``), not in its file's or its name."""
    test, _, parameters = nodeid.partition("[")
    return "spark" in parameters.lower() and "spark" not in test.lower()


def pytest_collection_modifyitems(items):
    """A test on the shared Spark session must name Spark in its id (see `pytest_xdist_make_scheduler`);
    the Spark rows of the tests every engine runs wait for `SPARK_ROWS`."""
    unnamed = [
        item.nodeid
        for item in items
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())) and not on_the_shared_spark(item.nodeid)
    ]
    if unnamed:
        raise pytest.UsageError(f"tests on Spark must have 'spark' in their names: {', '.join(unnamed)}")
    if os.environ.get(SPARK_ROWS) != "1":
        skip = pytest.mark.skip(reason=f"a Spark row of a test every engine runs: {SPARK_ROWS}=1 runs it (CI does)")
        for item in items:
            if spark_row(item.nodeid):
                item.add_marker(skip)
