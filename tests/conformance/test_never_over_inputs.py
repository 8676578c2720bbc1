"""Outputs never over inputs: every file a command writes (``--out`` and the tables beside it,
``--report``, ``--plot``, the figure and report of a result) is refused, before any work and with the
input untouched, when it is a file the command reads: its data, a file its data query reads, its model,
the result it draws; nor may two outputs of one run be one file. Tables are compared by the engine's
own identity (`test_adbc.py`: ``test_into_table_never_replaces_the_input_under_any_spelling``)."""

from __future__ import annotations

import pickle

import polars as pl
import pytest
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app

AUDIT = ["--prediction", "denial", "--protected", "group", "--features", "zip,income", "--id", "id", "--bootstrap", "5"]


@pytest.fixture
def files(tmp_path):
    table = cohortsql.datasets.redlining(rows=80)
    data = tmp_path / "in.html"  # a CSV named like the report the user means to write
    table.write_csv(data)
    model = tmp_path / "model.html"
    model.write_bytes(pickle.dumps(cohortsql.datasets.redlining_model))
    return tmp_path, data, model


def run(arguments: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, arguments)
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "target",
    ["data", "model"],
    ids=["the data a query reads", "the model"],
)
def test_the_audit_report_never_replaces_an_input(files, target):
    tmp_path, data, model = files
    before = {path: path.read_bytes() for path in (data, model)}
    query = f"SELECT * FROM read_csv('{data}')"
    report = data if target == "data" else model
    arguments = ["audit", query, *AUDIT, "--report", str(report)]
    if target == "model":
        arguments += ["--model", str(model), "--model-input", "polars"]
    code, output = run(arguments)
    assert code == 2 and "it is an input of this run" in output, output
    assert {path: path.read_bytes() for path in (data, model)} == before


def test_two_outputs_of_one_run_are_never_one_file(files):
    """A report that is a link to the results file (an earlier run's) would replace them."""
    tmp_path, data, _ = files
    out, report = tmp_path / "audit.csv", tmp_path / "audit.html"
    out.write_text("kept\n")
    report.symlink_to(out)
    code, output = run(
        ["audit", f"SELECT * FROM read_csv('{data}')", *AUDIT, "--out", str(out), "--report", str(report)]
    )
    assert code == 2 and "two outputs of this run name the same file" in output, output
    assert out.read_text() == "kept\n"


def test_the_report_and_the_figure_of_a_result_never_replace_it(files):
    tmp_path, data, _ = files
    out = tmp_path / "values.parquet"
    query = f"SELECT * FROM read_csv('{data}')"
    code, output = run(
        ["shapley", query, "--prediction", "denial", "--features", "zip", "--id", "id", "--out", str(out)]
    )
    assert code == 0, output
    written = {path: path.read_bytes() for path in tmp_path.glob("values*.parquet")}
    for companion in written:
        code, output = run(["report", str(out), "--out", str(companion)])
        assert code == 2 and "it is an input of this run" in output, output
    assert {path: path.read_bytes() for path in written} == written
    assert pl.read_parquet(out).height == 80 * 1


def test_the_tests_never_replace_the_attributions_they_read(files):
    tmp_path, data, _ = files
    query = f"SELECT * FROM read_csv('{data}')"
    values = tmp_path / "values.parquet"
    explained = ["--prediction", "denial", "--features", "zip,income", "--id", "id"]
    code, output = run(["shapley", query, *explained, "--method", "integrated", "--out", str(values)])
    assert code == 0, output
    before = values.read_bytes()
    code, output = run(["insertion-deletion", query, *explained, "--attributions", str(values), "--out", str(values)])
    assert code == 2 and "it is an input of this run" in output, output
    assert values.read_bytes() == before
    tests = tmp_path / "tests.csv"
    code, output = run(["insertion-deletion", query, *explained, "--attributions", str(values), "--out", str(tests)])
    assert code == 0 and "mean insertion ABC" in output, output
    written = pl.read_csv(tests)
    assert written.columns == ["id", "insertion_abc", "deletion_abc"] and written.height == 80
    assert pl.read_csv(tmp_path / "tests_curves.csv").height == 80 * 3


@pytest.mark.parametrize(("read", "written"), [("scores.csv", "scores.csv"), ("fair_metrics.csv", "fair.csv")])
def test_the_fairness_tables_never_replace_the_data(files, read, written):
    """fairness writes its groups at --out and its metrics beside it (``_metrics``): neither may be the
    file its data query reads."""
    tmp_path, data, _ = files
    source = tmp_path / read
    source.write_bytes(data.read_bytes())
    before = source.read_bytes()
    query = f"SELECT * FROM read_csv('{source}')"
    code, output = run(
        ["fairness", query, "--prediction", "denial", "--protected", "group", "--out", str(tmp_path / written)]
    )
    assert code == 2 and "it is an input of this run" in output, output
    assert source.read_bytes() == before


def test_the_effects_report_never_replaces_an_input_or_its_tables(files):
    """``cohortsql effects --report``: over the data a query reads, or over the effects table the same
    run writes, it is refused before any work."""
    tmp_path, data, _ = files
    before = data.read_bytes()
    query = f"SELECT * FROM read_csv('{data}')"
    common = ["effects", query, "--prediction", "denial", "--features", "zip,income"]
    code, output = run([*common, "--report", str(data)])
    assert code == 2 and "it is an input of this run" in output, output
    assert data.read_bytes() == before
    out, report = tmp_path / "effects.csv", tmp_path / "effects.html"
    out.write_text("kept\n")
    report.symlink_to(out)
    code, output = run([*common, "--out", str(out), "--report", str(report)])
    assert code == 2 and "two outputs of this run name the same file" in output, output
    assert out.read_text() == "kept\n"


def test_the_game_command_never_replaces_its_data(files):
    """``cohortsql game``: its --out (and the totals beside it) over the data its query reads is refused
    before any work, the data untouched."""
    tmp_path, data, _ = files
    scores, totals = tmp_path / "scores.csv", tmp_path / "scores_totals.csv"  # --out and the totals beside it
    for path in (scores, totals):
        path.write_bytes(data.read_bytes())
    before = {path: path.read_bytes() for path in (scores, totals)}
    for read in (scores, totals):
        query = f"SELECT * FROM read_csv('{read}')"
        code, output = run(
            ["game", query, "--game", "cohort-variance", "--prediction", "denial", "--features", "zip,income"]
            + ["--out", str(scores)]
        )
        assert code == 2 and "it is an input of this run" in output, output
    assert {path: path.read_bytes() for path in (scores, totals)} == before
