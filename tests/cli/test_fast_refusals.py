"""On a 200,000-row churn table (a text id, an 82,000-level zip, a numeric id-like column, skewed
incomes), refusals that need no rows come before any work, and a dry run measures a few targets:
each answers in seconds where the run itself would take many minutes.

What the tests assert is the work done, not the time it took (a busy machine makes every run
slower): a refusal comes before the data are read at all, and a dry run's pilot measures 10 targets
(the refusal of an existing --into-table came after 29 s of computing, a dry run's pilot with an
id-like feature took 153 s)."""

import duckdb
import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app

ROWS = 200_000


@pytest.fixture(scope="module")
def churn(tmp_path_factory):
    rng = np.random.default_rng(3)
    frame = pl.DataFrame(
        {
            "account": np.arange(ROWS),
            "customer": [f"C{i:07d}" for i in range(ROWS)],
            "zip": rng.integers(0, 82_000, ROWS).astype(str),
            "income": rng.lognormal(10, 1, ROWS),
            "age": rng.integers(18, 90, ROWS),
            "plan": rng.choice(["basic", "plus", "pro"], ROWS),
            "active": rng.uniform(size=ROWS) < 0.5,
        }
    ).with_columns(score=pl.col("income").log() / 20 + pl.col("age") / 200)
    folder = tmp_path_factory.mktemp("churn")
    frame.write_parquet(folder / "churn.parquet")
    with duckdb.connect(str(folder / "results.duckdb")) as connection:
        connection.execute("CREATE TABLE explained AS SELECT 1 AS x")
    return folder


def invoke(*arguments):
    return CliRunner().invoke(app, [str(argument) for argument in arguments])


def whole_run(churn):
    return ["shapley", churn / "churn.parquet", "--prediction", "score", "--features", "all"]


@pytest.mark.parametrize(
    ("where", "message"),
    [
        (["--into-table", "explained", "--database", "{folder}/results.duckdb"], "table 'explained' already exists"),
        (["--out", "{folder}/no/such/dir/out.parquet"], "does not exist"),
        (["--out", "{folder}/out.xlsx"], "xlsx"),
        (["--into-table", "t", "--database", "{folder}/no/such/dir/x.duckdb"], "does not exist"),
    ],
)
def test_refusals_that_need_no_rows_come_before_any_work(churn, where, message, monkeypatch):
    def read(*arguments, **options):
        raise AssertionError("the data were read before the refusal")

    monkeypatch.setattr("cohortsql.run.session.prepare", read)
    options = [option.format(folder=churn) for option in where]
    result = invoke(*whole_run(churn), *options)
    assert result.exit_code == 2 and message in result.output, result.output


def test_a_dry_run_with_id_like_features_measures_a_few_targets(churn):
    result = invoke(*whole_run(churn), "--dry-run")
    assert result.exit_code == 0, result.output
    assert (
        "plan: 200,000 targets" in result.output and "measured on 50 of 200,000 distinct targets" in result.output
    )  # 10, then 40
    permutation = invoke(*whole_run(churn), "--method", "permutation", "--dry-run")
    assert permutation.exit_code == 0 and "estimate: about" in permutation.output, permutation.output
    assert "measured on 30 of 200,000 distinct targets" in permutation.output, (
        permutation.output
    )  # 10, then a memory-sized 20


def test_a_dry_run_compiles_the_kernel_before_it_times_its_pilot(monkeypatch):
    """A first dry run paid the kernel's compilation in its pilot and said 11,520 s; the next, 1,920 s.
    Where the run would compute compiled, the kernel is compiled (or read from numba's cache) first."""
    from cohortsql.api import estimate as estimate_module
    from cohortsql.numeric import kernels

    order: list[str] = []
    monkeypatch.setattr(kernels, "COMPILE_WORTH_CELLS", 1)
    monkeypatch.setattr(kernels, "compile_now", lambda: order.append("compiled"))
    timed = estimate_module.local_batches

    def pilot(*arguments, **options):
        order.append("pilot")
        return timed(*arguments, **options)

    monkeypatch.setattr(estimate_module, "local_batches", pilot)
    cohortsql.estimate(cohortsql.datasets.loans(), prediction="score", similarity=["income", "region"])
    assert order[:2] == ["compiled", "pilot"]
