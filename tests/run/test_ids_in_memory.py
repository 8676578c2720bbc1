"""Repeated ids of a frame DuckDB scans in this process's memory are counted here (`cohortsql.run.ids_in_memory`),
with no grouped query and no count(DISTINCT) among the statistics: the same refusal, the same estimate of
distinct rows, as the engine gives for a file of the same rows. Text ids (equal under the engine's collation),
weighted data and ids beyond the memory limit's share keep the engine's query."""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import cohortsql
from cohortsql.engines.duckdb import DuckDBEngine
from cohortsql.run import ids_in_memory, preparation

ROWS = 400


@pytest.fixture
def queries(monkeypatch) -> dict[str, str]:
    """Every query DuckDB reads back, by its context."""
    seen: dict[str, str] = {}
    for method in ("fetch_arrow", "fetch_few_rows"):
        original = getattr(DuckDBEngine, method)

        def recording(self, select, *, context, _original=original, **options):
            seen[context] = select
            return _original(self, select, context=context, **options)

        monkeypatch.setattr(DuckDBEngine, method, recording)
    return seen


ID_VALUES = {
    "bigint": pl.Series(range(ROWS), dtype=pl.Int64),
    "uint64": pl.Series([2**63 + k for k in range(ROWS)], dtype=pl.UInt64),
    "decimal": pl.Series([decimal.Decimal(k) / 4 for k in range(ROWS)], dtype=pl.Decimal(12, 2)),
    "date": pl.Series([datetime.date(2000, 1, 1) + datetime.timedelta(days=k) for k in range(ROWS)]),
    "timestamp": pl.Series(
        [datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=k) for k in range(ROWS)]
    ).dt.replace_time_zone("UTC"),
}


def frame(ids: pl.Series, repeated: int = 0) -> pl.DataFrame:
    """Rows with ids `ids`, the last `repeated` of them replaced by the first ids (so repeating them), and
    predictors of ten distinct rows."""
    rng = np.random.default_rng(11)
    ids = pl.concat([ids.head(ids.len() - repeated), ids.head(repeated)]) if repeated else ids
    return pl.DataFrame(
        {
            "id": ids,
            "a": rng.integers(0, 5, ids.len()),
            "b": rng.integers(0, 2, ids.len()),
            "y": rng.normal(size=ids.len()),
        }
    )


def explain(data: object, memory_limit: str | None = None) -> cohortsql.CohortShapleyResult:
    return cohortsql.cohort_shapley(
        data,
        prediction="y",
        similarity={"a": "exact", "b": "exact"},
        id="id",
        targets=None,
        engine=cohortsql.DuckDB(memory_limit=memory_limit),
        progress=False,
    )


@pytest.mark.parametrize("memory_limit", [None, "300MB"], ids=["no limit", "a limit"])
@pytest.mark.parametrize("kind", list(ID_VALUES))
def test_repeated_ids_of_a_frame_are_counted_here_as_the_engine_counts_them(tmp_path, queries, kind, memory_limit):
    data = frame(ID_VALUES[kind], repeated=7)
    with pytest.raises(cohortsql.CohortError, match="^id column 'id' has 7 duplicate values"):
        explain(data, memory_limit)
    assert "checking that ids are unique" not in queries
    assert "DISTINCT" not in queries["computing table statistics"]
    path = tmp_path / "rows.parquet"
    data.write_parquet(path)
    with pytest.raises(cohortsql.CohortError, match="^id column 'id' has 7 duplicate values"):
        explain(str(path), memory_limit)
    assert memory_limit is None or "checking that ids are unique" in queries


def test_unique_ids_give_the_engines_values_and_estimate_of_distinct_rows(tmp_path, queries):
    data = frame(ID_VALUES["bigint"])
    path = tmp_path / "rows.parquet"
    data.write_parquet(path)
    with DuckDBEngine.open(None, cohortsql.engines.base.EngineSettings(memory_limit="300MB")) as engine:
        here, by_engine = (
            preparation.prepare(
                engine,
                source,
                outcomes=("y",),
                similarity={"a": "exact", "b": "exact"},
                id="id",
                target_predicate=None,
                max_features=50,
            )
            for source in (data, str(path))
        )
        assert here.statistics.distinct_rows == by_engine.statistics.distinct_rows == 10
        assert here.compressed and by_engine.compressed
    assert np.array_equal(explain(data, "300MB").shapley, explain(str(path), "300MB").shapley)


def test_missing_ids_are_refused_as_missing_not_repeated():
    data = frame(ID_VALUES["bigint"]).with_columns(
        id=pl.when(pl.int_range(ROWS) < 3).then(None).otherwise(pl.col("id"))
    )
    with pytest.raises(cohortsql.CohortError, match="^id column 'id' has 3 NULL values"):
        explain(data, "300MB")


def test_text_ids_are_counted_by_the_engine(queries):
    """Text is equal under the engine's collation."""
    ids = pl.Series([f"r{k}" for k in range(ROWS)])
    with pytest.raises(cohortsql.CohortError, match="^id column 'id' has 2 duplicate values"):
        explain(frame(ids, repeated=2), "300MB")
    assert "checking that ids are unique" in queries


def test_weighted_rows_are_counted_by_the_engine_among_rows_of_positive_weight(queries):
    """A repeated id on a row of weight 0 is no subject's: only the engine's relation of positive weights knows."""
    data = frame(ID_VALUES["bigint"], repeated=1).with_columns(
        w=pl.when(pl.int_range(ROWS) == ROWS - 1).then(0.0).otherwise(1.0)
    )
    result = cohortsql.cohort_shapley(
        data,
        prediction="y",
        similarity={"a": "exact", "b": "exact"},
        id="id",
        weight="w",
        targets=[0],
        engine=cohortsql.DuckDB(memory_limit="300MB"),
        progress=False,
    )
    assert result.ids.to_list() == [0]
    assert "checking that ids are unique" in queries


def test_ids_are_counted_here_only_within_their_share_of_a_memory_limit():
    table = pa.table({"id": pa.array(range(1_000), pa.int64()), "text": pa.array([str(k) for k in range(1_000)])})
    needed = 1_000 * ids_in_memory.ID_BYTES * ids_in_memory.BUDGET_SHARE
    for budget in (None, needed):
        counted = ids_in_memory.ids_counted_here(table, "id", budget)
        assert counted is not None and counted.equals(table.column("id"))
    assert ids_in_memory.ids_counted_here(table, "id", needed - 1) is None
    assert ids_in_memory.ids_counted_here(table, "text", None) is None
    assert ids_in_memory.ids_counted_here(None, "id", None) is None
