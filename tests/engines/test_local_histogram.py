"""DuckDB builds the mask histograms of a run of many pairs in this process (`cohortsql.engines.local_histogram`):
the values are those of its histogram query, for every kind with a numeric test (windows of floats,
integers and dates, relative windows, bins, quantiles, exact integers, text and booleans, missing
values, NaN), with case weights and two explained columns, in one pass or in several (a memory limit's
share, or the cells' budget), on one thread or several; small runs, and runs whose cells would not fit a memory limit's share, keep
the query."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import cohortsql
from cohortsql.engines import local_histogram
from cohortsql.engines.duckdb_settings import memory_limit_bytes
from cohortsql.numeric import kernels, pair_masks
from cohortsql.run import pairwise

pytestmark = pytest.mark.skipif(not kernels.available(), reason="the compiled kernels need numba (the fast extra)")

ROWS = 700
SUMS = 3
"""The histogram's sums: the weights, and the weights times each of the two explained columns."""
KINDS = {
    "x": "abs:0.3",
    "ratio": "relative:0.2",
    "binned": "bins:4",
    "quantiled": "quantile:0.2",
    "count": "abs:2",
    "day": "range:0.2",
    "level": "exact",
    "word": "exact",
    "flag": "exact",
}


def table() -> pl.DataFrame:
    rng = np.random.default_rng(11)
    positions = np.arange(ROWS)
    return pl.DataFrame(
        {
            "id": positions,
            "x": np.where(positions % 13 == 5, np.nan, rng.normal(size=ROWS)),
            "ratio": rng.lognormal(size=ROWS),
            "binned": pl.Series([None if i % 11 == 3 else float(v) for i, v in enumerate(rng.normal(size=ROWS))]),
            "quantiled": rng.uniform(size=ROWS),
            "count": rng.integers(0, 9, ROWS),
            "day": pl.date_range(pl.date(2020, 1, 1), pl.date(2021, 12, 31), eager=True).head(ROWS),
            "level": pl.Series([None if i % 17 == 0 else int(v) for i, v in enumerate(rng.integers(0, 4, ROWS))]),
            "word": pl.Series([None if i % 9 == 0 else w for i, w in enumerate(rng.choice(["a", "b", "c"], ROWS))]),
            "flag": rng.uniform(size=ROWS) < 0.4,
            "weight": rng.uniform(0.5, 2.0, ROWS),
            "y": rng.normal(size=ROWS),
            "z": rng.normal(size=ROWS),
        }
    )


@pytest.fixture
def ways(monkeypatch) -> dict[str, int]:
    """How many histograms each way built."""
    counted = {"here": 0, "query": 0}
    here, query = pair_masks.histogram_of_batches, pairwise._sql_histogram

    def built_here(*arguments, **keywords):
        counted["here"] += 1
        return here(*arguments, **keywords)

    def built_by_query(*arguments):
        counted["query"] += 1
        return query(*arguments)

    monkeypatch.setattr(pair_masks, "histogram_of_batches", built_here)
    monkeypatch.setattr(pairwise, "_sql_histogram", built_by_query)
    return counted


def run(engine=None, **options):
    return cohortsql.cohort_shapley(
        table(),
        prediction=["y", "z"],
        similarity=KINDS,
        id="id",
        weight="weight",
        targets=list(range(0, ROWS, 7)),
        **({} if engine is None else {"engine": engine}),
        **options,
    )


def assert_same(found, expected) -> None:
    for outcome in ("y", "z"):
        np.testing.assert_allclose(found[outcome].shapley, expected[outcome].shapley, rtol=0, atol=1e-12)
        assert found[outcome].totals["cohort_size"].to_list() == expected[outcome].totals["cohort_size"].to_list()


def test_the_histograms_built_here_are_the_querys_for_every_kind(monkeypatch, ways):
    monkeypatch.setattr(local_histogram, "IN_PROCESS_HISTOGRAM_PAIRS", 10**18)
    expected = run()
    assert ways == {"here": 0, "query": 1}
    monkeypatch.setattr(local_histogram, "IN_PROCESS_HISTOGRAM_PAIRS", 0)
    found = run()
    assert ways == {"here": 1, "query": 1}
    assert_same(found, expected)


def test_targets_go_through_in_passes_that_fit_the_cells_budget(monkeypatch, ways):
    expected = run()  # 100 targets x 700 rows: the query
    monkeypatch.setattr(local_histogram, "IN_PROCESS_HISTOGRAM_PAIRS", 0)
    monkeypatch.setattr(local_histogram, "THREADS", 2)
    monkeypatch.setattr(pair_masks, "CELL_BYTES", 14 * pair_masks.cell_bytes(len(KINDS), SUMS))
    found = run()
    assert ways == {"here": 15, "query": 1}  # 100 targets, 7 a pass (each of the 2 threads holds 7's cells)
    assert_same(found, expected)


@pytest.mark.parametrize("threads", [1, 3])
def test_batches_added_on_several_threads_give_the_querys_values(monkeypatch, ways, threads):
    expected = run()
    monkeypatch.setattr(local_histogram, "IN_PROCESS_HISTOGRAM_PAIRS", 0)
    monkeypatch.setattr(local_histogram, "THREADS", threads)
    monkeypatch.setattr(local_histogram, "SUBJECT_BATCH_ROWS", 64)  # 11 batches of subjects
    added = []
    original = pair_masks.PartialHistogram.add
    monkeypatch.setattr(
        pair_masks.PartialHistogram,
        "add",
        lambda self, *arguments: added.append(id(self)) or original(self, *arguments),
    )
    assert_same(run(), expected)
    assert ways == {"here": 1, "query": 1}
    assert len(added) == 11 and len(set(added)) == threads


def test_under_a_memory_limit_the_cells_take_a_share_of_it_or_the_query_builds_them(monkeypatch, ways):
    expected = run()
    monkeypatch.setattr(local_histogram, "IN_PROCESS_HISTOGRAM_PAIRS", 0)
    monkeypatch.setattr(local_histogram, "THREADS", 2)
    limited = cohortsql.DuckDB(memory_limit="100MB")
    one_target = pair_masks.cell_bytes(len(KINDS), SUMS)
    monkeypatch.setattr(local_histogram, "BUDGET_SHARE", memory_limit_bytes("100MB") // (2 * 10 * one_target))
    assert_same(run(limited), expected)
    assert ways == {"here": 10, "query": 1}  # 10 targets a pass
    monkeypatch.setattr(local_histogram, "BUDGET_SHARE", 10**12)
    assert_same(run(limited), expected)
    assert ways == {"here": 10, "query": 2}  # not one target's cells: the query


def test_a_run_of_few_pairs_keeps_the_query(ways):
    run()
    assert ways == {"here": 0, "query": 1}
    assert 100 * ROWS < local_histogram.IN_PROCESS_HISTOGRAM_PAIRS
