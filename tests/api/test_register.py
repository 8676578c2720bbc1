"""cohortsql from SQL: `cohortsql.register` adds to a DuckDB connection the table function
``cohort_shapley`` and the scalar function ``cohort_shapley_values``; both equal `cohort_shapley`."""

import re

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
    histogram = cohortsql.sql_query(frame, prediction="score", similarity=SIMILARITY, id="loan", table="loans")
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


# -- the data the table function reads: as the caller's SQL reads the name, never a stale query ----------

SMALL = "income=abs:10, region=exact"


@pytest.fixture
def scores():
    connection = duckdb.connect()
    connection.execute(
        "CREATE TABLE scores AS SELECT * FROM (VALUES (1, 10.0, 'n', 0.2), (2, 30.0, 's', 0.7), (3, 20.0, 'n', 0.4),"
        " (4, 25.0, 's', 0.9), (5, 12.0, 's', 0.1)) AS v(loan, income, region, score)"
    )
    connection.execute('CREATE TABLE "scores x" AS SELECT loan, income, region, score * 3 AS score FROM scores')
    cohortsql.register(connection)
    return connection


def table_values(connection, data: str, method: str = "execute", similarity: str = SMALL) -> list[tuple]:
    sql = (
        f"SELECT id, feature, shapley FROM cohort_shapley({data!r}, 'score', '{similarity}', id := 'loan')"
        " ORDER BY id, feature"
    )
    return connection.execute(sql).fetchall() if method == "execute" else connection.sql(sql).fetchall()


def direct_values(connection, table: str, similarity: str = SMALL) -> list[tuple]:
    frame = connection.sql(f"SELECT * FROM {table}").pl()
    kinds = dict(part.strip().partition("=")[::2] for part in similarity.split(","))
    res = cohortsql.cohort_shapley(
        frame, prediction="score", similarity={name: kind or None for name, kind in kinds.items()}, id="loan"
    )
    return res.local.sort("id", "feature").select("id", "feature", "shapley").rows()


def close(left: list[tuple], right: list[tuple]) -> bool:
    return len(left) == len(right) and all(
        a[:2] == b[:2] and abs(a[2] - b[2]) < 1e-12 for a, b in zip(left, right, strict=True)
    )


def test_the_table_function_reads_a_name_as_sql_does(scores):
    assert close(table_values(scores, "scores"), direct_values(scores, "scores"))
    assert close(table_values(scores, '"scores x"'), direct_values(scores, '"scores x"'))
    assert close(table_values(scores, "main.scores"), direct_values(scores, "scores"))
    # unquoted, 'scores x' is the table scores with an alias to SQL: neither table is guessed
    with pytest.raises(duckdb.Error, match="not a table name as SQL writes one"):
        table_values(scores, "scores x")


MANY_INCOMES = (  # the same columns and types as before
    "CREATE OR REPLACE TABLE scores AS SELECT CAST(range + 1 AS INTEGER) AS loan,"
    " CAST(range * 1.5 AS DECIMAL(3, 1)) AS income, CASE WHEN range % 3 = 0 THEN 'n' ELSE 's' END AS region,"
    " CAST((range % 7) / 7 AS DECIMAL(2, 1)) AS score FROM range(60)"
)


@pytest.mark.parametrize("method", ["execute", "sql"])
@pytest.mark.parametrize(
    "change",
    [
        MANY_INCOMES,  # the default kind of income changes from exact to a window
        "UPDATE scores SET income = NULL WHERE loan IN (1, 4)",  # a feature without NULL gets some
    ],
    ids=["new default kinds", "new NULLs"],
)
def test_the_table_function_never_reuses_a_query_prepared_on_other_data(scores, method, change):
    similarity = "income, region=exact"
    table_values(scores, "scores", method, similarity)
    scores.execute(change)
    after = table_values(scores, "scores", method, similarity)  # at once: no time for any cache to expire
    assert close(after, direct_values(scores, "scores", similarity))


def test_the_table_function_refuses_values_the_data_no_longer_allow(scores):
    table_values(scores, "scores")
    scores.execute("UPDATE scores SET score = NULL WHERE loan = 3")
    with pytest.raises(duckdb.Error, match="NULL"):
        table_values(scores, "scores")


def test_a_temporary_table_shadowing_the_data_is_refused(scores):
    scores.execute('CREATE TEMP TABLE scores AS SELECT * FROM "scores x"')
    with pytest.raises(duckdb.Error, match="TEMP table or view named scores shadows"):
        table_values(scores, "scores")
    scores.execute("DROP TABLE temp.main.scores")
    scores.register("scores", scores.sql('SELECT * FROM "scores x"').to_arrow_table())  # a registered frame too
    with pytest.raises(duckdb.Error, match="shadows"):
        table_values(scores, "scores")


def test_the_table_function_reads_the_callers_schema(scores):
    """The query is prepared on the table the caller's SQL reads (its kinds settled there), not on a
    table of the same name in the default schema."""
    similarity = "income, region=exact"  # income's default kind depends on the table's values
    scores.execute("CREATE SCHEMA other")
    scores.execute(MANY_INCOMES.replace("OR REPLACE TABLE scores", "TABLE other.scores"))
    scores.execute("USE other")
    assert close(
        table_values(scores, "scores", similarity=similarity), direct_values(scores, "other.scores", similarity)
    )
    scores.execute("SET search_path = 'main'")
    assert close(
        table_values(scores, "scores", similarity=similarity), direct_values(scores, "main.scores", similarity)
    )


def test_every_connection_and_cursor_registers_its_own_functions(tmp_path):
    database = str(tmp_path / "scores.duckdb")
    first = duckdb.connect(database)
    first.execute(
        "CREATE TABLE scores AS SELECT range AS loan, range % 7 * 3.0 AS income, 'n' AS region,"
        " (range % 5) / 4 AS score FROM range(40)"
    )
    cohortsql.register(first)
    cursor = first.cursor()
    cohortsql.register(cursor)  # raised a CatalogException, and left the cursor without functions
    second = duckdb.connect(database)
    cohortsql.register(second)
    expected = table_values(first, "scores")
    assert table_values(cursor, "scores") == expected
    first.close()  # the second connection's functions are its own: they outlive the first
    assert close(table_values(second, "scores"), expected)
    assert second.execute("SELECT cohort_shapley_values([1], [1.0], [2.0], ['a'])").fetchall() == [
        ([{"position": 0, "feature": "a", "shapley": 0.0, "shapley_squared": 0.0}],)
    ]


@pytest.mark.parametrize("connection", [3, None, "duckdb"])
def test_register_refuses_what_is_no_connection(connection):
    with pytest.raises(cohortsql.CohortError, match="register needs a DuckDB connection or a SparkSession"):
        cohortsql.register(connection)


def test_repeated_histogram_rows_are_added_up(connection, frame):  # noqa: F811
    """A histogram computed in parts and joined by UNION ALL is the histogram of the whole: both the SQL
    function and assemble add its repeated (target, mask) rows (they kept one and counted all)."""
    histogram = cohortsql.sql_query(frame, prediction="score", similarity=SIMILARITY, id="loan", table="loans")
    whole = connection.sql(histogram).pl()
    halves = pl.concat(
        [
            whole.with_columns(pl.col("subjects") // 2, pl.col("sum_y") / 2, pl.col("sum_y2") / 2),
            whole.with_columns(pl.col("subjects") - pl.col("subjects") // 2, pl.col("sum_y") / 2, pl.col("sum_y2") / 2),
        ]
    ).filter(pl.col("subjects") > 0)
    # the halves' sums of y are halves only where both halves hold subjects: keep those rows' parts whole
    single = whole.filter(pl.col("subjects") == 1)
    parts = pl.concat([halves.join(single.select("target", "mask0"), on=["target", "mask0"], how="anti"), single])
    direct = cohortsql.cohort_shapley(frame, prediction="score", similarity=SIMILARITY, id="loan")
    np.testing.assert_allclose(cohortsql.assemble(parts, similarity=SIMILARITY).shapley, direct.shapley, atol=1e-9)
    connection.register("parts", parts.to_arrow())
    names = "[" + ", ".join(f"'{name}'" for name in SIMILARITY) + "]"
    values = connection.sql(
        "SELECT target AS id, unnest(cohort_shapley_values(list(mask0), list(subjects), list(sum_y), "
        f"{names}), recursive := true) FROM parts GROUP BY target ORDER BY id"
    ).pl()
    same(values.sort("id", "position", maintain_order=True).drop("position"), direct)


@pytest.mark.parametrize(
    "sql, message",
    [
        ("SELECT cohort_shapley_values([1, NULL], [1.0, 1.0], [1.0, 2.0], ['a'])", "hold NULL"),
        ("SELECT cohort_shapley_values([1], [1.0], [1.0], [NULL])", "feature names"),
        ("SELECT cohort_shapley_values([1], [1.0], [1.0], [])", "feature names"),
        ("SELECT cohort_shapley_values([-1, 1], [1.0, 1.0], [1.0, 1.0], ['a'])", "outside 0 .. 2^1 - 1"),
    ],
)
def test_malformed_histograms_in_sql_are_one_error(connection, sql, message):
    with pytest.raises(duckdb.Error, match=re.escape(message)):
        connection.execute(sql)


def test_a_null_histogram_has_null_values(connection):
    assert connection.execute("SELECT cohort_shapley_values(NULL, [1.0], [1.0], ['a'])").fetchall() == [(None,)]
