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


@pytest.mark.parametrize("merge_tasks", [0, 4], ids=["by-spark", "on-the-driver"])
def test_the_executors_partial_histograms_merged_by_spark_or_by_the_driver_equal_duckdb(
    spark_session, monkeypatch, merge_tasks
):
    """Up to `DRIVER_MERGE_TASKS` tasks, the driver sums their partial histograms; beyond, a Spark aggregate."""
    from cohortsql.engines import spark as spark_engine
    from cohortsql.engines import spark_histogram
    from cohortsql.numeric import pair_masks

    monkeypatch.setattr(spark_engine, "EXECUTOR_HISTOGRAM_PAIRS", 0)
    monkeypatch.setattr(spark_histogram, "DRIVER_MERGE_TASKS", merge_tasks)
    merged_here = []
    original = pair_masks.merged_cells
    monkeypatch.setattr(pair_masks, "merged_cells", lambda *arguments: merged_here.append(True) or original(*arguments))
    data = arrow_table().append_column("w", pa.array(np.arange(400) % 3 + 0.5))
    options = dict(
        prediction="y", similarity={"x": "abs:0.05", "z": "exact"}, id="k", weight="w", targets=[0, 7, 123, 399]
    )
    on_spark = cohortsql.cohort_shapley(spark_session.createDataFrame(data).repartition(5), **options)
    on_duckdb = cohortsql.cohort_shapley(data, **options)
    assert bool(merged_here) == bool(merge_tasks)
    np.testing.assert_allclose(on_spark.shapley, on_duckdb.shapley, atol=1e-12)
    assert on_spark.totals["cohort_size"].to_list() == on_duckdb.totals["cohort_size"].to_list()


def _prepared(data, **options):
    """(whether the subjects were collapsed, the estimate of distinct predictor rows) of a call."""
    from cohortsql._typing import ShapleyOptions
    from cohortsql.request.options import checked_options
    from cohortsql.run.session import open_session

    asked = checked_options({"id": "k", **options}, ShapleyOptions)
    kinds = {"z": "exact", "b": "exact"}
    with open_session(data, asked, outcomes=("y",), similarity=kinds, max_features=64) as session:
        return session.prepared.compressed, session.prepared.statistics.distinct_rows


def test_the_ids_check_of_its_own_also_estimates_the_distinct_rows(spark_session, monkeypatch):
    """Where repeated ids are counted by a grouped query of its own (Spark; DuckDB under a memory
    limit), that query also estimates the distinct predictor rows, over one row per id (Spark cannot
    compile its HyperLogLog with the statistics' other aggregates): identical rows are collapsed there
    as where both are among the statistics. So does Spark's count of integer ids in this process
    (`spark_ids.counted_here`), its grouped query set aside here."""
    from cohortsql.engines import spark_ids

    data = arrow_table().append_column("b", pa.array(np.arange(400) % 2 == 0))
    in_place = _prepared(data)
    assert in_place == (True, 6)  # 3 values of z x 2 of b
    assert _prepared(data, engine=cohortsql.DuckDB(memory_limit="500MB")) == in_place
    assert _prepared(data, connection=spark_session) == in_place  # the ids read here
    queries = {}
    for read, original in (("fetch_arrow", SparkEngine.fetch_arrow), ("fetch_one_row", SparkEngine.fetch_one_row)):

        def recording(self, select, *, context, _original=original):
            queries[context] = select
            return _original(self, select, context=context)

        monkeypatch.setattr(SparkEngine, read, recording)
    monkeypatch.setattr(spark_ids, "DRIVER_ID_ROWS", -1)
    assert _prepared(data, connection=spark_session) == in_place
    assert "AS `distinct_rows`" in queries["checking that ids are unique"]
    assert "AS `distinct_rows`" not in queries["computing table statistics"]
    repeated = data.set_column(0, "k", pa.array(np.arange(400) // 2))
    for options in ({"engine": cohortsql.DuckDB(memory_limit="500MB")}, {"connection": spark_session}):
        with pytest.raises(cohortsql.CohortError, match="id column 'k' has 200 duplicate values"):
            _prepared(repeated, **options)


def test_a_spark_connect_session_keeps_its_shuffle_partitions(spark_connect):
    """A Connect client cannot see the cluster's cores: its setting is left as it is, even Spark's default."""
    key = "spark.sql.shuffle.partitions"
    before = spark_connect.conf.get(key)
    spark_connect.conf.set(key, "200")
    try:
        with SparkEngine(spark_connect) as engine:
            assert engine._run(lambda: spark_connect.conf.get(key), "reading a setting") == "200"
    finally:
        spark_connect.conf.set(key, before)


def test_a_call_drops_its_views_through_the_catalog_and_leaves_none(spark_session, monkeypatch):
    """Each temporary view a call made is dropped by the session's catalog (3 ms), not by a DROP VIEW
    statement Spark parses and plans (17 ms each, three or more a call); none is left behind, the
    caller's own views included as they were."""
    statements: list[str] = []
    original = SparkEngine._execute

    def recording(self, sql, *, context):
        statements.append(sql)
        return original(self, sql, context=context)

    monkeypatch.setattr(SparkEngine, "_execute", recording)
    spark_session.createDataFrame(arrow_table()).createOrReplaceTempView("callers_own")
    before = {table.name for table in spark_session.catalog.listTables() if table.isTemporary}
    frame = spark_session.createDataFrame(arrow_table())
    cohortsql.cohort_shapley(frame, prediction="y", similarity={"x": "abs:0.1", "z": "exact"}, id="k", targets=[3, 99])
    after = {table.name for table in spark_session.catalog.listTables() if table.isTemporary}
    assert after == before and "callers_own" in after
    assert not any(sql.lstrip().upper().startswith("DROP") for sql in statements)
    spark_session.catalog.dropTempView("callers_own")
