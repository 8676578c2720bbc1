"""A float feature's NaN and infinite values are one count of the statistics pass
(`cohortsql.queries.statistics.NONFINITE`), not two, and are counted apart only for the features that
have any (`cohortsql.run.feature_statistics.count_nonfinite_values`): on every engine the values are
those of the same data with each NaN written as a missing value and each infinity as a value the column
does not otherwise hold, and a window over infinite values is still refused with their number."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import cohortsql
from cohortsql.run import feature_statistics, preparation

ROWS = 90
CONTEXT = "counting NaN and infinite values"


@pytest.fixture
def records(monkeypatch) -> list[tuple[str, str]]:
    """The (context, SQL) of every one-row statistic the preparation reads."""
    seen: list[tuple[str, str]] = []
    for module in (preparation, feature_statistics):

        def recording(engine, select, *, context, _original=module.fetch_record):
            seen.append((context, select))
            return _original(engine, select, context=context)

        monkeypatch.setattr(module, "fetch_record", recording)
    return seen


def table(nan: float = np.nan, infinity: float = np.inf) -> pl.DataFrame:
    """Four float features: one clean, one with NaN (written `nan`), one with missing values, one with
    infinities (written `infinity`) among few levels."""
    rng = np.random.default_rng(7)
    positions = np.arange(ROWS)
    return pl.DataFrame(
        {
            "id": positions,
            "clean": rng.normal(size=ROWS),
            "with_nan": np.where(positions % 9 == 4, nan, rng.normal(size=ROWS)),
            "with_missing": pl.Series([None if i % 5 == 0 else float(i % 11) for i in positions]),
            "levels": np.where(positions % 7 == 3, infinity, (positions % 3).astype(float)),
            "y": rng.normal(size=ROWS),
        },
        strict=False,
    )


KINDS = {"clean": "abs:0.5", "with_nan": "abs:0.5", "with_missing": "abs:0.5", "levels": "exact"}


def shapley(data: pl.DataFrame, engine) -> np.ndarray:
    result = cohortsql.cohort_shapley(
        data, prediction="y", similarity=KINDS, id="id", targets=[0, 3, 4, 10, 17], **engine.options
    )
    return result.shapley


def test_nan_and_infinities_are_one_count_and_counted_apart_only_where_they_are(engine, records):
    found = shapley(table(), engine)
    [statement] = [sql for context, sql in records if context == "computing table statistics"]
    assert ":nan" not in statement and ":infinite" not in statement
    assert statement.count(":nonfinite") == len(KINDS)
    [apart] = [sql for context, sql in records if context == CONTEXT]
    assert "with_nan" in apart and "levels" in apart
    assert "clean" not in apart and "with_missing" not in apart
    # NaN is a missing value of a window; an infinity one more level of an exact feature
    rewritten = table().with_columns(
        with_nan=pl.when(pl.col("with_nan").is_nan()).then(None).otherwise(pl.col("with_nan")),
        levels=pl.when(pl.col("levels").is_infinite()).then(1e300).otherwise(pl.col("levels")),
    )
    records.clear()
    expected = shapley(rewritten, engine)
    assert not any(context == CONTEXT for context, _ in records)
    np.testing.assert_allclose(found, expected, rtol=0, atol=1e-12)


def test_a_table_without_nan_or_infinities_counts_them_in_no_query_of_their_own(engine, records):
    shapley(table(nan=0.25, infinity=5.0), engine)
    assert [context for context, _ in records].count("computing table statistics") == 1
    assert not any(context == CONTEXT for context, _ in records)


def test_a_window_over_infinite_values_is_refused_with_their_number(engine):
    data = table().with_columns(clean=pl.when(pl.col("id").is_in([2, 8])).then(-np.inf).otherwise(pl.col("clean")))
    with pytest.raises(cohortsql.CohortError, match="feature 'clean' has 2 infinite values"):
        shapley(data, engine)
