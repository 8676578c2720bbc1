"""Shared fixtures: the engines every correctness test runs on.

`engine` is parametrised over DuckDB and Spark: a test that takes it runs once per engine and passes
``**engine.options`` to the API. Spark tests share one local session (2 cores, no UI) and are skipped,
with the reason, where pyspark or Java is missing.
"""

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

ENGINES = ["duckdb", "spark"]


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
def spark_session():
    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    if shutil.which("java") is None:
        pytest.skip("Spark needs a Java runtime (java not found)")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("cohortsql-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(params=ENGINES)
def engine(request) -> EngineUnderTest:
    if request.param == "spark":
        return EngineUnderTest("spark", {"connection": request.getfixturevalue("spark_session")})
    return EngineUnderTest("duckdb")


@pytest.fixture
def duckdb_only(engine):
    """Skip a parametrised test on engines other than DuckDB (for DuckDB-specific inputs)."""
    if engine.name != "duckdb":
        pytest.skip("DuckDB-specific")
    return engine
