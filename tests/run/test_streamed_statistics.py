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
