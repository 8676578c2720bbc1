"""The `global` command, the permutation options from the shell, and the polars namespace."""

import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app

runner = CliRunner()


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
    done = subprocess.run(command, capture_output=True, text=True)
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


def test_polars_expressions_choose_the_targets(frame):
    """``df.cohort.shapley(targets=pl.col("region") == "s")`` was refused ("got Expr"): the frame
    evaluates it, by id or by row position, and the values equal those of the same SQL predicate."""
    chosen = (pl.col("region") == "s") & (pl.col("tenure") > 2)
    sql = "region = 's' AND tenure > 2"
    options = {"prediction": "score", "similarity": ["age", "region"]}
    for id in (None, "loan"):
        expected = cohortsql.cohort_shapley(frame, targets=sql, id=id, **options)
        for data in (frame, frame.lazy()):
            result = data.cohort.shapley(targets=chosen, id=id, **options)
            assert result.ids.to_list() == expected.ids.to_list()
            np.testing.assert_allclose(result.shapley, expected.shapley, atol=1e-12)
    effects = frame.cohort.effects(targets=chosen, **options)
    assert effects.effects["shapley_effect"].to_list() == pytest.approx(
        cohortsql.shapley_effects(frame, targets=sql, **options).effects["shapley_effect"].to_list(), abs=1e-12
    )
    with pytest.raises(cohortsql.CohortError, match=r"targets: the expression .* holds for no row"):
        frame.cohort.shapley(targets=pl.col("region") == "west", **options)
    with pytest.raises(cohortsql.CohortError, match=r'cannot choose rows of this frame: unable to find column "zone"'):
        frame.cohort.shapley(targets=pl.col("zone") == 1, **options)
    with pytest.raises(cohortsql.CohortError, match="chooses rows on a polars frame's df.cohort methods"):
        cohortsql.cohort_shapley(frame, targets=chosen, **options)
