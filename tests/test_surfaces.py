"""SQL out (and back into DuckDB), the `global` and `sql` commands, and the polars namespace."""

import subprocess
import sys

import duckdb
import numpy as np
import polars as pl
import pytest
import sqlglot
from typer.testing import CliRunner

import cohortsql
from cohortsql import pairwise, shapley
from cohortsql.cli import app
from cohortsql.engine import DuckDBEngine
from cohortsql.prepare import prepare

runner = CliRunner()
SIMILARITY = {
    "age": "quantile:0.2",
    "region": "exact",
    "income": "bins:4",
    "tenure": "sql:abs(s.tenure - t.tenure) <= 2",
}


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(12)
    n = 150
    return pl.DataFrame(
        {
            "loan": [f"L{i}" for i in range(n)],
            "age": rng.uniform(20, 70, n),
            "region": rng.choice(["n", "s", "e"], n),
            "income": rng.lognormal(3, 0.5, n),
            "tenure": rng.integers(0, 12, n),
            "score": rng.uniform(size=n),
        }
    ).with_columns(age=pl.when(pl.col("tenure") == 3).then(None).otherwise(pl.col("age")))


@pytest.fixture
def parquet(tmp_path, frame):
    path = tmp_path / "loans.parquet"
    frame.write_parquet(path)
    return path


def library_histogram(path, targets):
    """The histogram the library itself computes, keyed by target id."""
    with DuckDBEngine() as engine:
        prepared = prepare(
            engine,
            str(path),
            prediction="score",
            similarity=SIMILARITY,
            id="loan",
            targets=targets,
            seed=None,
            max_features=128,
        )
        ids = prepared.distinct_targets.column("__cohort_id").to_pylist()
        rows = []
        for start, _, histogram in pairwise._histograms(engine, prepared, 1000):
            for target, mask, count, total in zip(
                histogram["target"], histogram["mask0"], histogram["subjects"], histogram["sum_y"]
            ):
                rows.append((ids[start + target], int(mask), int(count), float(total)))
    return pl.DataFrame(rows, schema=["target", "mask0", "subjects", "sum_y"], orient="row").sort("target", "mask0")


@pytest.mark.parametrize("targets", [None, "region = 's' AND tenure > 5", ["L3", "L40"]])
def test_duckdb_sql_gives_the_library_histogram(parquet, targets):
    text = cohortsql.histogram_sql(str(parquet), prediction="score", similarity=SIMILARITY, id="loan", targets=targets)
    ours = duckdb.sql(text).pl().with_columns(pl.col("subjects").cast(pl.Int64)).sort("target", "mask0")
    expected = library_histogram(parquet, targets)
    assert ours.select("target", "mask0", "subjects").equals(expected.select("target", "mask0", "subjects"))
    np.testing.assert_allclose(ours["sum_y"].to_numpy(), expected["sum_y"].to_numpy(), atol=1e-12)


def test_sql_histogram_gives_the_same_cohort_shapley_values(parquet):
    text = cohortsql.histogram_sql(str(parquet), prediction="score", similarity=SIMILARITY, id="loan", targets=["L7"])
    histogram = duckdb.sql(text).fetchnumpy()
    mean = pl.read_parquet(parquet)["score"].mean()
    counts, sums = shapley.scatter_histograms(
        np.zeros(len(histogram["mask0"]), dtype=int),
        histogram["mask0"],
        histogram["subjects"],
        histogram["sum_y"],
        1,
        4,
    )
    values = shapley.cohort_shapley(counts, sums, mean, np.ones(1))
    result = cohortsql.cohort_shapley(
        str(parquet), prediction="score", similarity=SIMILARITY, id="loan", targets=["L7"]
    )
    np.testing.assert_allclose(values.shapley, result.shapley, atol=1e-12)


@pytest.mark.parametrize("dialect", ["spark", "bigquery", "snowflake", "postgres"])
def test_other_dialects_parse(parquet, dialect):
    text = cohortsql.histogram_sql(
        str(parquet),
        prediction="score",
        similarity=SIMILARITY,
        id="loan",
        targets=["L1"],
        dialect=dialect,
        table="analytics.loans",
    )
    assert "analytics.loans" in text
    body = "\n".join(line for line in text.splitlines() if not line.startswith("--"))
    (tree,) = sqlglot.parse(body, read=dialect)
    assert tree is not None


def test_sql_command_and_spark_output(parquet):
    result = runner.invoke(
        app,
        [
            "sql",
            str(parquet),
            "--prediction",
            "score",
            "--id",
            "loan",
            "--similar",
            "age=range:0.1",
            "--similar",
            "region=exact",
            "--dialect",
            "spark",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "parquet.`" in result.output
    body = "\n".join(line for line in result.output.splitlines() if not line.startswith("--"))
    sqlglot.parse_one(body, read="spark")
    bad = runner.invoke(app, ["sql", str(parquet), "--prediction", "score", "--features", "age", "--dialect", "oracle"])
    assert bad.exit_code == 2 and "dialect must be one of duckdb, spark" in bad.output


def test_global_command(parquet, tmp_path):
    out = tmp_path / "effects.csv"
    result = runner.invoke(
        app,
        [
            "global",
            str(parquet),
            "--prediction",
            "score",
            "--similar",
            "age=range:0.1",
            "--similar",
            "region=exact",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "explain" in result.output and "share" in result.output
    written = pl.read_csv(out)
    expected = cohortsql.variance_shapley(
        str(parquet), prediction="score", similarity={"age": "range:0.1", "region": "exact"}
    )
    np.testing.assert_allclose(written["shapley_effect"], expected.effects["shapley_effect"], rtol=1e-9)
    sampled = runner.invoke(
        app,
        ["global", str(parquet), "--prediction", "score", "--features", "age,region", "--sample", "0.5", "--seed", "3"],
    )
    assert sampled.exit_code == 0 and "75 targets of 150 subjects" in sampled.output


def test_run_with_permutation_options_as_a_subprocess(parquet, tmp_path):
    out = tmp_path / "out.parquet"
    command = [
        sys.executable,
        "-m",
        "cohortsql.cli",
        "run",
        str(parquet),
        "--prediction",
        "score",
        "--id",
        "loan",
        "--features",
        "age,region,income",
        "--target-ids",
        "L1,L2",
        "--method",
        "permutation",
        "--seed",
        "4",
        "--max-permutations",
        "20",
        "--out",
        str(out),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "method permutation" in done.stdout
    assert pl.read_parquet(out).columns[-2:] == ["shapley_se", "shapley_squared_se"]


def test_polars_namespace(frame):
    expected = cohortsql.cohort_shapley(frame, prediction="score", similarity=["age", "region"], id="loan")
    for data in (frame, frame.lazy()):
        result = data.cohort.shapley(prediction="score", similarity=["age", "region"], id="loan")
        np.testing.assert_allclose(result.shapley, expected.shapley, atol=1e-12)
        effects = data.cohort.effects(prediction="score", similarity=["age", "region"])
        np.testing.assert_allclose(effects.effects["shapley_effect"], expected.global_["shapley_effect"], atol=1e-10)
