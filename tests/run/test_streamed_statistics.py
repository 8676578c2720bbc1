"""A wide table's plain features (`exact` integers, booleans, text, dates) have their missing values and
distinct values counted from the streamed columns (`cohortsql.run.streamed_statistics`), not by one
statement of two aggregates per feature: the statement is as long at 400 features as at 70, and every
feature resolves as the SQL statistics resolve it (missing values, the warnings about many levels and
id-like columns, on columns whose distinct values are kept and on one that has too many to keep)."""

from __future__ import annotations

import datetime
import re
import warnings

import numpy as np
import polars as pl
import pytest

import cohortsql
from cohortsql.engines.duckdb import DuckDBEngine
from cohortsql.run import preparation, streamed_statistics


def wide(features: int, rows: int = 6_000) -> tuple[pl.DataFrame, dict[str, str]]:
    rng = np.random.default_rng(features)
    columns: dict[str, object] = {f"b{j}": rng.integers(0, 2, rows).astype(np.int8) for j in range(features - 8)}
    columns["with_missing"] = pl.Series([None if i % 7 == 0 else i % 3 for i in range(rows)], dtype=pl.Int64)
    columns["flag"] = rng.uniform(size=rows) < 0.5
    columns["word"] = pl.Series([None if word == "-" else word for word in rng.choice(["a", "b", "c", "-"], rows)])
    columns["day"] = [datetime.date(2026, 1, 1) + datetime.timedelta(days=int(k)) for k in rng.integers(0, 90, rows)]
    columns["many"] = rng.integers(0, 60, rows)  # more than MANY_LEVELS: a warning
    columns["like_an_id"] = np.arange(rows)  # more distinct values than are kept: estimated by DuckDB
    # fewer values than are kept, but more bytes than a column's share: estimated by DuckDB too
    columns["long_text"] = [f"{i % 400:04d}" + "x" * 3_000 for i in range(rows)]
    columns["category"] = pl.Series(rng.choice(["low", "mid", "high"], rows)).cast(pl.Categorical)
    frame = pl.DataFrame(columns).with_columns(y=pl.Series(rng.normal(size=rows))).with_row_index("id")
    return frame, {name: "exact" for name in columns}


def resolved(frame: pl.DataFrame, kinds: dict[str, str]) -> tuple[tuple, list[str]]:
    """The resolved features of a call on `frame` and the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with DuckDBEngine.open(None, cohortsql.engines.base.EngineSettings()) as engine:
            prepared = preparation.prepare(
                engine, frame, outcomes=("y",), similarity=kinds, id="id", target_predicate=None, max_features=2_000
            )
    return prepared.features, sorted(str(warning.message) for warning in caught)


@pytest.fixture
def statements(monkeypatch) -> list[tuple[str, str]]:
    """The (context, SQL) of every few-row result DuckDB reads."""
    seen: list[tuple[str, str]] = []
    original = DuckDBEngine.fetch_few_rows

    def recording(self, select, *, context):
        seen.append((context, select))
        return original(self, select, context=context)

    monkeypatch.setattr(DuckDBEngine, "fetch_few_rows", recording)
    return seen


def test_plain_features_resolve_as_the_statistics_statement_resolves_them(monkeypatch, statements):
    frame, kinds = wide(80)
    here, said_here = resolved(frame, kinds)
    [estimate] = [sql for context, sql in statements if context == "estimating the features' distinct values"]
    assert '"like_an_id"' in estimate and '"long_text"' in estimate and '"many"' not in estimate
    monkeypatch.setattr(streamed_statistics, "STREAMED_FROM_FEATURES", 10**9)
    by_sql, said_by_sql = resolved(frame, kinds)
    # the same features warned about, in the same words (a count kept here is exact, DuckDB's an estimate)
    assert [re.sub(r"\d+", "N", said) for said in said_here] == [re.sub(r"\d+", "N", said) for said in said_by_sql]
    assert any("'many'" in said for said in said_here) and any("'like_an_id'" in said for said in said_here)
    for streamed, counted in zip(here, by_sql, strict=True):
        assert streamed.has_missing == counted.has_missing, streamed.name
        assert streamed.representation == counted.representation, streamed.name
        assert streamed.levels == pytest.approx(counted.levels, rel=0.05), streamed.name
    levels = {feature.name: feature.levels for feature in here}
    assert levels["with_missing"] == 3 and levels["word"] == 3 and levels["flag"] == 2 and levels["many"] == 60
    assert levels["category"] == 3
    missing = {feature.name: feature.has_missing for feature in here}
    assert missing["with_missing"] and missing["word"] and not missing["b0"] and not missing["flag"]


def test_the_statistics_statement_does_not_grow_with_plain_features(statements):
    """The statement names each column once (in the hash of the distinct rows), where it held two
    aggregates of about 100 characters per feature."""
    for features in (70, 400):
        frame, kinds = wide(features, rows=300)
        resolved(frame, kinds)
    narrow, wide_statement = [sql for context, sql in statements if context == "computing table statistics"]
    assert ":levels" not in wide_statement and ":nulls" not in wide_statement
    assert len(wide_statement) - len(narrow) <= 10 * (400 - 70)


def floats(features: int, rows: int = 2_000) -> pl.DataFrame:
    """Float features for `abs` windows: one with NaN, one with missing values, one float32, the rest plain."""
    rng = np.random.default_rng(features)
    columns: dict[str, object] = {f"x{j}": rng.normal(size=rows) for j in range(features - 3)}
    columns["with_nan"] = np.where(np.arange(rows) % 9 == 0, np.nan, rng.normal(size=rows))
    columns["with_missing"] = pl.Series([None if i % 5 == 0 else float(i % 11) for i in range(rows)])
    columns["narrow"] = pl.Series(rng.normal(size=rows), dtype=pl.Float32)
    return pl.DataFrame(columns).with_columns(y=pl.Series(rng.normal(size=rows))).with_row_index("id")


def test_float_windows_are_counted_here_and_resolve_as_the_statement_resolves_them(monkeypatch, statements):
    """A window of given width needs its missing, NaN and infinite values: counted from the streamed
    columns, its width left in the statement (1,024 such windows cost 1.9 s of statement at 1,000 rows)."""
    frame = floats(80)
    kinds = {name: "abs:0.5" for name in frame.columns if name not in ("id", "y")}
    here, said_here = resolved(frame, kinds)
    [statement] = [sql for context, sql in statements if context == "computing table statistics"]
    assert ":nan" not in statement and ":infinite" not in statement and ":nulls" not in statement
    assert statement.count(":parameter:delta") == 80
    assert not any(context == "estimating the features' distinct values" for context, _ in statements)
    monkeypatch.setattr(streamed_statistics, "STREAMED_FROM_FEATURES", 10**9)
    by_sql, said_by_sql = resolved(frame, kinds)
    assert here == by_sql and said_here == said_by_sql
    features = {feature.name: feature for feature in here}
    assert features["with_nan"].representation == "float" and features["x0"].representation == "double"
    assert features["with_missing"].has_missing and not features["x0"].has_missing
    assert features["narrow"].parameters == {"delta": 0.5}


@pytest.mark.parametrize("source", ["frame", "file"])
def test_an_infinite_value_among_streamed_windows_is_refused_naming_its_feature(tmp_path, source):
    frame = floats(70).with_columns(x3=pl.when(pl.col("id").is_in([4, 9])).then(-np.inf).otherwise(pl.col("x3")))
    data: object = frame
    if source == "file":
        data = str(tmp_path / "rows.parquet")
        frame.write_parquet(data)
    kinds = {name: "abs:0.5" for name in frame.columns if name not in ("id", "y")}
    with pytest.raises(cohortsql.CohortError, match="feature 'x3' has 2 infinite values"):
        cohortsql.cohort_shapley(data, prediction="y", similarity=kinds, id="id", targets=[1], method="integrated")
