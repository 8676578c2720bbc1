"""Every accepted input form, target selection, ids, defaults and the result tables."""

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pytest

import cohortsql

FRAME = pl.DataFrame(
    {
        "key": ["a", "b", "c", "d", "e", "f"],
        "age": [20.0, 25.0, 30.0, 60.0, 65.0, 70.0],
        "sex": ["f", "m", "f", "m", "f", "m"],
        "region": ["n", "n", "s", "s", "n", "s"],
        "score": [0.1, 0.2, 0.4, 0.6, 0.8, 0.9],
    }
)
SIMILARITY = {"age": "abs:6", "sex": "exact"}


def explain(data, **options):
    options.setdefault("similarity", SIMILARITY)
    return cohortsql.cohort_shapley(data, prediction="score", **options)


@pytest.fixture(scope="module")
def expected():
    return explain(FRAME)


def same_values(result, expected):
    np.testing.assert_allclose(result.shapley, expected.shapley, atol=1e-14)
    np.testing.assert_allclose(result.shapley_squared, expected.shapley_squared, atol=1e-14)


@pytest.fixture
def files(tmp_path):
    FRAME.write_csv(tmp_path / "data.csv")
    FRAME.write_ndjson(tmp_path / "data.json")  # one object per line, as both engines read JSON
    FRAME.head(3).write_parquet(tmp_path / "part-1.parquet")
    FRAME.tail(3).write_parquet(tmp_path / "part-2.parquet")
    FRAME.write_parquet(tmp_path / "data.parquet")
    return tmp_path


@pytest.mark.parametrize("name", ["data.parquet", "part-*.parquet"])
def test_parquet_paths_and_globs_with_row_positions(files, expected, name, engine, local_files):
    result = explain(str(files / name), **engine.options)
    assert result.ids.to_list() == list(range(6))  # files in name order, rows in file order
    same_values(result, expected)


@pytest.mark.parametrize("name", ["data.csv", "data.json", "data.parquet", "part-*.parquet"])
def test_paths_and_globs_with_an_id(files, expected, name, engine, local_files):
    result = explain(str(files / name), id="key", **engine.options)
    assert result.ids.to_list() == list("abcdef")
    same_values(result, expected)


@pytest.mark.parametrize("name", ["data.csv", "data.json"])
def test_text_file_row_positions_on_duckdb(files, expected, name):
    result = explain(str(files / name))
    assert result.ids.to_list() == list(range(6))
    same_values(result, expected)


def test_pathlib_path(files, expected):
    same_values(explain(Path(files / "data.parquet")), expected)


@pytest.mark.parametrize(
    "convert",
    [
        lambda f: f,
        lambda f: f.lazy(),
        lambda f: f.to_arrow(),
        lambda f: f.to_pandas(),
        lambda f: f.to_arrow().to_reader(),
    ],
    ids=["polars", "lazy", "arrow", "pandas", "arrow-reader"],
)
def test_frames(expected, convert, engine):
    same_values(explain(convert(FRAME), **engine.options), expected)


def test_sql_query_as_data(files, expected, engine, local_files):
    query = f"SELECT * FROM {'parquet.`' + str(files / 'data.parquet') + '`' if engine.name == 'spark' else repr(str(files / 'data.parquet'))}"
    same_values(explain(query, id="key", **engine.options), expected)


def test_relation_and_table_on_the_callers_connection(expected):
    connection = duckdb.connect()
    connection.register("frame", FRAME.to_arrow())
    connection.execute("CREATE TABLE scores AS SELECT * FROM frame")
    same_values(explain("scores", connection=connection), expected)
    same_values(explain(connection.sql("SELECT * FROM scores"), connection=connection), expected)
    # the engine drops what it created on the caller's connection
    names = {row[0] for row in connection.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert names == {"scores"}


def test_relation_of_another_connection(expected):
    connection = duckdb.connect()
    connection.register("frame", FRAME.to_arrow())
    same_values(explain(connection.sql("SELECT * FROM frame")), expected)


def test_target_ids_by_position_and_by_id_column(expected, engine):
    by_position = explain(FRAME, targets=[4, 1], **engine.options)
    assert by_position.ids.to_list() == [1, 4]  # table order
    np.testing.assert_allclose(by_position.shapley, expected.shapley[[1, 4]], atol=1e-14)
    by_key = explain(FRAME, id="key", targets=["e", "b", "e"], **engine.options)
    assert by_key.ids.to_list() == ["b", "e"]
    np.testing.assert_allclose(by_key.shapley, expected.shapley[[1, 4]], atol=1e-14)


def test_targets_by_sql_predicate_over_any_column(expected, engine):
    result = explain(FRAME, id="key", targets="region = 's' AND score > 0.5", **engine.options)
    assert result.ids.to_list() == ["d", "f"]
    np.testing.assert_allclose(result.shapley, expected.shapley[[3, 5]], atol=1e-14)


def test_target_ids_as_numpy_array(expected, engine):
    result = explain(FRAME, targets=np.array([2]), **engine.options)
    np.testing.assert_allclose(result.shapley, expected.shapley[[2]], atol=1e-14)


def test_default_kinds(engine):
    rng = np.random.default_rng(0)
    frame = pl.DataFrame(
        {
            "few": rng.integers(0, 10, 100),  # 10 distinct values -> exact
            "many": rng.uniform(size=100),  # -> range:0.1
            "label": rng.choice(["x", "y"], 100),  # text -> exact
            "flag": rng.integers(0, 2, 100).astype(bool),  # boolean -> exact
            "y": rng.uniform(size=100),
        }
    )
    result = cohortsql.cohort_shapley(
        frame, prediction="y", similarity=["few", "many", "label", "flag"], **engine.options
    )
    assert result.similarity == {"few": "exact", "many": "range:0.1", "label": "exact", "flag": "exact"}
    given = cohortsql.cohort_shapley(
        frame, prediction="y", similarity={"few": "exact", "many": "range:0.1", "label": "exact", "flag": "exact"}
    )
    np.testing.assert_allclose(result.shapley, given.shapley, atol=1e-12)


@pytest.mark.parametrize(
    "options",
    [{}, {"weight": "w"}, {"engine": cohortsql.DuckDB(memory_limit="200MB")}],
    ids=["plain", "weighted", "limited"],
)
def test_a_long_tailed_number_gets_a_quantile_window_by_default(engine, options):
    """A lognormal income under range:0.1 keeps most rows around its mean, so its default is
    quantile:0.1, with the parameters an explicit quantile:0.1 gets (sorted quantiles under a memory
    limit, weighted quantiles with weights); normal and uniform numbers keep range:0.1."""
    if "engine" in options and engine.name != "duckdb":
        pytest.skip("memory_limit is DuckDB's")
    rng = np.random.default_rng(2)
    n = 400
    frame = pl.DataFrame(
        {
            "income": rng.lognormal(10, 1, n),
            "height": rng.normal(170, 10, n),
            "share": rng.uniform(size=n),
            "w": rng.integers(1, 4, n).astype(float),
        }
    ).with_columns(y=pl.col("income").log() + pl.col("share"))
    features = ["income", "height", "share"]
    defaulted = cohortsql.cohort_shapley(frame, prediction="y", similarity=features, **options, **engine.options)
    assert defaulted.similarity == {"income": "quantile:0.1", "height": "range:0.1", "share": "range:0.1"}
    reasons = defaulted.settings["default_kinds"]
    assert reasons["income"].startswith("long-tailed: range:0.1 would keep 9")
    assert "keeping" in reasons["height"] and reasons["height"].endswith("of its values around the mean")
    given = {"income": "quantile:0.1", "height": "range:0.1", "share": "range:0.1"}
    explicit = cohortsql.cohort_shapley(frame, prediction="y", similarity=given, **options)
    np.testing.assert_allclose(defaulted.shapley, explicit.shapley, atol=1e-12)
    assert "default_kinds" not in explicit.settings  # nothing was chosen for the caller


def test_similarity_objects_and_text_mix(expected):
    result = explain(FRAME, similarity={"age": cohortsql.AbsoluteWindow(6), "sex": "exact"})
    same_values(result, expected)


@pytest.mark.parametrize("kind", ["abs:5", "range:0.1", "exact"])
@pytest.mark.parametrize("source", ["frame", "parquet"])
def test_nan_is_missing_under_every_kind(kind, source, engine, tmp_path):
    """Also from Parquet, whose column statistics leave NaN out (DuckDB 2.0 once took that to mean
    no NaN, and a range window's width came out NaN)."""
    frame = pd.DataFrame({"x": [1.0, np.nan, 1.0, np.nan], "y": [1.0, 2.0, 3.0, 5.0]})
    data: pd.DataFrame | str = frame
    if source == "parquet":
        if engine.name == "adbc":
            pytest.skip("the adbc engine reads the server's tables, not this machine's files")
        data = str(tmp_path / "nan.parquet")
        pl.from_pandas(frame, nan_to_null=False).write_parquet(
            data
        )  # polars writes min/max statistics that leave NaN out
    result = cohortsql.cohort_shapley(data, prediction="y", similarity={"x": kind}, **engine.options)
    # the two missing values form one cohort, the two present ones another
    assert sorted(result.totals["cohort_mean"].to_list()) == [2.0, 2.0, 3.5, 3.5]
    assert result.totals["cohort_size"].to_list() == [2, 2, 2, 2]
    default = cohortsql.cohort_shapley(data, prediction="y", similarity=["x"], **engine.options)
    assert sorted(default.totals["cohort_mean"].to_list()) == [2.0, 2.0, 3.5, 3.5]


def parquet_with_nan(tmp_path, column: str) -> tuple[pl.DataFrame, str]:
    """500 rows whose `column` is NaN in 45 of them, and a Parquet file of them: polars writes each
    column's minimum and maximum leaving NaN out, as the format says."""
    rng = np.random.default_rng(8)
    frame = pl.DataFrame(
        {"x": rng.normal(size=500), "k": rng.integers(0, 3, 500), "y": rng.normal(size=500), "w": np.ones(500)}
    ).with_columns(pl.when(pl.int_range(500) % 11 == 7).then(float("nan")).otherwise(pl.col(column)).alias(column))
    path = str(tmp_path / "nan.parquet")
    frame.write_parquet(path)
    return frame, path


@pytest.mark.parametrize("kind", ["abs:0.5", "range:0.2", "exact"])
def test_nan_in_a_parquet_file_of_many_rows_is_missing_as_in_the_frame(kind, engine, tmp_path):
    """DuckDB 2.0.1 took a Parquet column whose statistics leave NaN out to hold none (count_if(isnan(x))
    counted 0 of 45): the feature was compared with NaN as a number, and the values differed from the
    frame's. The file gives the frame's values on every engine."""
    if engine.name == "adbc":
        pytest.skip("the adbc engine reads the server's tables, not this machine's files")
    frame, path = parquet_with_nan(tmp_path, "x")
    asked = dict(prediction="y", similarity={"x": kind, "k": "exact"}, targets=list(range(0, 500, 25)))
    from_file = cohortsql.cohort_shapley(path, **asked, **engine.options)
    from_frame = cohortsql.cohort_shapley(frame, **asked)
    np.testing.assert_allclose(from_file.shapley, from_frame.shapley, atol=1e-12)
    assert from_file.totals["cohort_size"].to_list() == from_frame.totals["cohort_size"].to_list()


@pytest.mark.parametrize("column", ["y", "w"])
def test_a_nan_prediction_or_weight_in_a_parquet_file_is_refused_as_nan(column, engine, tmp_path):
    """The finiteness checks of the explained column and the weights read NaN from a Parquet file too
    (DuckDB 2.0.1 once skipped it: a NaN prediction passed, then failed as an overflow of its squares)."""
    if engine.name == "adbc":
        pytest.skip("the adbc engine reads the server's tables, not this machine's files")
    _, path = parquet_with_nan(tmp_path, column)
    with pytest.raises(
        cohortsql.CohortError, match=r"has 45 (negative, )?NULL, NaN or infinite values \(the first at row 7\)"
    ):
        cohortsql.cohort_shapley(path, prediction="y", similarity={"x": "abs:0.5"}, weight="w", **engine.options)


def test_a_duration_column_comes_back_as_it_was_given(engine):
    """A column DuckDB reads as an interval (a polars Duration, also in a list or a struct), feature or
    not: the targets' rows hold the caller's durations (polars cannot import Arrow's interval type:
    every call on such a frame had failed), and the copy check's sample of the rows is read as well."""
    import datetime

    rng = np.random.default_rng(2)
    frame = pl.DataFrame(
        {
            "x": rng.normal(size=40),
            "y": rng.normal(size=40),
            "span": pl.Series([None if k == 3 else datetime.timedelta(days=k, microseconds=7) for k in range(40)]),
            "spans": [None if k == 5 else [datetime.timedelta(seconds=k), None] for k in range(40)],
            "stay": [{"length": datetime.timedelta(hours=k), "ward": f"w{k % 3}"} for k in range(40)],
        }
    )
    if engine.name == "adbc":  # the PostgreSQL driver maps no struct column (a clear error of its own)
        frame = frame.drop("stay")
    for targets in ([0, 3, 7], None):
        result = cohortsql.cohort_shapley(
            frame, prediction="y", similarity={"x": "abs:0.3"}, targets=targets, **engine.options
        )
        assert result.targets.equals(frame[targets or slice(None)]), targets


def test_an_interval_of_months_comes_back_as_its_parts():
    """A DuckDB table's INTERVAL column, which may count months (no duration can): a struct of its months,
    days and nanoseconds."""
    connection = duckdb.connect()
    connection.execute(
        "CREATE TABLE t AS SELECT i AS x, i * 0.5 AS y, INTERVAL (i) MONTH + INTERVAL 2 DAY AS every FROM range(12) r(i)"
    )
    result = cohortsql.cohort_shapley(
        "t", prediction="y", similarity={"x": "abs:2"}, targets=[1], connection=connection
    )
    assert result.targets["every"].to_list() == [{"months": 1, "days": 2, "nanoseconds": 0}]


def test_result_tables(expected, tmp_path):
    local = expected.local
    assert local.columns == ["id", "feature", "feature_value", "prediction", "shapley", "shapley_squared"]
    assert local.height == 6 * 2
    assert local["feature"].to_list()[:4] == ["age", "sex", "age", "sex"]
    assert expected.totals.columns == ["id", "prediction", "cohort_size", "cohort_mean", "value", "value_squared"]
    wide = expected.wide("shapley_squared")
    assert wide.columns == ["id", "age", "sex"]
    np.testing.assert_array_equal(wide["sex"].to_numpy(), expected.shapley_squared[:, 1])
    assert expected.features == ("age", "sex")
    assert expected.mean == pytest.approx(FRAME["score"].mean())
    assert expected.to_arrow().num_rows == 12
    path = tmp_path / "local.parquet"
    expected.write_parquet(path)
    assert pl.read_parquet(path).equals(local)
    assert list(tmp_path.iterdir()) == [path]


def test_infinity_is_a_value_like_any_other_under_exact():
    frame = pl.DataFrame({"x": [1.0, float("inf"), float("inf"), 2.0], "y": [1.0, 2.0, 4.0, 5.0]})
    result = cohortsql.cohort_shapley(frame, prediction="y", similarity=["x"])  # 3 distinct values -> exact
    assert result.similarity == {"x": "exact"}
    assert result.totals["cohort_mean"].to_list() == [1.0, 3.0, 3.0, 5.0]
