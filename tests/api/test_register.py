"""cohortsql from SQL: `cohortsql.register` adds to a DuckDB connection the table function
``cohort_shapley`` and the scalar function ``cohort_shapley_values``; both equal `cohort_shapley`."""

import duckdb
import numpy as np
import polars as pl
import pytest
from test_values_sql import SIMILARITY
from test_values_sql import frame as frame  # noqa: F401 (the shared fixture)

import cohortsql

TEXT = ", ".join(f"{name}={kind}" for name, kind in SIMILARITY.items())


@pytest.fixture
def connection(frame):  # noqa: F811
    connection = duckdb.connect()
    connection.register("staged", frame.to_arrow())
    connection.execute("CREATE TABLE loans AS SELECT * FROM staged")
    connection.unregister("staged")
    cohortsql.register(connection)
    return connection


def same(values: pl.DataFrame, direct) -> None:
    assert values.columns == ["id", "feature", "shapley", "shapley_squared"]
    assert values["id"].unique(maintain_order=True).to_list() == direct.ids.to_list()
    assert values["feature"].to_list() == list(direct.features) * direct.ids.len()
    np.testing.assert_allclose(values["shapley"].to_numpy().reshape(direct.shapley.shape), direct.shapley, atol=1e-12)
    np.testing.assert_allclose(
        values["shapley_squared"].to_numpy().reshape(direct.shapley.shape), direct.shapley_squared, atol=1e-10
    )


@pytest.mark.parametrize(
    "arguments, options",
    [
        ("id := 'loan'", {"id": "loan"}),
        (
            "id := 'loan', targets := 'region = ''north'' AND tenure > 2', weight := 'w'",
            {"id": "loan", "targets": "region = 'north' AND tenure > 2", "weight": "w"},
        ),
        ("", {}),
    ],
    ids=["every row", "a predicate, weighted", "row positions"],
)
def test_the_table_function_equals_cohort_shapley(connection, frame, arguments, options):  # noqa: F811
    extra = f", {arguments}" if arguments else ""
    values = connection.sql(
        f"SELECT * FROM cohort_shapley('loans', 'score', '{TEXT.replace(chr(39), chr(39) * 2)}'{extra})"
    ).pl()
    same(values, cohortsql.cohort_shapley(frame, prediction="score", similarity=SIMILARITY, **options))


def test_the_table_function_reads_files_and_composes_with_sql(connection, frame, tmp_path):  # noqa: F811
    path = tmp_path / "loans.parquet"
    frame.write_parquet(path)
    relation = connection.sql(
        f"SELECT feature, avg(abs(shapley)) AS importance FROM cohort_shapley('{path}', 'score', 'age, region=exact',"
        " id := 'loan') GROUP BY feature ORDER BY feature"
    )
    direct = cohortsql.cohort_shapley(path, prediction="score", similarity=["age", "region"], id="loan")
    assert relation.fetchall() == relation.fetchall()  # a relation binds its query again when it runs
    importance = dict(relation.fetchall())
    np.testing.assert_allclose(
        [importance["age"], importance["region"]], np.abs(direct.shapley).mean(axis=0), rtol=1e-12
    )


def test_the_scalar_function_finishes_a_printed_histogram(connection, frame):  # noqa: F811
    histogram = cohortsql.histogram_sql(frame, prediction="score", similarity=SIMILARITY, id="loan", table="loans")
    names = "[" + ", ".join(f"'{name}'" for name in SIMILARITY) + "]"
    values = connection.sql(
        "SELECT target AS id, unnest(cohort_shapley_values(list(mask0), list(subjects), list(sum_y), "
        f"{names}), recursive := true) FROM ({histogram}) GROUP BY target ORDER BY id"
    ).pl()
    same(
        values.sort("id", "position", maintain_order=True).drop("position"),
        cohortsql.cohort_shapley(frame, prediction="score", similarity=SIMILARITY, id="loan"),
    )


@pytest.mark.parametrize(
    "sql, message",
    [
        ("SELECT * FROM cohort_shapley('staged_frame', 'score', 'age')", "store it with CREATE TABLE"),
        ("SELECT * FROM cohort_shapley('loans', 'score', 'age=range:x')", "range"),
        ("SELECT * FROM cohort_shapley('loans', 'score', 'age, age')", "names feature 'age' twice"),
        ("SELECT * FROM cohort_shapley('loans', 'score', 'nope=exact')", "nope"),
        ("SELECT * FROM cohort_shapley('loans', 'score', 'age', targets := 'age; DROP TABLE loans')", "';'"),
        ("SELECT * FROM cohort_shapley('loans', NULL, 'age')", "needs prediction"),
        ("SELECT cohort_shapley_values([0, 3], [1.0, 1.0], [1.0, 2.0], ['a'])", "outside 0 .. 2^1 - 1"),
        ("SELECT cohort_shapley_values([0], [1.0], [1.0], ['a'])", "no row with every bit set"),
        ("SELECT cohort_shapley_values([1], [0.0], [1.0], ['a'])", "weights must be positive"),
        ("SELECT cohort_shapley_values([1], [1.0, 2.0], [1.0], ['a'])", "of the same length"),
    ],
)
def test_mistakes_in_sql_are_one_error_naming_them(connection, frame, sql, message):  # noqa: F811
    connection.register("staged_frame", frame.to_arrow())
    with pytest.raises(duckdb.Error, match=message.replace("(", r"\(").replace("^", r"\^").replace(".", r"\.")):
        connection.execute(sql)
    assert connection.execute("SELECT count(*) FROM loans").fetchall() == [(frame.height,)]
