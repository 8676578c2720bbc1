"""``engine=`` as a configured object: ``cohortsql.DuckDB(memory_limit=..., temp_directory=...)`` and
``cohortsql.Spark(master=...)`` stand for the engine's name and its settings, from every surface
that takes ``engine=`` (and the command line's flags configure it); a setting given as an option of
its own, or an engine that does not exist, is refused in words."""

import re

import pytest

import cohortsql
from cohortsql._typing import ShapleyOptions
from cohortsql.request.options import checked_options
from cohortsql.run import session as session_module

FRAME = cohortsql.datasets.redlining()
ARGUMENTS = {"prediction": "denial", "similarity": ["zip", "income", "group"], "id": "id"}


@pytest.fixture
def opened(monkeypatch):
    """The engines the calls open, with the settings they were opened with."""
    found = []
    original = session_module.open_engine

    def recording(data, **keywords):
        found.append(keywords)
        return original(data, **keywords)

    monkeypatch.setattr(session_module, "open_engine", recording)
    return found


def test_a_configured_duckdb_sizes_the_engine_it_opens(opened, tmp_path):
    configured = cohortsql.DuckDB(memory_limit="400MB", temp_directory=tmp_path / "spill")
    result = cohortsql.cohort_shapley(FRAME, **ARGUMENTS, engine=configured)
    plain = cohortsql.cohort_shapley(FRAME, **ARGUMENTS)
    assert opened[0]["engine"] == "duckdb"
    assert opened[0]["settings"].memory_limit == "400MB"
    assert opened[0]["settings"].temp_directory == str(tmp_path / "spill")
    assert opened[1]["settings"].memory_limit is None
    assert (result.shapley == plain.shapley).all()
    FRAME.cohort.shapley(**ARGUMENTS, engine=cohortsql.DuckDB(memory_limit="300MB"))  # the polars namespace too
    assert opened[-1]["settings"].memory_limit == "300MB"


def test_the_command_lines_flags_configure_the_engine_that_runs(opened, tmp_path):
    """--memory-limit and --temp-directory (flags, or a config file's keys) become engine=DuckDB(...)."""
    from typer.testing import CliRunner

    from cohortsql.cli.app import app

    path = tmp_path / "redlining.parquet"
    FRAME.write_parquet(path)
    arguments = ["shapley", str(path), "--prediction", "denial", "--features", "zip,income,group", "--id", "id"]
    done = CliRunner().invoke(app, [*arguments, "--memory-limit", "300MB", "--temp-directory", str(tmp_path / "s")])
    assert done.exit_code == 0, done.output
    assert (opened[-1]["engine"], opened[-1]["settings"].memory_limit) == ("duckdb", "300MB")
    assert opened[-1]["settings"].temp_directory == str(tmp_path / "s")
    (tmp_path / "run.toml").write_text('memory_limit = "200MB"\n')
    done = CliRunner().invoke(app, [*arguments, "--config", str(tmp_path / "run.toml")])
    assert done.exit_code == 0, done.output
    assert opened[-1]["settings"].memory_limit == "200MB"
    done = CliRunner().invoke(app, arguments)
    assert done.exit_code == 0 and opened[-1]["settings"].memory_limit is None
    calibrated = ["calibrate", str(path), "--features", "income", "--runs", "1", "--memory-limit", "250MB"]
    done = CliRunner().invoke(app, calibrated)
    assert done.exit_code == 0, done.output
    assert opened[-1]["settings"].memory_limit == "250MB"


def test_a_configured_spark_names_its_master():
    options = checked_options({"engine": cohortsql.Spark(master="local[1]")}, ShapleyOptions)
    assert (options.where.engine, options.where.spark_master) == ("spark", "local[1]")
    options = checked_options({"engine": cohortsql.Spark()}, ShapleyOptions)
    assert (options.where.engine, options.where.spark_master) == ("spark", None)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"memory_limit": "1GB"},
            "memory_limit is a setting of one engine: pass engine=cohortsql.DuckDB(memory_limit=...)",
        ),
        ({"engine": "oracle"}, "engine must be one of duckdb, spark, adbc or a configured engine"),
        ({"engine": cohortsql.DuckDB(temp_directory=123)}, "DuckDB(temp_directory=...) must be a path (text), got 123"),
        ({"engine": cohortsql.Spark(master=3)}, "Spark(master=...) must be text, got 3"),
        (
            {"temp_directory": "/tmp"},
            "temp_directory is a setting of one engine: pass engine=cohortsql.DuckDB(temp_directory=...)",
        ),
        ({"engine": 3}, "engine must be one of duckdb, spark, adbc or a configured engine"),
        (
            {"spark_master": "local[1]"},
            "spark_master is a setting of one engine: pass engine=cohortsql.Spark(master=...)",
        ),
    ],
)
def test_a_configured_engine_refuses_in_words(options, message):
    with pytest.raises(cohortsql.CohortError, match=re.escape(message)):
        cohortsql.cohort_shapley(FRAME, **ARGUMENTS, **options)


def test_the_configured_engines_are_public_and_typed():
    assert cohortsql.DuckDB(memory_limit="1GB").name == "duckdb" and cohortsql.Spark().name == "spark"
    assert {"DuckDB", "Spark"} <= set(cohortsql.__all__)
