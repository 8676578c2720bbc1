"""Names reach SQL text only through the quoting helpers, comments included: column names built to
break out of a quoted identifier, a string literal or a comment (a newline then a COPY, ``*/``,
quotes of every kind, backslashes, a Unicode line separator, dollar quotes) are read as names by the
printed query of every dialect, which DuckDB, Spark and a real PostgreSQL server run to the library's
values, with no statement beside it; BigQuery's and Snowflake's output parses as one statement."""

import numpy as np
import polars as pl
import pytest
import sqlglot

import cohortsql

HOSTILE = [
    "x\n; COPY (SELECT 1) TO '{trap}'; --",
    "a*/ DROP TABLE t; /*c",
    'it\'s "q" `b`',
    "back\\slash\\' ;",
    "line\u2028sep\r\n-- x",
    "$$dollar$$; --",
]
PREDICTION = "pred'\n--;"
ID = "id\"`'"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    trap = tmp_path_factory.mktemp("trap") / "injected.csv"
    names = [name.replace("{trap}", str(trap)) for name in HOSTILE]
    rng = np.random.default_rng(33)
    frame = pl.DataFrame({name: rng.integers(0, 3, 30).astype(float) for name in names}).with_columns(
        pl.Series(PREDICTION, rng.normal(size=30)), pl.Series(ID, np.arange(30))
    )
    similarity = {name: "abs:1" if index % 2 else "exact" for index, name in enumerate(names)}
    return frame, similarity, trap


def printed(frame, similarity, dialect, variant):
    return cohortsql.sql_query(
        frame, prediction=PREDICTION, similarity=similarity, id=ID, table="hostile", dialect=dialect, variant=variant
    )


@pytest.fixture(scope="module", params=["duckdb", "spark", "postgres"])
def run(request, hostile):
    """How a printed query runs where the table `hostile` was loaded (its dialect, and a function)."""
    frame = hostile[0]
    if request.param == "postgres":
        from postgres import fetch, load_table

        connection = request.getfixturevalue("postgres")
        load_table(connection, "hostile", frame)
        return "postgres", lambda sql: fetch(connection, sql)
    if request.param == "spark":
        session = request.getfixturevalue("spark_session")
        session.createDataFrame(frame.to_arrow()).createOrReplaceTempView("hostile")
        return "spark", lambda sql: pl.from_arrow(session.sql(sql).toArrow())
    import duckdb

    connection = duckdb.connect()
    connection.register("hostile", frame.to_arrow())
    return "duckdb", lambda sql: connection.sql(sql).pl()


def test_hostile_names_are_names_in_every_printed_dialect(hostile, run):
    frame, similarity, trap = hostile
    dialect, execute = run
    direct = cohortsql.cohort_shapley(frame, prediction=PREDICTION, similarity=similarity, id=ID)
    values = execute(printed(frame, similarity, dialect, "values"))
    assert values["feature"].to_list() == list(similarity) * frame.height
    np.testing.assert_allclose(values["shapley"].to_numpy().reshape(direct.shapley.shape), direct.shapley, atol=1e-9)
    effects = execute(printed(frame, similarity, dialect, "effects"))
    assert sorted(effects["feature"].to_list()) == sorted(similarity)
    histogram = execute(printed(frame, similarity, dialect, "histogram"))
    assembled = cohortsql.assemble(histogram, similarity=similarity)
    np.testing.assert_allclose(assembled.shapley, direct.shapley, atol=1e-9)
    assert not trap.exists()


@pytest.mark.parametrize("dialect", ["bigquery", "snowflake", "postgres"])
@pytest.mark.parametrize("variant", ["values", "histogram", "effects"])
def test_translated_output_is_one_statement_whose_comments_hold_the_names(hostile, dialect, variant):
    frame, similarity, _ = hostile
    text = printed(frame, similarity, dialect, variant)
    lines = text.split("\n")
    leading = next(index for index, line in enumerate(lines) if not line.startswith("--"))
    header, body = lines[:leading], "\n".join(lines[leading:])  # a name's own line break may start "--"
    assert len(sqlglot.parse(body, read=dialect)) == 1
    assert all("\u2028" not in line and "*/" not in line for line in header)
    assert any('"x\\n; COPY' in line for line in header)  # the name, escaped, inside the comment


def test_a_name_holding_nul_is_refused_not_cut():
    frame = pl.DataFrame({"a\0b": [1.0, 2.0, 3.0], "y": [0.1, 0.2, 0.3]})
    with pytest.raises(cohortsql.CohortError, match="NUL character"):
        cohortsql.sql_query(frame, prediction="y", similarity=["a\0b"], table="t")
