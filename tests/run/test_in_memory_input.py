"""Data that the engine scans in this process's memory (a frame on DuckDB, `Input.in_memory`) is read
there by the passes over every row that need no SQL: the plain features' statistics and the copy
check's rows when it reads them all. Each gives what the engine's query of a file of the same rows
gives (types included), with no query of its own; a file still goes through the engine."""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import polars as pl
import pytest

import cohortsql
from cohortsql.engines.duckdb import DuckDBEngine
from cohortsql.run import data_rows, preparation
from cohortsql.run.streamed_statistics import STREAMED_FROM_FEATURES


def table(rows: int = 500) -> pl.DataFrame:
    """Plain features of several types (enough of them to be counted apart), in shuffled id order."""
    rng = np.random.default_rng(5)
    columns: dict[str, object] = {
        f"b{j}": rng.integers(0, 2, rows).astype(np.int8) for j in range(STREAMED_FROM_FEATURES)
    }
    columns |= {
        "with_missing": pl.Series([None if i % 7 == 0 else i % 3 for i in range(rows)], dtype=pl.Int64),
        "flag": rng.uniform(size=rows) < 0.5,
        "word": pl.Series([None if word == "-" else word for word in rng.choice(["a", "b", "-"], rows)]),
        "day": [datetime.date(2026, 1, 1) + datetime.timedelta(days=int(k)) for k in rng.integers(0, 90, rows)],
        "category": pl.Series(rng.choice(["low", "mid", "high"], rows)).cast(pl.Categorical),
        "money": pl.Series([decimal.Decimal(int(k)) / 4 for k in rng.integers(0, 10, rows)], dtype=pl.Decimal(10, 2)),
        "like_an_id": rng.permutation(rows),
        "x": np.where(rng.uniform(size=rows) < 0.1, np.nan, rng.normal(size=rows)),
    }
    others = {  # columns that are no feature, which the copy check's rows hold too
        "tags": [["a", "b"][: k % 3] for k in range(rows)],
        "when": pl.Series([datetime.datetime(2026, 1, 1, k % 24) for k in range(rows)]).dt.replace_time_zone("UTC"),
        "big": pl.Series(rng.integers(0, 8, rows).astype(np.uint64) + np.uint64(2**63)),
        "blob": [bytes([k % 256]) for k in range(rows)],
        "span": pl.Series([datetime.timedelta(seconds=k) for k in range(rows)]),
        "point": [{"a": k, "b": str(k)} for k in range(rows)],
    }
    return pl.DataFrame(columns | others).with_columns(
        y=pl.Series(rng.normal(size=rows)), id=pl.Series(rng.permutation(rows))
    )


def kinds(frame: pl.DataFrame) -> dict[str, str]:
    others = ("id", "y", "tags", "when", "big", "blob", "span", "point")
    return {name: "abs:0.5" if name == "x" else "exact" for name in frame.columns if name not in others}


@pytest.fixture
def queries(monkeypatch) -> list[str]:
    """The context of every query DuckDB streams or reads back."""
    seen: list[str] = []
    for method in ("fetch_arrow", "fetch_few_rows", "arrow_batches"):
        original = getattr(DuckDBEngine, method)

        def recording(self, select, *, context, _original=original, **options):
            seen.append(context)
            return _original(self, select, context=context, **options)

        monkeypatch.setattr(DuckDBEngine, method, recording)
    return seen


def prepared_and_sample(data: object, id: str | None = "id") -> tuple[preparation.Prepared, pl.DataFrame]:
    """A call's preparation of `data` and the copy check's rows of all of it, in one engine."""
    frame = table()
    with DuckDBEngine.open(None, cohortsql.engines.base.EngineSettings()) as engine:
        prepared = preparation.prepare(
            engine, data, outcomes=("y",), similarity=kinds(frame), id=id, target_predicate=None, max_features=2_000
        )
        return prepared, data_rows.sampled_data(engine, prepared, 1.0, seed=0)


@pytest.mark.parametrize("id", ["id", None], ids=["id column", "row positions"])
def test_a_frame_is_counted_and_sampled_here_as_the_engine_reads_it(queries, monkeypatch, id):
    frame = table()
    here, rows_here = prepared_and_sample(frame, id)
    assert "counting the features' values" not in queries and "reading a sample of the rows" not in queries
    original = DuckDBEngine._register_arrow
    monkeypatch.setattr(
        DuckDBEngine, "_register_arrow", lambda *arguments: original(*arguments)._replace(in_memory=None)
    )
    by_engine, engine_rows = prepared_and_sample(frame, id)
    assert "counting the features' values" in queries and "reading a sample of the rows" in queries
    assert here.features == by_engine.features
    # the same rows and types; a time zone keeps the caller's name (DuckDB names UTC 'Etc/UTC')
    assert rows_here["when"].dtype.time_zone == "UTC" and engine_rows["when"].dtype.time_zone == "Etc/UTC"
    engine_rows = engine_rows.with_columns(pl.col("when").dt.convert_time_zone("UTC"))
    assert rows_here.height == 500 and rows_here.equals(engine_rows) and rows_here.schema == engine_rows.schema
    assert rows_here["span"].dtype == frame["span"].dtype  # a duration (DuckDB reads it as an interval)
    if id is not None:
        assert rows_here["id"].to_list() == list(range(500))  # in id order, as the engine's rows are sorted


def test_a_file_is_counted_and_sampled_by_the_engine(tmp_path, queries):
    frame = table()
    path = tmp_path / "rows.parquet"
    frame.write_parquet(path)
    from_file, _ = prepared_and_sample(str(path))
    assert "counting the features' values" in queries and "reading a sample of the rows" in queries
    here, _ = prepared_and_sample(frame)
    assert [(feature.name, feature.has_missing, feature.levels) for feature in from_file.features] == [
        (feature.name, feature.has_missing, feature.levels) for feature in here.features
    ]


def test_a_weighted_frame_counts_its_rows_of_weight_zero_out_through_the_engine(queries):
    """With case weights the statistics are of the rows of positive weight, a relation of the engine's:
    its plain features are streamed from it, not read from the frame."""
    frame = table().with_columns(w=pl.Series(np.arange(500) % 3, dtype=pl.Float64))
    with DuckDBEngine.open(None, cohortsql.engines.base.EngineSettings()) as engine:
        prepared = preparation.prepare(
            engine,
            frame,
            outcomes=("y",),
            similarity=kinds(table()),
            id="id",
            target_predicate=None,
            max_features=2_000,
            weight="w",
        )
    assert "counting the features' values" in queries
    assert {feature.name: feature.levels for feature in prepared.features}["like_an_id"] < 500
