"""A row of numbers and booleans read from Spark as Python values (`cohortsql.engines.spark_rows`):
the same Arrow table as Spark's Arrow collection gives (every numeric type at its ends, NaN, the
infinities, signed zeros, NULLs, repeated names, no rows), other types left to that collection, and a
call's pilot (a LIMIT 1) read without it."""

import math

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import cohortsql

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from cohortsql.engines.spark_rows import collected  # noqa: E402

NUMBERS = """
SELECT * FROM VALUES
    (CAST(-128 AS TINYINT), CAST(-32768 AS SMALLINT), CAST(-2147483648 AS INT), CAST(-9223372036854775808 AS BIGINT),
     CAST('NaN' AS FLOAT), CAST('-Infinity' AS DOUBLE), CAST('-12345678901234567890.1234567891' AS DECIMAL(38, 10)),
     CAST(-999.99 AS DECIMAL(5, 2)), TRUE),
    (CAST(127 AS TINYINT), CAST(32767 AS SMALLINT), CAST(2147483647 AS INT), CAST(9223372036854775807 AS BIGINT),
     CAST(3.4028235e38 AS FLOAT), CAST(-0.0 AS DOUBLE), CAST('0.0000000001' AS DECIMAL(38, 10)),
     CAST(0.01 AS DECIMAL(5, 2)), FALSE),
    (NULL, NULL, NULL, NULL, CAST('Infinity' AS FLOAT), CAST('NaN' AS DOUBLE), NULL, NULL, NULL),
    (CAST(0 AS TINYINT), CAST(0 AS SMALLINT), CAST(0 AS INT), CAST(0 AS BIGINT), CAST(1e-45 AS FLOAT),
     CAST(5e-324 AS DOUBLE), CAST(0 AS DECIMAL(38, 10)), CAST(0 AS DECIMAL(5, 2)), TRUE)
AS numbers(tiny, small, regular, big, single, double, wide, narrow, flag)
"""


def same_table(read: pa.Table, expected: pa.Table) -> None:
    assert read.schema == expected.schema
    for mine, theirs in zip(read.columns, expected.columns):
        for value, wanted in zip(mine.to_pylist(), theirs.to_pylist()):
            if isinstance(wanted, float) and math.isnan(wanted):
                assert isinstance(value, float) and math.isnan(value)
            else:
                assert value == wanted and type(value) is type(wanted)
                if isinstance(wanted, float):
                    assert math.copysign(1, value) == math.copysign(1, wanted)


@pytest.mark.parametrize(
    "select",
    [
        NUMBERS,
        f"SELECT * FROM ({NUMBERS}) AS n WHERE big IS NOT NULL ORDER BY big DESC LIMIT 1",
        f"SELECT tiny AS x, big AS x, flag FROM ({NUMBERS}) AS n",  # one name twice
        f"SELECT * FROM ({NUMBERS}) AS n WHERE FALSE",  # no rows
        "SELECT count(*) AS n, avg(id) AS mean, max(id) AS largest FROM range(1000)",
    ],
    ids=["numbers", "limit", "repeated-names", "no-rows", "aggregates"],
)
def test_numbers_and_booleans_read_as_spark_s_arrow_gives_them(spark_session, select):
    frame = spark_session.sql(select)
    same_table(collected(frame), frame.toArrow())


@pytest.mark.parametrize(
    "select",
    [
        "SELECT 1 AS n, 'text' AS name",
        "SELECT 1 AS n, TIMESTAMP '2026-11-29 12:00:00' AS at",
        "SELECT DATE '2026-11-29' AS day",
        "SELECT array(1, 2) AS values",
        "SELECT X'00ff' AS bytes",
    ],
    ids=["text", "timestamp", "date", "array", "binary"],
)
def test_other_types_are_left_to_spark_s_arrow(spark_session, select):
    assert collected(spark_session.sql(select)) is None


def test_a_call_reads_its_pilot_without_spark_s_arrow(spark_session, monkeypatch):
    """The pilot's LIMIT 1 is collected (one stage), the values are DuckDB's; the sample of the rows,
    which holds text, is read by Spark's Arrow collection."""
    arrow_reads = []
    classic = type(spark_session.range(1))  # the session's DataFrame class, which has its own toArrow
    original = classic.toArrow

    def recording(frame):
        arrow_reads.append(frame._jdf.queryExecution().analyzed().toString())
        return original(frame)

    monkeypatch.setattr(classic, "toArrow", recording)
    rng = np.random.default_rng(5)
    data = pl.DataFrame({"id": np.arange(400), "x": rng.uniform(size=400), "z": rng.integers(0, 3, 400)}).with_columns(
        y=pl.col("x") * 2 + pl.col("z"), name=pl.format("row {}", pl.col("id"))
    )
    options = dict(prediction="y", similarity={"x": "abs:0.2", "z": "exact"}, id="id", targets=[5, 17, 300])
    on_spark = cohortsql.cohort_shapley(spark_session.createDataFrame(data.to_arrow()), **options)
    np.testing.assert_allclose(on_spark.shapley, cohortsql.cohort_shapley(data, **options).shapley, atol=1e-12)
    assert not [plan for plan in arrow_reads if "pilot" in plan], arrow_reads
    assert [plan for plan in arrow_reads if "name" in plan], arrow_reads  # the sample: text


def test_only_one_row_is_collected(spark_session, monkeypatch):
    """`fetch_one_row` collects; a result of many rows of numbers (`fetch_few_rows`: a sample, target
    rows) keeps Spark's Arrow collection, which reads a column in one buffer."""
    from cohortsql.engines.spark import SparkEngine

    classic = type(spark_session.range(1))
    arrow_reads = []
    original = classic.toArrow
    monkeypatch.setattr(classic, "toArrow", lambda frame: arrow_reads.append(frame) or original(frame))
    engine = SparkEngine(spark_session)
    many = engine.fetch_few_rows("SELECT id, id * 0.5 AS half FROM range(10000)", context="the test")
    assert (many.num_rows, len(arrow_reads)) == (10_000, 1)
    one = engine.fetch_one_row("SELECT count(*) AS n, max(id * 0.5) AS half FROM range(10000)", context="the test")
    assert (one.to_pylist(), len(arrow_reads)) == ([{"n": 10_000, "half": 4999.5}], 1)
