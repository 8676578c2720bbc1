"""The matrix's axis of a table name's *spelling*: an output table is never the run's input however
its name is written (qualified with the schema or the database, quoted, in another case), on every
command that writes tables and on every engine, because each engine is asked which table a name
resolves to (`Engine.table_identity`), never a comparison of texts. A view is the tables it reads.
PostgreSQL's spellings are in ``tests/engines/test_adbc.py``."""

from __future__ import annotations

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app

DUCKDB_SPELLINGS = [
    "db.main.scores",
    '"db"."main"."scores"',
    "DB.MAIN.SCORES",
    "db.scores",
    "main.scores",
    '"main"."Scores"',
    "SCORES",
]
"""The input table ``scores`` of database file ``db.duckdb`` (attached as ``db``), spelt seven ways."""

COMMANDS = {
    "shapley": ["--prediction", "y", "--features", "x"],
    "effects": ["--prediction", "y", "--features", "x"],
    "game": ["--game", "cohort-variance", "--prediction", "y", "--features", "x"],
    "uniqueness": ["--features", "x"],
}


@pytest.fixture
def database(tmp_path):
    path = tmp_path / "db.duckdb"
    with duckdb.connect(str(path)) as connection:
        connection.execute(
            "CREATE TABLE scores AS SELECT range AS id, range % 3 AS x, (range % 3) * 1.5 + range * 0.01 AS y"
            " FROM range(30)"
        )
    return path


def _unchanged(path) -> None:
    with duckdb.connect(str(path), read_only=True) as connection:
        assert connection.execute("SELECT count(*), CAST(sum(y) AS DOUBLE) FROM scores").fetchall() == [(30, 49.35)]


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("into", DUCKDB_SPELLINGS)
def test_no_spelling_of_the_input_table_is_written_over(database, command, into):
    arguments = [command, f"{database}:scores", *COMMANDS[command], "--id", "id"]
    done = CliRunner().invoke(app, [*arguments, "--into-table", into, "--database", str(database), "--replace"])
    assert done.exit_code == 2 and "it is this run's input" in done.output, done.output
    _unchanged(database)


def test_the_tests_never_write_over_the_input_table(database, tmp_path):
    """``insertion-deletion`` writes its tables too: not over the table it reads."""
    values = tmp_path / "values.parquet"
    explained = ["--prediction", "y", "--features", "x", "--id", "id"]
    done = CliRunner().invoke(app, ["shapley", f"{database}:scores", *explained, "--out", str(values)])
    assert done.exit_code == 0, done.output
    for into in ("DB.MAIN.SCORES", '"db"."main"."scores"'):
        done = CliRunner().invoke(
            app,
            ["insertion-deletion", f"{database}:scores", *explained, "--attributions", str(values)]
            + ["--into-table", into, "--database", str(database), "--replace"],
        )
        assert done.exit_code == 2 and "it is this run's input" in done.output, done.output
    _unchanged(database)


def test_another_table_of_the_database_is_written(database):
    arguments = ["shapley", f"{database}:scores", *COMMANDS["shapley"], "--id", "id"]
    done = CliRunner().invoke(app, [*arguments, "--into-table", "db.main.explained", "--database", str(database)])
    assert done.exit_code == 0, done.output
    with duckdb.connect(str(database), read_only=True) as connection:
        assert connection.execute("SELECT count(*) FROM explained").fetchall() == [(30,)]
    _unchanged(database)


@pytest.mark.parametrize(
    ("data", "into"),
    [
        ("scores", "memory.main.scores"),
        ("scores", '"memory"."main"."SCORES"'),
        ("scores", "main.Scores"),
        ("v", "scores"),  # a view's table
        ("SELECT * FROM scores WHERE x > 0", "memory.scores"),  # a query's table
    ],
)
def test_shapley_table_on_a_connection_never_writes_over_what_it_reads(data, into):
    connection = duckdb.connect()
    connection.execute("CREATE TABLE scores AS SELECT range AS id, range % 3 AS x, range * 0.5 AS y FROM range(20)")
    connection.execute("CREATE VIEW v AS SELECT * FROM scores")
    with pytest.raises(cohortsql.CohortError, match="it is this run's input"):
        cohortsql.shapley_table(
            data, prediction="y", similarity=["x"], id="id", into=into, replace=True, connection=connection
        )
    assert connection.execute("SELECT count(*) FROM scores").fetchall() == [(20,)]


@pytest.mark.parametrize(
    "into", ["spark_catalog.default.spelt", "default.SPELT", "`default`.`spelt`", "`spark_catalog`.`default`.`Spelt`"]
)
def test_spark_resolves_each_spelling_to_its_catalogs_table(spark_session, into):
    spark_session.sql("DROP TABLE IF EXISTS spelt")
    frame = pl.DataFrame({"id": range(20), "x": [row % 3 for row in range(20)], "y": [row * 0.5 for row in range(20)]})
    spark_session.createDataFrame(frame.to_pandas()).write.saveAsTable("spelt")
    try:
        with pytest.raises(cohortsql.CohortError, match="it is this run's input"):
            cohortsql.shapley_table(
                "spelt", prediction="y", similarity=["x"], id="id", into=into, replace=True, connection=spark_session
            )
        assert spark_session.table("spelt").count() == 20
        assert set(spark_session.table("spelt").columns) == {"id", "x", "y"}
    finally:
        spark_session.sql("DROP TABLE IF EXISTS spelt")
