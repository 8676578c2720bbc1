"""Similarity kinds: text forms, validation, and their rendered SQL run by DuckDB on literal rows."""

import duckdb
import pytest

from cohortsql import (
    AbsoluteWindow,
    Bins,
    CohortError,
    Exact,
    QuantileWindow,
    RangeWindow,
    RelativeWindow,
    SqlPredicate,
    parse_similarity,
)
from cohortsql.compile import similarity_test
from cohortsql.plan import ResolvedFeature


@pytest.mark.parametrize(
    "text, kind",
    [
        ("exact", Exact()),
        ("abs:2.5", AbsoluteWindow(2.5)),
        ("absolute:1", AbsoluteWindow(1)),
        ("relative:0.05", RelativeWindow(0.05)),
        ("range:0.1", RangeWindow(0.1)),
        ("quantile:0.1", QuantileWindow(0.1)),
        ("quantile:0.1:0.25", QuantileWindow(0.1, 0.25)),
        ("bins:10", Bins(10)),
        (" RANGE:0.1 ", RangeWindow(0.1)),
        ("sql:abs(s.age - t.age) <= 5", SqlPredicate("abs(s.age - t.age) <= 5")),
        ("sql: s.a:: INTEGER = t.a", SqlPredicate("s.a:: INTEGER = t.a")),
    ],
)
def test_parse(text, kind):
    assert parse_similarity(text) == kind


@pytest.mark.parametrize(
    "text",
    ["exact", "abs:2.5", "relative:0.05", "range:0.1", "quantile:0.1", "quantile:0.1:0.25", "bins:10", "sql:s.a = t.a"],
)
def test_text_round_trip(text):
    assert str(parse_similarity(text)) == text


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("abs:-1", "abs delta must be a finite number >= 0, got -1"),
        ("relative:nan", "relative delta must be a finite number >= 0"),
        ("range:inf", "range fraction"),
        ("quantile:0.1:0.5", "quantile p must be in [0, 0.5)"),
        ("bins:0", "bins needs a whole number of bins >= 1, got 0"),
        ("bins:2.5", "bins needs a whole number"),
        ("abs", "malformed similarity 'abs'"),
        ("abs:x", "malformed similarity 'abs:x'"),
        ("abs:1:2", "malformed similarity 'abs:1:2'"),
        ("window:3", "malformed similarity 'window:3': expected exact, abs:<delta>"),
        ("exact:1", "malformed similarity 'exact:1'"),
        ("sql:", "sql: similarity needs a SQL boolean expression"),
    ],
)
def test_malformed_text(text, fragment):
    with pytest.raises(CohortError) as raised:
        parse_similarity(text)
    assert fragment in str(raised.value)


def test_objects_validate_too():
    with pytest.raises(CohortError, match="abs delta"):
        AbsoluteWindow(-0.1)
    with pytest.raises(CohortError, match="bins"):
        Bins(True)


def evaluate(kind, statistics, pairs, missing=True):
    """Run the library's NULL-safe similarity test for column x on literal (subject, target) rows."""
    feature = ResolvedFeature("x", kind, "x", statistics, has_missing=missing)
    rows = ", ".join(f"({s}, {t})" for s, t in pairs)
    sql = f"SELECT {similarity_test(feature)} FROM (VALUES {rows}) AS pairs(sx, tx), LATERAL (SELECT sx AS x) AS s, LATERAL (SELECT tx AS x) AS t"
    return [value for (value,) in duckdb.sql(sql).fetchall()]


NULL = "NULL::DOUBLE"


def test_windows_are_inclusive_and_null_safe():
    pairs = [(1.0, 3.5), (1.0, 3.6), (6.0, 3.5), (NULL, NULL), (NULL, 1.0), (1.0, NULL)]
    assert evaluate(AbsoluteWindow(2.5), {}, pairs) == [True, False, True, True, False, False]


def test_relative_window_scales_with_the_target():
    pairs = [(9.0, 10.0), (8.9, 10.0), (10.0, 9.0), (0.0, 0.0), (0.1, 0.0)]
    assert evaluate(RelativeWindow(0.1), {}, pairs, missing=False) == [True, False, False, True, False]


def test_range_and_quantile_windows_use_table_statistics():
    pairs = [(0.0, 1.0), (0.0, 1.01)]
    assert evaluate(RangeWindow(0.1), {"min": 0.0, "max": 10.0}, pairs) == [True, False]
    assert evaluate(QuantileWindow(0.5), {"low": 2.0, "high": 4.0}, pairs) == [True, False]


def test_bins_split_the_range_and_keep_the_maximum_in_the_last_bin():
    statistics = {"min": 0.0, "max": 3.0}
    pairs = [(0.0, 0.99), (0.99, 1.0), (2.0, 3.0), (3.0, 2.5), (NULL, 3.0), (NULL, NULL)]
    assert evaluate(Bins(3), statistics, pairs) == [True, False, True, True, False, True]


def test_bins_of_a_constant_column_are_one_bin():
    assert evaluate(Bins(4), {"min": 2.0, "max": 2.0}, [(2.0, 2.0), (NULL, 2.0)]) == [True, False]


def test_exact_is_null_safe():
    assert evaluate(Exact(), {}, [(1, 1), (1, 2), (NULL, NULL), (NULL, 1)]) == [True, False, True, False]


def test_sql_predicate_keeps_the_target_in_its_own_cohort():
    kind = SqlPredicate("s.x > t.x")  # not reflexive on its own
    assert evaluate(kind, {}, [(2.0, 1.0), (1.0, 1.0), (0.0, 1.0), (NULL, NULL), (NULL, 1.0)]) == [
        True,
        True,
        False,
        True,
        False,
    ]
