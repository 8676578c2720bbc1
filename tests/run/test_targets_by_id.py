"""Target rows read by id: with their data's own columns in the same query (one scan of the data, not
two), as an ordered read bounded by the number of ids written into the query (a top-N, one Spark job
where a whole sort takes a sampling job and a shuffle), never fewer rows than match."""

import datetime

import numpy as np
import polars as pl
import pytest

import cohortsql
from cohortsql.engines.duckdb import DuckDBEngine
from cohortsql.run import target_ids
from cohortsql.run import targets as targets_module


@pytest.fixture
def reads(monkeypatch):
    """The (context, SQL) of every query the DuckDB engine reads back (few rows or many)."""
    seen: list[tuple[str, str]] = []
    for method in ("fetch_arrow", "fetch_few_rows"):
        original = getattr(DuckDBEngine, method)

        def recording(self, select, *, context, _original=original):
            seen.append((context, select))
            return _original(self, select, context=context)

        monkeypatch.setattr(DuckDBEngine, method, recording)
    return seen


def frame(n=60):
    rng = np.random.default_rng(11)
    return pl.DataFrame({"k": np.arange(n) * 10, "x": rng.uniform(size=n), "y": rng.uniform(size=n)})


def by_id_reads(seen):
    return [sql for context, sql in seen if context.startswith(("matching target ids", "reading the target rows"))]


def test_rows_chosen_by_id_are_read_with_their_data_as_a_top_n_of_as_many_rows_as_ids(reads):
    data = frame()
    result = cohortsql.cohort_shapley(data, prediction="y", similarity={"x": "abs:0.2"}, id="k", targets=[50, 30, 30])
    [matching] = by_id_reads(reads)  # the data's columns in the same query: no second read
    assert matching.rstrip().endswith("LIMIT 3")  # the ids asked for
    # Repeated ids ask for fewer rows than the limit: both rows, in id order, and their data.
    assert result.ids.to_list() == [30, 50]
    assert result.targets.equals(data.filter(pl.col("k").is_in([30, 50])).sort("k"))


def test_ids_read_from_an_uploaded_table_are_sorted_without_a_limit(reads, monkeypatch):
    monkeypatch.setattr(target_ids, "LITERAL_IDS", 1)
    result = cohortsql.cohort_shapley(frame(), prediction="y", similarity={"x": "abs:0.2"}, id="k", targets=[50, 30])
    [matching] = by_id_reads(reads)
    assert "LIMIT" not in matching
    assert result.ids.to_list() == [30, 50]


def test_every_row_is_read_without_a_limit(reads):
    cohortsql.cohort_shapley(frame(8), prediction="y", similarity={"x": "abs:0.2"}, id="k")
    assert reads and not any("LIMIT" in sql for context, sql in reads if "target" in context)


@pytest.mark.parametrize(
    "options",
    [
        {"id": "k", "targets": [0, 20, 590]},
        {"targets": [3, 7, 58]},  # row positions
        {"id": "k", "weight": "w", "targets": [20, 50, 590]},  # rows of weight 0 are left out of the data
        {"id": "k", "targets": [20, 50], "similarity": {"x": "sql:abs(s.x - t.x) < 0.2", "label": "exact"}},
    ],
    ids=["ids", "positions", "weights", "sql-kind"],
)
def test_the_targets_data_read_with_them_equal_the_data_read_apart(options, monkeypatch):
    """The same values, targets and data rows (every column, its type, in id order) as when the targets'
    data are read by a query of their own."""
    rng = np.random.default_rng(3)
    data = frame().with_columns(
        w=pl.Series(np.arange(60) % 4, dtype=pl.Float64),
        label=pl.Series(rng.choice(["a", "b", None], 60).tolist(), dtype=pl.String),
        day=pl.date_range(pl.date(2024, 1, 1), pl.date(2024, 2, 29), eager=True),
        small=pl.Series(np.arange(60) % 3, dtype=pl.Int8),
        flag=pl.Series(np.arange(60) % 2 == 0),
    )
    similarity = {"x": "abs:0.2", "label": "exact", "day": "abs:9", "small": "exact", "flag": "exact"}
    asked = {"prediction": "y", "similarity": similarity} | options
    together = cohortsql.cohort_shapley(data, **asked)
    original = targets_module._targets_by_id
    monkeypatch.setattr(
        targets_module, "_targets_by_id", lambda *arguments, with_data: original(*arguments, with_data=False)
    )
    apart = cohortsql.cohort_shapley(data, **asked)
    assert together.targets.equals(apart.targets) and together.targets.schema == apart.targets.schema
    assert together.ids.to_list() == apart.ids.to_list()
    np.testing.assert_array_equal(together.shapley, apart.shapley)


def test_predictors_that_are_a_data_column_are_read_once(reads):
    """A target's row is read with its data's columns: a predictor that is a column as it is (an exact
    integer, text, a boolean, a window over DOUBLE) is read once, as the data's column, not a second
    time under its subject name (at 1,024 binary features the query read 2,051 columns, and took twice
    as long)."""
    data = frame().with_columns(
        small=pl.Series(np.arange(60) % 3, dtype=pl.Int16),
        flag=pl.Series(np.arange(60) % 2 == 0),
        single=pl.Series(np.arange(60) / 7, dtype=pl.Float32),
    )
    similarity = {"x": "abs:0.2", "small": "exact", "flag": "exact", "single": "abs:1"}
    result = cohortsql.cohort_shapley(data, prediction="y", similarity=similarity, id="k", targets=[30, 50])
    [matching] = by_id_reads(reads)
    assert '"small" AS' not in matching and '"flag" AS' not in matching and 'CAST("x"' not in matching
    assert 'CAST("single" AS DOUBLE) AS "__cohort_f3"' in matching  # a float32 is compared as a double
    apart = cohortsql.cohort_shapley(data.sort("k"), prediction="y", similarity=similarity, targets=[3, 5])
    np.testing.assert_array_equal(result.shapley, apart.shapley)


@pytest.mark.parametrize("listed", [True, False], ids=["listed", "uploaded"])
def test_integer_ids_are_read_within_their_range(reads, monkeypatch, listed):
    """Integer ids are also tested against their least and greatest (a range a scan skips blocks by): the
    same rows, at the ends of BIGINT too."""
    if not listed:
        monkeypatch.setattr(target_ids, "LITERAL_IDS", 1)
    data = frame().with_columns(k=pl.Series([-(2**63), *range(-29, 29), 2**63 - 1], dtype=pl.Int64))
    result = cohortsql.cohort_shapley(
        data, prediction="y", similarity={"x": "abs:0.2"}, id="k", targets=[2**63 - 1, -(2**63), 3]
    )
    [matching] = by_id_reads(reads)
    assert f"__cohort_id BETWEEN {-(2**63)} AND {2**63 - 1} AND __cohort_id IN" in matching
    assert result.ids.to_list() == [-(2**63), 3, 2**63 - 1]
    assert result.targets.equals(data.filter(pl.col("k").is_in([-(2**63), 3, 2**63 - 1])).sort("k"))


def test_text_ids_are_read_by_their_list_alone(reads):
    """Text may sort otherwise in the engine (a collation) than here: no range."""
    data = frame().with_columns(k=pl.Series([f"id {k}" for k in range(60)]))
    result = cohortsql.cohort_shapley(
        data, prediction="y", similarity={"x": "abs:0.2"}, id="k", targets=["id 9", "id 10"]
    )
    [matching] = by_id_reads(reads)
    assert "BETWEEN" not in matching
    assert result.ids.to_list() == ["id 10", "id 9"]


def test_integer_ids_at_bigints_ends_are_read_on_every_engine(engine):
    """The range's literals at BIGINT's ends (Spark and PostgreSQL read -9223372036854775808 as a decimal)."""
    data = frame().with_columns(k=pl.Series([-(2**63), *range(-29, 29), 2**63 - 1], dtype=pl.Int64))
    result = cohortsql.cohort_shapley(
        data, prediction="y", similarity={"x": "abs:0.2"}, id="k", targets=[2**63 - 1, -(2**63)], **engine.options
    )
    assert result.ids.to_list() == [-(2**63), 2**63 - 1]
    assert result.targets.equals(data.filter(pl.col("k").is_in([-(2**63), 2**63 - 1])).sort("k"))


@pytest.mark.parametrize("zone", ["Europe/Paris", "America/St_Johns"])
def test_ids_of_a_zoned_timestamp_are_found_as_the_instants_they_are_on_every_engine(engine, zone):
    """A target id of a column with a time zone is the instant it names, however it is written: the
    column's own value, the same instant in UTC or with another offset (DuckDB and PostgreSQL had read
    the literal's offset away: no target was found outside UTC)."""
    start = pl.datetime(2020, 3, 29, time_zone=zone)
    data = frame().with_columns(k=start + pl.duration(minutes=pl.Series(np.arange(60) * 37)))
    own = data["k"][[4, 41]].to_list()
    written = [own[0].astimezone(datetime.UTC), own[1].astimezone(datetime.timezone(datetime.timedelta(hours=9)))]
    for targets in (own, written):
        result = cohortsql.cohort_shapley(
            data, prediction="y", similarity={"x": "abs:0.2"}, id="k", targets=targets, **engine.options
        )
        assert [moment.timestamp() for moment in result.ids.to_list()] == [moment.timestamp() for moment in own]
        assert np.array_equal(result.targets["x"].to_numpy(), data["x"].to_numpy()[[4, 41]])


def test_windows_over_columns_of_their_own_type_are_read_once(reads):
    """A DOUBLE column without NaN and a BIGINT column are their subject columns as they are: the target
    read selects them once (1,024 float windows: 0.13 -> 0.07 s), an INTEGER column is still cast, and the
    values are those of every target's run (whose targets are read from the subjects relation)."""
    data = frame().with_columns(
        wide=pl.Series(np.arange(60) * 7, dtype=pl.Int64), narrow=pl.Series(np.arange(60) % 9, dtype=pl.Int32)
    )
    similarity = {"x": "abs:0.2", "wide": "abs:50", "narrow": "abs:2"}
    result = cohortsql.cohort_shapley(data, prediction="y", similarity=similarity, id="k", targets=[50, 30])
    [matching] = by_id_reads(reads)
    assert 'CAST("x" AS DOUBLE)' not in matching and 'CAST("wide" AS BIGINT)' not in matching
    assert 'CAST("narrow" AS BIGINT)' in matching
    every = cohortsql.cohort_shapley(data, prediction="y", similarity=similarity, id="k")
    assert np.array_equal(result.shapley, every.shapley[[3, 5]])
