"""Every mistake a user can make raises CohortError with a message that names the culprit."""

import re

import duckdb
import numpy as np
import polars as pl
import pytest

import cohortsql
from cohortsql import CohortError

FRAME = pl.DataFrame({"id": [1, 2, 3], "age": [1.0, 2.0, 3.0], "sex": ["f", "m", "f"], "y": [0.1, 0.5, 0.9]})


def explain(data=FRAME, **options):
    options.setdefault("prediction", "y")
    options.setdefault("similarity", {"age": "abs:1", "sex": "exact"})
    return cohortsql.cohort_shapley(data, **options)


@pytest.mark.parametrize(
    "options, message",
    [
        (
            {"similarity": {"income": "abs:1"}},
            "feature column 'income' is not in the data; its columns are: 'id', 'age', 'sex', 'y'",
        ),
        ({"similarity": ["age", "income"]}, "feature column 'income' is not in the data"),
        ({"prediction": "score"}, "prediction column 'score' is not in the data"),
        ({"prediction": "sex"}, "prediction column 'sex' holds text values; it must be numeric"),
        ({"id": "key"}, "id column 'key' is not in the data"),
        (
            {"similarity": {"sex": "range:0.1"}},
            "feature 'sex' holds text values, but similarity range:0.1 needs numbers, dates or timestamps",
        ),
        (
            {"similarity": {"age": "abs:-2"}},
            "feature 'age': malformed similarity 'abs:-2': abs delta must be a finite number >= 0, got -2",
        ),
        ({"similarity": {"age": "window:2"}}, "feature 'age': malformed similarity 'window:2'"),
        ({"similarity": {"age": 3}}, "feature 'age': a similarity kind must be a Similarity object or text"),
        ({"similarity": {}}, "similarity names no features"),
        ({"similarity": "age"}, "similarity must be a mapping"),
        ({"targets": [1, 7, 9]}, "target ids not found in the row positions: 7, 9"),
        ({"id": "id", "targets": [0, 3]}, "target ids not found in the id column 'id': 0"),
        ({"targets": []}, "targets is an empty list"),
        ({"sample": 3.5, "seed": 1}, "a sample fraction of 3.5 must be in (0, 1]"),
        ({"sample": 0, "seed": 1}, "a sample of 0 targets must be between 1 and the 3 rows it is drawn from"),
        ({"targets": 4, "seed": 1}, "between 1 and the 3 rows"),
        (
            {"targets": 4},
            "targets=4 would explain a random sample of 4 rows, a different one every run: write targets=[4]",
        ),
        ({"targets": np.int64(2)}, "targets=2 would explain a random sample"),
        (
            {"targets": {"a": 1}},
            "targets must be None, a SQL predicate, a sample size or fraction, or a list of id values; got dict",
        ),
        ({"path": "fastest"}, "path must be one of auto, pairwise, grouping_sets, got 'fastest'"),
        (
            {"path": "grouping_sets"},
            "path='grouping_sets' needs exact or bins similarity for every feature; ['age'] are not",
        ),
        ({"targets": "age > 100"}, "targets 'age > 100' selects no rows"),
        ({"targets": "height > 1"}, "reading the data with targets 'height > 1': Binder Error"),
        ({"method": "fast"}, "method must be one of exact, permutation, integrated, auto, got 'fast'"),
        (
            {"similarity": {"age": "sql:s.height = t.height"}},
            "computing similarity masks (check the sql: similarity of ['age'])",
        ),
    ],
)
def test_bad_arguments(options, message):
    with pytest.raises(CohortError) as raised:
        explain(**options)
    assert message in str(raised.value)


@pytest.mark.parametrize("bad", [None, float("nan"), float("inf")])
def test_bad_values_in_the_prediction(bad):
    frame = FRAME.with_columns(pl.Series("y", [0.1, bad, 0.3], dtype=pl.Float64))
    with pytest.raises(
        CohortError, match=r"prediction column 'y' has 1 NULL, NaN or infinite values \(the first at row 1\)"
    ):
        explain(frame)


def test_infinite_window_predictor():
    frame = FRAME.with_columns(age=pl.Series([1.0, float("inf"), 2.0]))
    with pytest.raises(CohortError, match="feature 'age' has 1 infinite value; "):
        explain(frame)


def test_empty_table():
    with pytest.raises(CohortError, match="the data has no rows"):
        explain(FRAME.clear())


@pytest.mark.parametrize(
    "ids, message",
    [
        ([1, 1, 2], "id column 'id' has 1 duplicate values"),
        ([5, 5, 5], "id column 'id' has 2 duplicate values"),
        ([1, None, 2], "id column 'id' has 1 NULL values"),
        ([None, None, 2], "id column 'id' has 2 NULL values"),
    ],
)
@pytest.mark.parametrize("memory_limit", [None, "500MB"], ids=["in-place", "grouped"])
def test_bad_id_column(ids, message, memory_limit):
    """Under a memory limit duplicates are counted by a grouped query of their own (it spills)."""
    with pytest.raises(CohortError, match=message):
        explain(FRAME.with_columns(id=pl.Series(ids)), id="id", engine=cohortsql.DuckDB(memory_limit=memory_limit))


def test_missing_files(tmp_path):
    with pytest.raises(CohortError, match="no file named '.*nowhere.parquet'"):
        explain(str(tmp_path / "nowhere.parquet"))
    with pytest.raises(CohortError, match="no file matches '.*part-\\*.parquet'"):
        explain(str(tmp_path / "part-*.parquet"))
    with pytest.raises(CohortError, match="no file or table named 'scores'"):
        explain("scores", connection=duckdb.connect())


def test_unknown_file_format(tmp_path):
    path = tmp_path / "data.xlsx"
    path.write_text("x")
    with pytest.raises(CohortError, match="cannot tell the format of '.*data.xlsx'"):
        explain(str(path))


def test_unreadable_input_type():
    with pytest.raises(CohortError, match="cannot read data of type dict"):
        explain({"y": [1.0]})


def test_too_many_features_for_exact():
    frame = pl.DataFrame({f"x{j}": [0, 1] for j in range(25)} | {"y": [0.0, 1.0]})
    with pytest.raises(CohortError, match="exact method handles at most 24 features .* got 25"):
        cohortsql.cohort_shapley(frame, prediction="y", similarity=[f"x{j}" for j in range(25)])


def test_duplicate_feature():
    with pytest.raises(CohortError, match="feature 'age' is listed twice"):
        explain(similarity=["age", "age"])


def test_reserved_column_names():
    with pytest.raises(CohortError, match="column '__cohort_row': names starting with '__cohort_' are reserved"):
        explain(FRAME.with_columns(__cohort_row=pl.lit(1)))


def test_mixed_target_id_types():
    with pytest.raises(CohortError, match="target ids must all be of one type"):
        explain(targets=[1, "a"])


def test_write_parquet_into_a_missing_directory(tmp_path):
    result = explain()
    with pytest.raises(CohortError, match="the directory .* does not exist"):
        result.write_parquet(tmp_path / "no" / "such" / "out.parquet")


def test_wide_of_an_unknown_column():
    with pytest.raises(CohortError, match="wide\\(\\) shows one of shapley, shapley_squared, not 'value'"):
        explain().wide("value")


def test_errors_are_value_errors():
    assert issubclass(CohortError, ValueError)
    assert np.isfinite(explain().shapley).all()


def test_a_misspelled_option_is_named_with_the_closest_one():
    """Options come as **options: a typo must not be ignored, by any public function."""
    frame = pl.DataFrame({"a": list(range(12)), "y": [0.1 * value for value in range(12)]})
    for call, wrong, right in (
        (lambda: cohortsql.cohort_shapley(frame, prediction="y", similarity=["a"], sampel=3), "sampel", "sample"),
        (
            lambda: cohortsql.shapley_effects(frame, prediction="y", similarity=["a"], boostrap=5),
            "boostrap",
            "bootstrap",
        ),
        (
            lambda: cohortsql.sql_query(frame, prediction="y", similarity=["a"], table="t", wieght="w"),
            "wieght",
            "weight",
        ),
        (lambda: cohortsql.calibrate(frame, features=["a"], runs=1, engin="duckdb"), "engin", "engine"),
    ):
        with pytest.raises(cohortsql.CohortError, match=rf"unknown argument '{wrong}'; did you mean '{right}'\?"):
            call()


# -- round 3: inputs that raised raw errors ------------------------------------------------------


def _decimals(digits):
    import decimal

    import pyarrow as pa

    values = pa.array([decimal.Decimal(i) for i in range(3)], type=pa.decimal256(digits, 0))
    return pa.table({"age": values, "y": [0.1, 0.5, 0.9]})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (lambda: pl.DataFrame({"age": pl.Series([1, 2, 3], dtype=pl.Int128), "y": [0.1, 0.5, 0.9]}), "cannot read"),
        (
            lambda: __import__("pandas").DataFrame({"age": [1, "a", 2.5], "y": [0.1, 0.5, 0.9]}),
            "cannot read the DataFrame as a table",
        ),
        (
            lambda: pl.LazyFrame({"age": [1, 2, 3], "y": [0.1, 0.5, 0.9]}).with_columns(pl.col("age").str.len_chars()),
            "cannot read the LazyFrame as a table",
        ),
        (lambda: _decimals(40), "column 'age' holds decimals of 40 digits"),
    ],
)
def test_frames_that_cannot_be_read_are_one_cohort_error(data, message):
    with pytest.raises(CohortError, match=message):
        explain(data(), similarity=["age"])


def test_half_floats_and_narrow_256_bit_decimals_are_widened():
    import pyarrow as pa

    half = pa.table({"age": pa.array(np.array([1, 2, 3], dtype=np.float16)), "y": [0.1, 0.5, 0.9]})
    reference = explain(pl.DataFrame({"age": [1.0, 2.0, 3.0], "y": [0.1, 0.5, 0.9]}), similarity=["age"]).shapley
    np.testing.assert_array_equal(explain(half, similarity=["age"]).shapley, reference)
    np.testing.assert_array_equal(explain(_decimals(30), similarity=["age"]).shapley, reference)


def test_command_line_inputs_that_raised_raw_errors(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from cohortsql.cli import app

    runner = CliRunner()
    data = tmp_path / "d.parquet"
    FRAME.write_parquet(data)
    (tmp_path / "bad.toml").write_bytes(b'data = "\xff\xfe"\n')
    cases = [
        (["plot", data, "--out", tmp_path / "fig.xyz"], "name a figure file ending in one of"),
        (["calibrate", data, "--features", "age", "--plot", tmp_path / "fig.xyz"], "name a figure file"),
        (["shapley", "--config", tmp_path / "bad.toml"], "is not UTF-8 text"),
    ]
    for arguments, message in cases:
        result = runner.invoke(app, [str(argument) for argument in arguments])
        assert result.exit_code == 2 and message in result.output, result.output
    for remote, message in [("", "SPARK_REMOTE is set but empty"), ("http://x:1", "must name a Spark Connect")]:
        monkeypatch.setenv("SPARK_REMOTE", remote)
        result = runner.invoke(
            app, ["shapley", str(data), "--prediction", "y", "--features", "age", "--engine", "spark"]
        )
        assert result.exit_code == 2 and message in result.output, result.output


def test_the_command_line_names_options_as_flags(tmp_path):
    """Messages are written once, in the API's spelling (method='permutation'); the command line
    shows its own (--method permutation), which is what its user can type."""
    from typer.testing import CliRunner

    from cohortsql.cli import app
    from cohortsql.cli.flags import cli_spelling

    wide = pl.DataFrame({f"x{j}": [0, 1, 0, 1] for j in range(25)}).with_columns(y=pl.Series([0.1, 0.2, 0.3, 0.4]))
    data = tmp_path / "wide.parquet"
    wide.write_parquet(data)
    features = ",".join(f"x{j}" for j in range(25))
    arguments = ["shapley", str(data), "--prediction", "y", "--features", features, "--method", "exact"]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 2 and "use --method permutation (or 'auto')" in result.output, result.output
    assert "method=" not in result.output
    assert cli_spelling("(baseline_sample=), realistic=False, sample=10; x=1") == (
        "(--baseline-sample), --no-realistic, --sample 10; x=1"
    )


def test_every_other_column_is_a_feature_with_all_or_star():
    data = FRAME.with_columns(w=pl.Series([1.0, 2.0, 1.0]))
    every = explain(data, similarity="all", id="id", weight="w")
    assert every.features == ("age", "sex")  # not the id, the weight or the explained column
    explicit = explain(data, similarity={"age": None, "sex": None}, id="id", weight="w")
    np.testing.assert_array_equal(every.shapley, explicit.shapley)
    one_kind = explain(data, similarity={"sex": "exact", "*": "abs:1"}, id="id", weight="w")
    assert one_kind.features == ("sex", "age")
    np.testing.assert_array_equal(
        one_kind.shapley, explain(data, similarity={"sex": "exact", "age": "abs:1"}, id="id", weight="w").shapley
    )
    with pytest.raises(CohortError, match=r"similarity '\*' \(every other column\) adds no columns"):
        explain(data.select("id", "y"), similarity="all", id="id")
    with pytest.raises(CohortError, match="a list of feature names or 'all'"):
        explain(similarity="every")


def test_the_command_line_takes_all_features(tmp_path):
    from typer.testing import CliRunner

    from cohortsql.cli import app

    data = tmp_path / "d.parquet"
    FRAME.write_parquet(data)
    out = tmp_path / "out.parquet"
    arguments = ["shapley", str(data), "--prediction", "y", "--id", "id", "--features", "all", "--out", str(out)]
    result = CliRunner().invoke(app, [*arguments, "--similar", "age=abs:1"])
    assert result.exit_code == 0, result.output
    assert pl.read_parquet(out)["feature"].unique(maintain_order=True).to_list() == ["sex", "age"]


@pytest.mark.parametrize("master", ["bogus://x", "local[two]", "spark://"])
def test_a_spark_master_spark_would_refuse_is_one_line_before_java_starts(tmp_path, master):
    import subprocess
    import sys

    data = tmp_path / "d.parquet"
    FRAME.write_parquet(data)
    arguments = ["shapley", str(data), "--prediction", "y", "--features", "age", "--engine", "spark"]
    result = subprocess.run(
        [sys.executable, "-m", "cohortsql", *arguments, "--spark-master", master],
        capture_output=True,
        text=True,
    )
    output = (result.stdout + result.stderr).strip().splitlines()
    assert result.returncode == 2 and len(output) == 1, output
    assert output[0].startswith(f"cohortsql: error: cannot start Spark on master {master!r}")


def test_messages_blame_the_right_thing(tmp_path):
    """Each named the wrong culprit: the targets for an empty list of baselines, text values for a CSV of
    a header alone, a missing column for a ragged CSV (while listing it), and neither the feature nor
    the kind for a window too wide for a DOUBLE."""
    (tmp_path / "empty.csv").write_text("age,sex,y\n")
    (tmp_path / "ragged.csv").write_text("age,sex,y\n1,f,0.1\n2,m\n3,f,0.9,7\n1,m,0.3\n")
    cases = [
        (
            lambda: cohortsql.baseline_shapley(
                FRAME, model=lambda f: f["age"].to_numpy(), features=["age"], baseline=[]
            ),
            "baseline is an empty list; name at least one row's id",
        ),
        (lambda: explain(str(tmp_path / "empty.csv"), similarity=["age"]), "the data has no rows"),
        (lambda: explain(str(tmp_path / "ragged.csv"), similarity=["age"]), "lines of different lengths"),
        (
            lambda: explain(similarity={"age": "quantile:1e308"}),
            "feature 'age': similarity quantile:1e+308 makes a delta beyond the largest number",
        ),
        (
            lambda: explain(FRAME.with_columns(age=pl.col("age") * 1e307), similarity={"age": "quantile:10"}),
            "feature 'age': similarity quantile:10 makes a delta beyond the largest number",
        ),
        (
            lambda: explain(similarity={"age": "range:10"}),
            "range:10 is 10 times the feature's whole range (max - min), which makes every row similar to every"
            " other: range takes a fraction of it, from 0 to 1 (range:0.1 is a tenth)",
        ),
    ]
    for call, message in cases:
        with pytest.raises(CohortError, match=re.escape(message)):
            call()


def test_a_misspelled_column_of_a_wide_table_is_a_short_message_with_the_closest_names():
    """A 2,000-column table printed every name (31 KB); now the closest names, else the first 20."""
    wide = pl.DataFrame({f"pixel_{j}": [0.0, 1.0, 2.0] for j in range(2_000)}).with_columns(y=pl.lit(1.0))
    with pytest.raises(CohortError) as raised:
        cohortsql.cohort_shapley(wide, prediction="y", similarity=["pixle_17"])
    assert "did you mean 'pixel_17'" in str(raised.value) and len(str(raised.value)) < 200
    with pytest.raises(CohortError) as raised:
        cohortsql.cohort_shapley(wide, prediction="y", similarity=["zzzz"])
    assert "'pixel_19' and 1,981 more" in str(raised.value) and len(str(raised.value)) < 600
