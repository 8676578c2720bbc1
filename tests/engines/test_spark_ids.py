"""Spark's check that ids are unique outside its grouped aggregate (`cohortsql.engines.spark_ids`), in
this process and on the executors: the same count of repeated ids as Spark SQL's grouped query on real
data (integer, text, date, timestamp and decimal ids, NULL ids left out, repeats within and across
tasks), the estimate of distinct predictor rows exact where the sketch holds them all; this process
reads fixed-width ids of tables up to `DRIVER_ID_ROWS` rows, the executors the rest, and the grouped
query is kept where polars would compare ids otherwise than Spark (text of a case-insensitive
collation) or a small table has text ids."""

from types import SimpleNamespace

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import cohortsql

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from cohortsql import queries  # noqa: E402
from cohortsql.dialects import SPARK  # noqa: E402
from cohortsql.engines import spark as spark_engine  # noqa: E402
from cohortsql.engines import spark_ids  # noqa: E402
from cohortsql.engines.base import fetch_record  # noqa: E402

TITANIC = (
    pl.read_csv("examples/data/titanic.csv", null_values="NA")
    .with_columns(pl.col("age").cast(pl.Float64, strict=False))
    .with_row_index("id")
    .with_columns(pl.col("id").cast(pl.Int64))
)
FEATURES = ("pclass", "sex", "age", "sibsp", "parch")


def ids_counted_both_ways(spark_session, frame, features=FEATURES):
    """(the executors' row, Spark SQL's grouped query's row, the exact count of distinct row hashes,
    this process's row)."""
    frame.createOrReplaceTempView("scored_ids")
    columns = [SimpleNamespace(name=name) for name in features]  # what the queries read of a feature
    ids = queries.statistics.ids_and_row_hashes("scored_ids", "`id`", SPARK, columns)
    on_executors = spark_ids.duplicate_ids(spark_session, ids, rows=frame.count(), tasks=3)
    grouped = fetch_record(
        spark_engine.SparkEngine(spark_session),
        queries.statistics.duplicate_ids("scored_ids", "`id`", SPARK, columns),
        context="the test",
    )
    hashes = SPARK.row_hash([SPARK.quote(name) for name in features]) if features else "0"
    exact = spark_session.sql(f"SELECT count(DISTINCT {hashes}) AS n FROM scored_ids WHERE id IS NOT NULL").first()
    return on_executors, grouped, exact["n"], spark_ids.counted_here(spark_session, ids)


def checks_on_the_executors(monkeypatch) -> list:
    """The rows the executors' ids checks of the calls that follow return, in order."""
    counted = []
    original = spark_ids.duplicate_ids

    def recording(*arguments, **options):
        counted.append(original(*arguments, **options))
        return counted[-1]

    monkeypatch.setattr(spark_ids, "duplicate_ids", recording)
    return counted


@pytest.mark.parametrize(
    "ids",
    [
        pl.col("id"),  # unique
        pl.col("id") // 3,  # each id three times
        pl.when(pl.col("id") % 7 == 0).then(None).otherwise(pl.col("id") % 500),  # NULL ids and repeats
        pl.format("passenger {}", pl.col("id") % 800),  # text
        pl.date(1912, 4, 10) + pl.duration(days=pl.col("id") % 1000),  # dates
        pl.datetime(1912, 4, 10, time_zone="UTC") + pl.duration(minutes=pl.col("id") % 900),  # timestamps
        (pl.col("id") % 700).cast(pl.Decimal(20, 2)) / 4,  # decimals
    ],
    ids=["unique", "thrice", "nulls", "text", "dates", "timestamps", "decimals"],
)
def test_the_executors_and_this_process_count_repeated_ids_as_spark_sql_does(spark_session, ids):
    data = TITANIC.with_columns(id=ids)
    on_executors, grouped, exact_hashes, here = ids_counted_both_ways(
        spark_session, spark_session.createDataFrame(data.to_arrow())
    )
    repeated = data.filter(pl.col("id").is_not_null()).height - data["id"].drop_nulls().n_unique()
    assert on_executors["duplicate_ids"] == grouped["duplicate_ids"] == repeated
    assert on_executors["distinct_rows"] == exact_hashes  # fewer than the sketch holds: exact
    # text has no fixed width: this process does not read it
    assert here == (None if data["id"].dtype == pl.String else on_executors)


def test_without_features_only_the_ids_are_counted(spark_session):
    frame = spark_session.createDataFrame(TITANIC.with_columns(id=pl.col("id") // 2).to_arrow())
    on_executors, grouped, _, here = ids_counted_both_ways(spark_session, frame, features=())
    assert on_executors == here == {"duplicate_ids": grouped["duplicate_ids"]} == {"duplicate_ids": TITANIC.height // 2}


def test_many_distinct_rows_are_estimated_within_the_sketch_s_error(spark_session):
    rng = np.random.default_rng(11)
    rows = 60_000
    table = pa.table({"id": np.arange(rows), "x": rng.uniform(size=rows), "z": rng.integers(0, 5, rows)})
    on_executors, _, exact_hashes, here = ids_counted_both_ways(
        spark_session, spark_session.createDataFrame(table), ("x", "z")
    )
    assert on_executors["duplicate_ids"] == here["duplicate_ids"] == 0
    for row in (on_executors, here):
        assert abs(row["distinct_rows"] / exact_hashes - 1) < 0.07  # 4 standard errors


def test_text_ids_of_a_case_insensitive_collation_keep_spark_sql_s_grouping(spark_session, monkeypatch):
    """UTF8_LCASE groups 'A' with 'a': pyarrow would not, so the grouped query counts them (and the call stops)."""
    monkeypatch.setattr(spark_ids, "EXECUTOR_ID_ROWS", 0)
    table = pa.table({"id": ["a", "A", "b"], "x": [1.0, 2.0, 3.0], "y": [0.0, 1.0, 2.0]})
    spark_session.createDataFrame(table).createOrReplaceTempView("collated_input")
    frame = spark_session.sql("SELECT id COLLATE UTF8_LCASE AS id, x, y FROM collated_input")
    # Binary text counted on the executors, in more tasks than rows: most of them hold no row.
    hashed = "SELECT id, xxhash64(x) AS row_hash FROM collated_input"
    assert spark_ids.duplicate_ids(spark_session, hashed, rows=3, tasks=8) == {
        "duplicate_ids": 0,
        "distinct_rows": 3,
    }
    frame.createOrReplaceTempView("collated")
    assert spark_ids.duplicate_ids(spark_session, "SELECT id FROM collated", rows=3, tasks=2) is None
    with pytest.raises(cohortsql.CohortError, match="id column 'id' has 1 duplicate values"):
        cohortsql.cohort_shapley(frame, prediction="y", similarity={"x": "abs:1"}, id="id", targets=["b"])


@pytest.mark.parametrize("threshold", [0, 10**9], ids=["executors", "spark-sql"])
def test_a_call_checks_its_ids_on_the_executors_from_enough_rows(spark_session, monkeypatch, threshold):
    """Past this process's share (`DRIVER_ID_ROWS`), from `EXECUTOR_ID_ROWS` rows a call's ids are
    checked on the executors, the values equal DuckDB's; repeated ids stop the call with the same
    message both ways."""
    monkeypatch.setattr(spark_ids, "DRIVER_ID_ROWS", -1)
    monkeypatch.setattr(spark_ids, "EXECUTOR_ID_ROWS", threshold)
    counted = checks_on_the_executors(monkeypatch)
    data = TITANIC.select("id", "pclass", "sex", "age", "survived").with_columns(
        y=(pl.col("survived") == "survived").cast(pl.Float64)
    )
    options = dict(
        prediction="y", similarity={"pclass": "exact", "sex": "exact", "age": "abs:5"}, id="id", targets=[3, 99]
    )
    on_spark = cohortsql.cohort_shapley(spark_session.createDataFrame(data.to_arrow()), **options)
    np.testing.assert_allclose(on_spark.shapley, cohortsql.cohort_shapley(data, **options).shapley, atol=1e-12)
    assert [row["duplicate_ids"] for row in counted] == ([0] if threshold == 0 else [])
    repeated = spark_session.createDataFrame(data.with_columns(id=pl.col("id") // 2).to_arrow())
    with pytest.raises(cohortsql.CohortError, match=f"id column 'id' has {data.height // 2} duplicate values"):
        cohortsql.cohort_shapley(repeated, **options)


def test_a_spark_connect_session_checks_its_ids_on_the_executors(spark_connect, monkeypatch):
    monkeypatch.setattr(spark_ids, "DRIVER_ID_ROWS", -1)
    monkeypatch.setattr(spark_ids, "EXECUTOR_ID_ROWS", 0)
    counted = checks_on_the_executors(monkeypatch)
    data = TITANIC.select("id", "pclass", "sex", "sibsp", "parch").with_columns(
        y=pl.col("sibsp") * 1.5 + pl.col("parch")
    )
    options = dict(prediction="y", similarity={"pclass": "exact", "sex": "exact"}, id="id", targets=[3, 99])
    on_connect = cohortsql.cohort_shapley(spark_connect.createDataFrame(data.to_arrow()), **options)
    np.testing.assert_allclose(on_connect.shapley, cohortsql.cohort_shapley(data, **options).shapley, atol=1e-12)
    assert counted == [{"duplicate_ids": 0, "distinct_rows": 6}]  # 3 classes x 2 sexes


@pytest.mark.parametrize(
    "ids",
    [
        pl.col("id"),
        pl.col("id").cast(pl.Int16),
        pl.date(1912, 4, 10) + pl.duration(days=pl.col("id")),
        pl.datetime(1912, 4, 10) + pl.duration(seconds=pl.col("id")),  # no time zone: TIMESTAMP_NTZ
        pl.col("id").cast(pl.Decimal(38, 0)) * 10**30,
        pl.format("passenger {}", pl.col("id")),
    ],
    ids=["bigint", "smallint", "dates", "timestamps", "decimals", "text"],
)
def test_a_call_reads_fixed_width_ids_here_without_a_query_grouping_them(spark_session, monkeypatch, ids):
    """Up to `DRIVER_ID_ROWS` rows, a call reads integer, decimal, date and timestamp ids into this
    process (no grouped query, no executors' check): the same values as DuckDB's, and repeated ids
    stop it naming the count; text ids keep Spark SQL's grouped query."""
    monkeypatch.setattr(spark_ids, "EXECUTOR_ID_ROWS", 0)
    counted = checks_on_the_executors(monkeypatch)
    queries_run = []
    original = spark_engine.SparkEngine.fetch_arrow

    def recording(self, select, *, context):
        queries_run.append(select)
        return original(self, select, context=context)

    monkeypatch.setattr(spark_engine.SparkEngine, "fetch_arrow", recording)
    data = TITANIC.select("id", "pclass", "sex", "age", "survived").with_columns(
        id=ids, y=(pl.col("survived") == "survived").cast(pl.Float64)
    )
    text = data["id"].dtype == pl.String
    options = dict(
        prediction="y", similarity={"pclass": "exact", "sex": "exact", "age": "abs:5"}, id="id", targets=data["id"][:2]
    )
    on_spark = cohortsql.cohort_shapley(spark_session.createDataFrame(data.to_arrow()), **options)
    np.testing.assert_allclose(on_spark.shapley, cohortsql.cohort_shapley(data, **options).shapley, atol=1e-12)
    grouping = [select for select in queries_run if "GROUP BY `id`" in select]
    assert (len(grouping), len(counted)) == ((0, 1) if text else (0, 0))  # text: on the executors (threshold 0)
    repeated = data.with_columns(pl.col("id").gather(np.arange(data.height) // 2))
    with pytest.raises(cohortsql.CohortError, match=f"id column 'id' has {data.height // 2} duplicate values"):
        cohortsql.cohort_shapley(spark_session.createDataFrame(repeated.to_arrow()), **options)
