"""Target rows read by id: an ordered read bounded by the number of ids written into the query (a top-N,
one Spark job where a whole sort takes a sampling job and a shuffle), never fewer rows than match."""

import numpy as np
import polars as pl
import pytest

import cohortsql
from cohortsql.engines.duckdb import DuckDBEngine
from cohortsql.run import targets as targets_module


@pytest.fixture
def reads(monkeypatch):
    """The (context, SQL) of every query the DuckDB engine reads back."""
    seen: list[tuple[str, str]] = []
    original = DuckDBEngine.fetch_arrow

    def recording(self, select, *, context):
        seen.append((context, select))
        return original(self, select, context=context)

    monkeypatch.setattr(DuckDBEngine, "fetch_arrow", recording)
    return seen


def frame(n=60):
    rng = np.random.default_rng(11)
    return pl.DataFrame({"k": np.arange(n) * 10, "x": rng.uniform(size=n), "y": rng.uniform(size=n)})


def by_id_reads(seen):
    return [sql for context, sql in seen if context.startswith(("matching target ids", "reading the target rows"))]


def test_rows_chosen_by_id_are_read_as_a_top_n_of_as_many_rows_as_ids(reads):
    data = frame()
    result = cohortsql.cohort_shapley(data, prediction="y", similarity={"x": "abs:0.2"}, id="k", targets=[50, 30, 30])
    matching, data_rows = by_id_reads(reads)
    assert matching.rstrip().endswith("LIMIT 3")  # the ids asked for
    assert data_rows.rstrip().endswith("LIMIT 2")  # the rows found
    # Repeated ids ask for fewer rows than the limit: both rows, in id order, and their data.
    assert result.ids.to_list() == [30, 50]
    assert result.targets["k"].to_list() == [30, 50]
    assert result.targets["x"].to_list() == data.filter(pl.col("k").is_in([30, 50]))["x"].to_list()


def test_ids_read_from_an_uploaded_table_are_sorted_without_a_limit(reads, monkeypatch):
    monkeypatch.setattr(targets_module, "LITERAL_IDS", 1)
    result = cohortsql.cohort_shapley(frame(), prediction="y", similarity={"x": "abs:0.2"}, id="k", targets=[50, 30])
    sqls = by_id_reads(reads)
    assert len(sqls) == 2 and not any("LIMIT" in sql for sql in sqls)
    assert result.ids.to_list() == [30, 50]


def test_every_row_is_read_without_a_limit(reads):
    cohortsql.cohort_shapley(frame(8), prediction="y", similarity={"x": "abs:0.2"}, id="k")
    assert reads and not any("LIMIT" in sql for context, sql in reads if "target" in context)
