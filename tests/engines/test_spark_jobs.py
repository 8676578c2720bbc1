"""What one call asks of Spark beyond the histogram: its whole-table queries read the input in a few
partitions a core, a cached input is not cached again, and a session on Spark's default shuffle
partitions uses a few a core while cohortsql's queries run (each partition is a task: on local[2], a
frame of 1,000,000 in-memory rows in 100 partitions made the ids' check take 7-10 s instead of 0.5 s)."""

import numpy as np
import pyarrow as pa
import pytest

import cohortsql

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from cohortsql.engines.spark import SCAN_PARTITIONS_PER_CORE, SparkEngine  # noqa: E402


def arrow_table(n=400):
    rng = np.random.default_rng(5)
    return pa.table({"k": np.arange(n), "x": rng.uniform(size=n), "z": rng.integers(0, 3, n), "y": rng.normal(size=n)})


def test_an_input_of_many_small_partitions_is_read_in_a_few_a_core(spark_session):
    frame = spark_session.createDataFrame(arrow_table()).repartition(40)
    cores = spark_session.sparkContext.defaultParallelism
    with SparkEngine(spark_session) as engine:
        relation = engine.register_input(frame, positions=False).relation
        partitions = spark_session.table(relation.strip("`")).rdd.getNumPartitions()
    assert partitions == SCAN_PARTITIONS_PER_CORE * cores
    # The same values as the uncoalesced frame's, and DuckDB's.
    options = dict(prediction="y", similarity={"x": "abs:0.1", "z": "exact"}, id="k", targets=[3, 99, 250])
    np.testing.assert_allclose(
        cohortsql.cohort_shapley(frame, **options).shapley,
        cohortsql.cohort_shapley(arrow_table(), **options).shapley,
        atol=1e-12,
    )


def test_a_cached_input_is_not_cached_again(spark_session):
    frame = spark_session.createDataFrame(arrow_table())
    spark_session.sql("DROP VIEW IF EXISTS cached_scores")
    frame.createOrReplaceTempView("cached_scores")
    with SparkEngine(spark_session) as engine:
        assert not engine.register_input(frame, positions=False).rescans_are_cheap
        assert not engine.register_input("cached_scores", positions=False).rescans_are_cheap
    frame.cache()
    spark_session.catalog.cacheTable("cached_scores")
    try:
        with SparkEngine(spark_session) as engine:
            assert engine.register_input(frame, positions=False).rescans_are_cheap
            assert engine.register_input("cached_scores", positions=False).rescans_are_cheap
    finally:
        spark_session.catalog.uncacheTable("cached_scores")
        frame.unpersist()


@pytest.mark.parametrize(("setting", "while_querying"), [("200", "scaled"), ("7", "7")])
def test_spark_s_default_shuffle_partitions_are_scaled_to_the_cores_while_cohortsql_queries(
    spark_session, setting, while_querying
):
    """Spark's default (200) becomes a few partitions a core for cohortsql's queries, and is restored;
    a value the user chose is kept."""
    key = "spark.sql.shuffle.partitions"
    before = spark_session.conf.get(key)
    spark_session.conf.set(key, setting)
    try:
        with SparkEngine(spark_session) as engine:
            seen = engine._run(lambda: spark_session.conf.get(key), "reading a setting")
        expected = str(SCAN_PARTITIONS_PER_CORE * spark_session.sparkContext.defaultParallelism)
        assert seen == (expected if while_querying == "scaled" else while_querying)
        assert spark_session.conf.get(key) == setting
    finally:
        spark_session.conf.set(key, before)
