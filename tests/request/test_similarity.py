"""Similarity kinds: text forms, validation, and their rendered SQL run by DuckDB on literal rows."""

import pyarrow as pa
import pytest

from cohortsql import CohortError
from cohortsql.queries.histogram import similarity_test
from cohortsql.queries.statistics import literal_parameters
from cohortsql.request.features import ResolvedFeature
from cohortsql.request.similarity import (
    AbsoluteWindow,
    Bins,
    Exact,
    QuantileWindow,
    RangeWindow,
    RelativeWindow,
    SqlPredicate,
)
from cohortsql.request.similarity_text import parse_similarity


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
    [
        "exact",
        "abs:2.5",
        "relative:0.05",
        "range:0.1",
        "quantile:0.1",
        "quantile:0.1:0.25",
        "bins:10",
        "bins:9007199254740992",
        "sql:s.a = t.a",
    ],
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
        ("bins:1e19", "bins:1e+19 is more bins than a bin number computed in doubles tells apart: at most 2^53"),
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
    Bins(2**53)
    with pytest.raises(CohortError, match=r"at most 2\^53 \(9,007,199,254,740,992\); for one bin per value, use exact"):
        Bins(2**53 + 1)  # Spark overflowed from 2^63 bins (1e19), DuckDB computed them: neither now


def evaluate(engine, kind, parameters, pairs, missing=True):
    """Run the library's NULL-safe similarity test for a column on literal (subject, target) rows, on `engine`."""
    feature = ResolvedFeature("x", 0, "float", kind, "float", parameters, has_missing=missing)
    table = pa.table(
        {
            "position": list(range(len(pairs))),
            "sx": pa.array([s for s, _ in pairs], pa.float64()),
            "tx": pa.array([t for _, t in pairs], pa.float64()),
        }
    )
    running = engine.open()
    try:
        dialect = running.dialect
        pairs_table = running.upload(table, "pairs")
        column = dialect.quote(feature.column)
        test = similarity_test(feature, literal_parameters(feature, dialect), dialect)
        sql = (
            f"SELECT {test} AS similar FROM (SELECT position, sx AS {column} FROM {pairs_table}) AS s"
            f" JOIN (SELECT position, tx AS {column} FROM {pairs_table}) AS t ON s.position = t.position"
            " ORDER BY s.position"
        )
        return running.fetch_arrow(sql, context="test").column("similar").to_pylist()
    finally:
        running.close()


NULL = None


def test_windows_are_inclusive_and_null_safe(engine):
    pairs = [(1.0, 3.5), (1.0, 3.6), (6.0, 3.5), (NULL, NULL), (NULL, 1.0), (1.0, NULL)]
    assert evaluate(engine, AbsoluteWindow(2.5), {"delta": 2.5}, pairs) == [True, False, True, True, False, False]


def test_relative_window_scales_with_the_target(engine):
    pairs = [(9.0, 10.0), (8.9, 10.0), (10.0, 9.0), (0.0, 0.0), (0.1, 0.0)]
    assert evaluate(engine, RelativeWindow(0.1), {}, pairs, missing=False) == [True, False, False, True, False]


def test_range_and_quantile_windows_use_their_width(engine):
    pairs = [(0.0, 1.0), (0.0, 1.01)]
    assert evaluate(engine, RangeWindow(0.1), {"delta": 1.0}, pairs) == [True, False]
    assert evaluate(engine, QuantileWindow(0.5), {"delta": 1.0}, pairs) == [True, False]


def test_bins_split_the_range_and_keep_the_maximum_in_the_last_bin(engine):
    parameters = {"low": 0.0, "range": 3.0}
    pairs = [(0.0, 0.99), (0.99, 1.0), (2.0, 3.0), (3.0, 2.5), (NULL, 3.0), (NULL, NULL)]
    assert evaluate(engine, Bins(3), parameters, pairs) == [True, False, True, True, False, True]


def test_bins_of_a_constant_column_are_one_bin(engine):
    assert evaluate(engine, Bins(4), {"low": 2.0, "range": 0.0}, [(2.0, 2.0), (NULL, 2.0)]) == [True, False]


def test_exact_is_null_safe(engine):
    assert evaluate(engine, Exact(), {}, [(1, 1), (1, 2), (NULL, NULL), (NULL, 1)]) == [True, False, True, False]


def test_sql_predicate_keeps_the_target_in_its_own_cohort(engine):
    kind = SqlPredicate("s.__cohort_f0 > t.__cohort_f0")  # not reflexive on its own
    pairs = [(2.0, 1.0), (1.0, 1.0), (0.0, 1.0), (NULL, NULL), (NULL, 1.0)]
    assert evaluate(engine, kind, {}, pairs) == [True, True, False, True, False]


def test_durations_for_dates_and_timestamps():
    assert parse_similarity("abs:12h") == AbsoluteWindow(12, "h")
    assert AbsoluteWindow(12, "h").width == 0.5
    assert AbsoluteWindow(2, "w").width == 14
    assert str(AbsoluteWindow(30, "min")) == "abs:30min"
    with pytest.raises(CohortError, match="unit must be one of"):
        AbsoluteWindow(1, "fortnight")


@pytest.mark.parametrize("text", ["sql:s.a = t.a; DROP TABLE x", "sql:s.a = t.a) OR (1 = 1", "sql:'unterminated"])
def test_sql_kinds_are_one_expression(text):
    with pytest.raises(CohortError):
        parse_similarity(text)


def test_timestamp_windows_compare_whole_microseconds(engine):
    """abs:1h over hourly data: each hour's cohort is itself and its neighbours, symmetric and inclusive
    (in floating-point days the sizes came out 1, 2, 2, 1, ...)."""
    import datetime

    import numpy as np
    import polars as pl

    import cohortsql

    hours = pl.datetime_range(datetime.datetime(2024, 1, 1), datetime.datetime(2024, 1, 1, 9), "1h", eager=True)
    frame = pl.DataFrame({"t": hours, "y": np.arange(10.0)})
    expected = [2, 3, 3, 3, 3, 3, 3, 3, 3, 2]
    for kind in ("abs:1h", "abs:60min", "abs:3600s", "range:0.2"):
        result = cohortsql.cohort_shapley(frame, prediction="y", similarity={"t": kind}, **engine.options)
        assert result.cohort_size.tolist() == expected, kind
    days = pl.DataFrame({"t": pl.date_range(datetime.date(2024, 1, 1), datetime.date(2024, 1, 10), eager=True)})
    result = cohortsql.cohort_shapley(
        days.with_columns(y=pl.Series(np.arange(10.0))), prediction="y", similarity={"t": "abs:36h"}, **engine.options
    )
    assert result.cohort_size.tolist() == expected
