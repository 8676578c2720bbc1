"""`cohortsql.shapley_table`: the values as a table of the engine (a DuckDB relation, a Spark DataFrame
finished on the executors) equal `cohort_shapley`, and nothing per target reaches the driver; and
`cohortsql.register(spark)`'s SQL table function finishes a printed histogram where it was computed."""

import threading
import time
import tracemalloc

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from test_values_sql import SIMILARITY
from test_values_sql import frame as frame  # noqa: F401 (the shared fixture)

import cohortsql

CASES = {
    "every row": {},
    "weighted, by predicate": {"weight": "w", "targets": "tenure > 4"},
    "ids": {"targets": ["L003", "L040", "L077"]},
    "sample": {"sample": 20, "seed": 5},
}


RUNS = [
    (engine, case)
    for engine in ("duckdb", "spark", "spark-connect")
    for case in CASES
    if engine != "spark-connect" or case in ("every row", "weighted, by predicate")  # Connect: the same code
]


def where(request, engine: str) -> dict:
    """Keyword arguments that run a call on `engine`."""
    if engine == "duckdb":
        return {}
    return {"connection": request.getfixturevalue("spark_session" if engine == "spark" else "spark_connect")}


def collected(table) -> pl.DataFrame:
    """A test's look at an engine table (in id and feature order)."""
    if isinstance(table, pa.Table):  # computed already (a warehouse's)
        arrow = table
    else:
        arrow = table.toArrow() if hasattr(table, "toArrow") else table.to_arrow_table()
    return pl.from_arrow(arrow).sort("id", "feature")


EQUIVALENCES = {"region": "exact", "income": "bins:4", "tenure": "exact"}
CELL_CASES = {**CASES, "ids": {"targets": [f"L{number:03d}" for number in range(0, 80, 10)]}}
"""As `CASES`, with enough ids (2^(d-1)) that the cells pay, as `cohortsql.cohort_shapley` decides."""


@pytest.mark.parametrize("case", ["every row", "weighted, by predicate", "ids"])
def test_exact_and_bins_kinds_take_the_grouping_sets_path(frame, engine, case, monkeypatch):  # noqa: F811
    """As `cohort_shapley` does, with no join of targets with subjects: every cell's values once, joined to
    the targets by their keys (NULL keys included), on every engine."""
    import cohortsql.api.table as table_module

    cells = []
    original = table_module.values_by_cell
    monkeypatch.setattr(table_module, "values_by_cell", lambda *a: cells.append(1) or original(*a))
    data = frame.with_columns(region=pl.when(pl.col("tenure") == 5).then(None).otherwise(pl.col("region")))
    options = {"prediction": "score", "similarity": EQUIVALENCES, "id": "loan", **CELL_CASES[case]}
    values = collected(cohortsql.shapley_table(data, **options, **engine.options))
    direct = cohortsql.cohort_shapley(data, **options).local.sort("id", "feature")
    assert cells == [1]
    assert values["id"].to_list() == direct["id"].to_list()
    np.testing.assert_allclose(values["shapley"], direct["shapley"], atol=1e-12)
    np.testing.assert_allclose(values["shapley_squared"], direct["shapley_squared"], atol=1e-12)


@pytest.mark.parametrize("engine, case", RUNS)
def test_the_table_equals_cohort_shapley(request, frame, tmp_path, engine, case):  # noqa: F811
    path = tmp_path / "loans.parquet"
    frame.write_parquet(path)
    options = {"prediction": "score", "similarity": SIMILARITY, "id": "loan", **CASES[case]}
    table = cohortsql.shapley_table(str(path), **options, **where(request, engine))
    assert type(table).__module__.split(".")[0] == ("duckdb" if engine == "duckdb" else "pyspark")
    values = collected(table)
    direct = cohortsql.cohort_shapley(frame, **options).local.sort("id", "feature")
    assert values.columns == ["id", "feature", "shapley", "shapley_squared"]
    assert values["id"].to_list() == direct["id"].to_list()
    np.testing.assert_allclose(values["shapley"], direct["shapley"], atol=1e-12)
    np.testing.assert_allclose(values["shapley_squared"], direct["shapley_squared"], atol=1e-10)


def peak_driver_memory(action) -> int:
    """The driver's peak memory while `action` runs: Python's allocations and Arrow's, polled."""
    base, peak, done = pa.total_allocated_bytes(), [0], threading.Event()

    def poll():
        while not done.is_set():
            peak[0] = max(peak[0], pa.total_allocated_bytes() - base)
            time.sleep(0.002)

    watcher = threading.Thread(target=poll)
    tracemalloc.start()
    watcher.start()
    try:
        action()
    finally:
        done.set()
        watcher.join()
        python = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return python + peak[0]


def test_spark_tables_of_many_targets_hold_nothing_per_target_on_the_driver(spark_session, tmp_path):
    """Written from 1,000 and from 20,000 targets, the driver's peak stays flat (the library's own path,
    which assembles on the driver, grows with the targets)."""
    peaks = {}
    for rows in (1_000, 1_000, 20_000):  # the first run warms imports and caches up
        rng = np.random.default_rng(rows)
        data = tmp_path / f"scores_{rows}.parquet"
        pl.DataFrame(
            {
                "key": np.arange(rows),
                "a": rng.integers(0, 5, rows),
                "b": rng.integers(0, 6, rows),
                "y": rng.uniform(size=rows),
            }
        ).write_parquet(data)
        name = f"values_{rows}"
        spark_session.sql(f"DROP TABLE IF EXISTS {name}")

        def write(data=data, name=name):
            table = cohortsql.shapley_table(
                str(data), prediction="y", similarity={"a": "exact", "b": "exact"}, id="key", connection=spark_session
            )
            table.write.mode("overwrite").saveAsTable(name)

        peaks[rows] = peak_driver_memory(write)
        assert spark_session.table(name).count() == 2 * rows
        spark_session.sql(f"DROP TABLE IF EXISTS {name}")
    assert peaks[20_000] < peaks[1_000] + 1_000_000, peaks
    library = peak_driver_memory(
        lambda: cohortsql.cohort_shapley(
            str(data), prediction="y", similarity={"a": "exact", "b": "exact"}, id="key", connection=spark_session
        )
    )
    assert library > peaks[20_000] + 2_000_000, (library, peaks)  # what the check would catch


def test_the_spark_sql_table_function_finishes_a_printed_histogram(spark_client, frame):  # noqa: F811
    cohortsql.register(spark_client)
    spark_client.createDataFrame(frame.to_arrow()).createOrReplaceTempView("loans")
    histogram = cohortsql.sql_query(
        frame, prediction="score", similarity=SIMILARITY, id="loan", table="loans", dialect="spark"
    )
    spark_client.sql(histogram).createOrReplaceTempView("loan_histogram")
    values = pl.from_arrow(
        spark_client.sql("SELECT * FROM cohort_shapley_values(TABLE(loan_histogram) PARTITION BY target)").toArrow()
    ).sort("target", "feature")
    direct = cohortsql.cohort_shapley(frame, prediction="score", similarity=SIMILARITY, id="loan").local
    direct = direct.sort("id", "feature")
    assert values.columns == ["target", "feature", "shapley", "shapley_squared"]
    assert values["target"].to_list() == direct["id"].to_list()
    np.testing.assert_allclose(values["shapley"], direct["shapley"], atol=1e-12)
    from pyspark.errors import PySparkException

    # PySpark's own error (cohortsql's quieted loggers once broke its logging of errors into a TypeError)
    with pytest.raises(PySparkException, match="needs the columns of `cohortsql sql`'s histogram"):
        spark_client.sql("SELECT * FROM cohort_shapley_values(TABLE(loans) PARTITION BY loan)").collect()
    # partitions of several targets: each would have been valued as its first target's histogram
    with pytest.raises(PySparkException, match="one target per partition"):
        spark_client.sql(
            "SELECT * FROM cohort_shapley_values(TABLE(SELECT *, 1 AS one FROM loan_histogram) PARTITION BY one)"
        ).collect()
    with pytest.raises(PySparkException, match="NULL mask"):
        spark_client.sql(
            "SELECT * FROM cohort_shapley_values(TABLE(SELECT target, CAST(NULL AS BIGINT) AS mask0, subjects,"
            " sum_y, features FROM loan_histogram) PARTITION BY target)"
        ).collect()


@pytest.mark.parametrize("engine", ["duckdb", "spark", "spark-connect"])
def test_the_lazy_table_holds_the_values_of_the_data_it_was_called_on(request, frame, tmp_path, engine):  # noqa: F811
    """A lazy table is a snapshot: the data changing before it is read (another file in its place) does
    not move its values (its window widths were fixed from the first data, its rows were read later)."""
    path = tmp_path / "loans.parquet"
    frame.write_parquet(path)
    options = {"prediction": "score", "similarity": {"age": "range:0.1", "region": "exact"}, "id": "loan"}
    table = cohortsql.shapley_table(str(path), **options, **where(request, engine))
    frame.with_columns(age=pl.col("age") * 3 - 40, score=pl.col("score") * 2).write_parquet(path)  # the data change
    direct = cohortsql.cohort_shapley(frame, **options).local.sort("id", "feature")
    np.testing.assert_allclose(collected(table)["shapley"], direct["shapley"], atol=1e-12)


def test_the_cells_are_valued_a_memory_sized_batch_at_a_time(frame, monkeypatch):  # noqa: F811
    """Every cell's 2^d arrays at once could exceed memory on keys of many values: the cells are
    walked in batches the memory budget sizes; three cells a batch give the same table."""
    import cohortsql.api.table as table_module

    monkeypatch.setattr(table_module, "exact_batch_size", lambda prepared, by_cells: 3)
    options = {"prediction": "score", "similarity": EQUIVALENCES, "id": "loan"}
    values = collected(cohortsql.shapley_table(frame, **options))
    direct = cohortsql.cohort_shapley(frame, **options).local.sort("id", "feature")
    assert values["id"].to_list() == direct["id"].to_list()
    np.testing.assert_allclose(values["shapley"], direct["shapley"], atol=1e-12)
    np.testing.assert_allclose(values["shapley_squared"], direct["shapley_squared"], atol=1e-12)
