"""The command's options from its flags and its config file: each name given once, every option a
config file may hold taken from it, and one line for what it may not hold."""

import polars as pl
import pytest
from typer.testing import CliRunner

from cohortsql.cli import app

FRAME = pl.DataFrame(
    {
        "id": list(range(8)),
        "a": [1.0, 2, 3, 4, 5, 6, 7, 8],
        "b": [0, 1] * 4,
        "c": [1, 1, 2, 2] * 2,
        "y": [0.1] * 7 + [0.9],
    }
)


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "d.parquet"
    FRAME.write_parquet(path)
    return path


def run(*arguments) -> "CliRunner.invoke":
    return CliRunner().invoke(app, [str(argument) for argument in arguments])


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--group", "g=a,b", "--group", "g=c"], "--group names 'g' twice (['a', 'b'] and ['c'])"),
        (["--similar", "a=abs:1", "--similar", "a=abs:2"], "--similar names 'a' twice ('abs:1' and 'abs:2')"),
    ],
)
def test_a_repeated_name_is_refused_not_the_first_dropped(data, flags, message):
    result = run("shapley", data, "--prediction", "y", "--features", "a,b,c", *flags)
    assert result.exit_code == 2 and message in result.output, result.output


def test_a_config_file_holds_the_flags_a_command_reads(data, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(f'data = "{data}"\nprediction = "y"\nfeatures = "a,b,c"\ntop = 1\n')
    result = run("shapley", "--config", config)
    assert result.exit_code == 0, result.output
    assert "... and 2 more features (--top 3 shows them all)" in result.output
    result = run("shapley", "--config", config, "--top", "3")  # a flag overrides the file
    assert result.exit_code == 0 and "more features" not in result.output, result.output


def test_a_config_file_may_replace_tables(data, tmp_path):
    database = tmp_path / "out.duckdb"
    config = tmp_path / "run.toml"
    config.write_text(
        f'data = "{data}"\nprediction = "y"\nfeatures = "a,b"\ninto_table = "res"\ndatabase = "{database}"\n'
    )
    assert run("shapley", "--config", config).exit_code == 0
    again = run("shapley", "--config", config)
    assert again.exit_code == 2 and "already exists" in again.output
    config.write_text(config.read_text() + "replace = true\n")
    assert run("shapley", "--config", config).exit_code == 0


def test_a_config_file_refuses_what_is_for_one_run_only(data, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(f'data = "{data}"\nprediction = "y"\nfeatures = "a,b"\ndry_run = true\n')
    result = run("shapley", "--config", config)
    assert result.exit_code == 2 and "dry_run is for one run only; give --dry-run on the command line" in result.output


@pytest.mark.parametrize(
    ("first", "second"),
    [('target-ids = "1,2"', 'target_ids = "3,4,5"'), ('memory-limit = "1GB"', 'memory_limit = "2GB"')],
)
def test_two_spellings_of_one_key_are_one_error_not_the_last_one(tmp_path, first, second):
    config = tmp_path / "run.toml"
    config.write_text(f'data = "x.parquet"\nprediction = "y"\nfeatures = "a"\n{first}\n{second}\n')
    result = CliRunner().invoke(app, ["shapley", "--config", str(config)])
    assert result.exit_code == 2 and "twice" in result.output and "keep one of them" in result.output, result.output


def test_a_protected_bins_name_may_hold_an_equals_sign(tmp_path):
    data = tmp_path / "scores.parquet"
    pl.DataFrame({"age=x": [20, 35, 60, 25, 45, 70] * 5, "score": [0.1, 0.4, 0.8, 0.2, 0.5, 0.9] * 5}).write_parquet(
        data
    )
    result = CliRunner().invoke(
        app,
        ["fairness", str(data), "--prediction", "score", "--protected", "age=x", "--threshold", "0.5"]
        + ["--protected-bins", "age=x=30,50", "--bootstrap", "0"],
    )
    assert result.exit_code == 0, result.output
    assert "< 30" in result.output and ">= 50" in result.output
