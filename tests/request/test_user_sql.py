"""The caller's SQL (targets predicates, sql: similarities, data queries) can never become a second
statement: checked as DuckDB's own lexer and parser read it, and as Spark reads backslashes."""

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

import cohortsql
from cohortsql.engines import open_engine
from cohortsql.request.user_sql import check_expression

DOLLAR_INJECTION = (
    "$$'$$ IS NULL), FALSE) AS x FROM read_parquet($$f.parquet$$); COPY (SELECT 42) TO $$m.csv$$;"
    " SELECT coalesce(($$'$$ IS NOT NULL"
)
"""Closes the predicate's parentheses inside a dollar-quoted string that a quote scanner misreads."""

TAGGED_INJECTION = DOLLAR_INJECTION.replace("$$", "$q$")


@pytest.fixture
def scores(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    pl.DataFrame({"id": [1, 2, 3, 4], "a": [1, 2, 3, 4], "y": [1.0, 2.0, 3.0, 4.0]}).write_parquet("f.parquet")
    return tmp_path


@pytest.mark.parametrize("predicate", [DOLLAR_INJECTION, TAGGED_INJECTION])
def test_a_targets_predicate_cannot_run_a_second_statement(scores, engine, predicate):
    with pytest.raises(cohortsql.CohortError, match="one SQL expression"):
        cohortsql.cohort_shapley(
            "f.parquet", prediction="y", similarity=["a"], id="id", targets=predicate, **engine.options
        )
    assert not (scores / "m.csv").exists()  # before the fix, DuckDB ran the COPY hidden in the predicate


def test_a_sql_similarity_cannot_run_a_second_statement(scores):
    with pytest.raises(cohortsql.CohortError, match="one SQL expression"):
        cohortsql.cohort_shapley("f.parquet", prediction="y", similarity={"a": "sql:" + DOLLAR_INJECTION}, id="id")
    assert not (scores / "m.csv").exists()


def test_the_command_line_refuses_the_injection_and_writes_nothing(scores):
    done = subprocess.run(
        [sys.executable, "-m", "cohortsql", "shapley", "f.parquet", "--prediction", "y", "--features", "a"]
        + ["--id", "id", "--targets", DOLLAR_INJECTION],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(cohortsql.__file__).parent.parent)},
    )
    assert done.returncode == 2 and "one SQL expression" in done.stderr
    assert not (scores / "m.csv").exists()


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM read_parquet('f.parquet'); COPY (SELECT 42) TO 'm.csv'",
        "SELECT * FROM read_parquet($$f.parquet$$) WHERE $$'$$ = $$'$$; COPY (SELECT 42) TO $$m.csv$$",
        "WITH x AS (SELECT 1) SELECT * FROM read_parquet('f.parquet'); COPY (SELECT 42) TO 'm.csv'",
    ],
)
def test_a_data_query_is_one_select(scores, query):
    with pytest.raises(cohortsql.CohortError, match="statement"):
        cohortsql.cohort_shapley(query, prediction="y", similarity=["a"], id="id")
    assert not (scores / "m.csv").exists()


@pytest.mark.parametrize(
    "predicate",
    [
        "a > 1",
        "a IN (1, 2) AND (a <> 3)",
        "$$a b$$ <> 'x'",
        "$t$fine$t$ = 'fine'",
        "'a;b)' <> 'x'",
        "a > 1 -- a comment with ; and )",
        "/* ; ) */ a > 1",
        '"a" > 1',
        "E'\\n' <> 'x'",
    ],
)
def test_expressions_with_quoted_semicolons_and_parentheses_are_accepted(scores, predicate):
    result = cohortsql.cohort_shapley("f.parquet", prediction="y", similarity=["a"], id="id", targets=predicate)
    assert result.local.height > 0


def test_text_that_is_a_statement_to_one_engine_is_refused():
    """Spark has no dollar quotes: to it, this text holds a ';' and an unopened ')'."""
    with pytest.raises(cohortsql.CohortError, match="one SQL expression"):
        check_expression("$$a;b)$$ <> 'x'", "targets")


def test_a_data_query_with_quoted_semicolons_is_accepted(scores):
    query = "SELECT *, $$;$$ AS note FROM read_parquet('f.parquet') WHERE a <> 0"
    with open_engine() as engine:
        assert engine.check_query(query, "the data query") == query
    result = cohortsql.cohort_shapley(query, prediction="y", similarity=["a"], id="id")
    assert result.local.height == 4


@pytest.mark.parametrize(
    ("predicate", "kind"), [("a + 1", "int"), ("'yes'", "string"), ("CAST(a AS DOUBLE)", "double")]
)
def test_a_targets_predicate_must_be_true_or_false(engine, predicate, kind):
    data = pl.DataFrame({"a": [1, 2, 3, 4], "y": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(cohortsql.CohortError, match=f"true/false condition.*{kind}"):
        cohortsql.cohort_shapley(data, prediction="y", similarity=["a"], targets=predicate, **engine.options)


PIECES = [
    "$$",
    "$q$",
    "'",
    "''",
    '"',
    "`",
    "(",
    ")",
    ";",
    "--",
    "\n",
    "/*",
    "*/",
    "\\",
    "E'",
    " a ",
    " COPY (SELECT 1) TO 'x' ",
]


@seed(20261124)
@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=12).map("".join))
def test_an_accepted_expression_stays_one_statement_wherever_it_is_placed(text):
    """Whatever pieces of quotes, comments, parentheses and statements a text is made of: if it is
    accepted, DuckDB reads every query cohortsql places it in as one statement."""
    try:
        check_expression(text, "targets")
    except cohortsql.CohortError:
        return
    for placed in (
        f"SELECT coalesce(({text}), FALSE) AS t FROM x",
        f"SELECT count(*) FROM s, t WHERE (s.a IS NOT DISTINCT FROM t.a OR coalesce({text}, FALSE))",
    ):
        try:
            statements = duckdb.extract_statements(placed)
        except duckdb.Error:
            continue  # not SQL at all: the engine refuses it, nothing runs
        assert len(statements) == 1, placed
