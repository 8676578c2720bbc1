"""The command line, through typer's runner and as a real subprocess."""

import re
import subprocess
import sys
import warnings
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app

ROOT = Path(__file__).parents[2]
BOSTON = ROOT / "examples" / "data" / "boston_predictions.parquet"
runner = CliRunner()


def invoke(*arguments):
    return runner.invoke(app, [str(argument) for argument in arguments])


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(5)
    return pl.DataFrame(
        {
            "loan": [f"L{i:03d}" for i in range(80)],
            "age": rng.uniform(20, 70, 80),
            "region": rng.choice(["n", "s"], 80),
            "score": rng.uniform(size=80),
        }
    )


@pytest.fixture
def data(tmp_path, frame):
    frame.write_csv(tmp_path / "scores.csv")
    frame.write_parquet(tmp_path / "scores.parquet")
    return tmp_path


def assert_same_local(path, reference):
    written = pl.read_parquet(path)
    assert written.select("id", "feature").equals(reference.select("id", "feature"))
    np.testing.assert_allclose(written["shapley"].to_numpy(), reference["shapley"].to_numpy(), atol=1e-12)
    np.testing.assert_allclose(
        written["shapley_squared"].to_numpy(), reference["shapley_squared"].to_numpy(), atol=1e-12
    )


def expected(frame, **options):
    return cohortsql.cohort_shapley(
        frame, prediction="score", similarity={"age": "range:0.1", "region": "exact"}, **options
    )


RUN = ["--prediction", "score", "--similar", "age=range:0.1", "--similar", "region=exact"]


@pytest.mark.parametrize("name", ["scores.csv", "scores.parquet", "*.parquet"])
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_run_writes_long_table_and_totals(data, frame, name, suffix):
    out = data / f"out{suffix}"
    result = invoke("run", data / name, *RUN, "--id", "loan", "--out", out)
    assert result.exit_code == 0, result.output
    read = pl.read_parquet if suffix == ".parquet" else pl.read_csv
    local, totals = read(out), read(data / f"out_totals{suffix}")
    reference = expected(frame, id="loan")
    assert local.columns == ["id", "feature", "feature_value", "prediction", "shapley", "shapley_squared"]
    np.testing.assert_allclose(local["shapley"].to_numpy(), reference.local["shapley"].to_numpy(), atol=1e-12)
    assert totals["id"].to_list() == frame["loan"].to_list()
    assert "80 targets x 2 features, 80 subjects" in result.output
    assert "by mean |shapley|" in result.output


def test_database_table_and_sql_query_inputs(data, frame):
    database = data / "scores.duckdb"
    with duckdb.connect(str(database)) as connection:
        connection.register("frame", frame.to_arrow())
        connection.execute("CREATE TABLE scores AS SELECT * FROM frame")
    reference = expected(frame, targets="region = 'n'").local
    for source in (f"{database}:scores", f"SELECT * FROM read_parquet('{data / 'scores.parquet'}')"):
        out = data / "out.parquet"
        result = invoke("run", source, *RUN, "--targets", "region = 'n'", "--out", out)
        assert result.exit_code == 0, result.output
        assert_same_local(out, reference)


def test_target_ids_and_features_with_default_kinds(data, frame):
    out = data / "out.parquet"
    result = invoke(
        "run",
        data / "scores.parquet",
        "--prediction",
        "score",
        "--features",
        "age,region",
        "--target-ids",
        "3,7",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    local = pl.read_parquet(out)
    assert local["id"].unique().sort().to_list() == [3, 7]
    assert local["feature"].to_list()[:2] == ["age", "region"]


def test_into_table(data, frame):
    database = data / "results.duckdb"
    arguments = [
        "run",
        data / "scores.parquet",
        *RUN,
        "--id",
        "loan",
        "--into-table",
        "explained",
        "--database",
        database,
    ]
    result = invoke(*arguments)
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(database), read_only=True) as connection:
        assert connection.execute("SELECT count(*) FROM explained").fetchall() == [(160,)]
        assert connection.execute("SELECT count(*) FROM explained_totals").fetchall() == [(80,)]
    again = invoke(*arguments[:-4], "--targets", "region = 's'", *arguments[-4:])
    assert again.exit_code == 2 and "table 'explained' already exists; pass --replace" in again.output
    # refused before any work: a run that would fail while computing is refused for its table first
    early = invoke(*arguments[:-4], "--prediction", "nosuch", *arguments[-4:])
    assert early.exit_code == 2 and "table 'explained' already exists" in early.output, early.output
    with duckdb.connect(str(database), read_only=True) as connection:  # the first run's tables are intact
        assert connection.execute("SELECT count(*) FROM explained").fetchall() == [(160,)]
    replaced = invoke(*arguments[:-4], "--targets", "region = 's'", *arguments[-4:], "--replace")
    assert replaced.exit_code == 0, replaced.output
    with duckdb.connect(str(database), read_only=True) as connection:
        assert connection.execute("SELECT count(*) FROM explained").fetchall()[0][0] < 160


def test_into_table_never_replaces_the_input(data, frame):
    database = data / "scores.duckdb"
    with duckdb.connect(str(database)) as connection:
        connection.register("frame", frame.to_arrow())
        connection.execute("CREATE TABLE scores AS SELECT * FROM frame")
    result = invoke(
        "run", f"{database}:scores", *RUN, "--id", "loan", "--into-table", "scores", "--database", database, "--replace"
    )
    assert result.exit_code == 2 and "will not write over table 'scores': it is this run's input" in result.output
    with duckdb.connect(str(database), read_only=True) as connection:
        assert connection.execute("SELECT count(*) FROM scores").fetchall() == [(80,)]
        assert connection.execute("SELECT count(*) FROM duckdb_tables()").fetchall() == [(1,)]


def test_config_file_with_flags_overriding(data, frame):
    config = data / "explain.toml"
    config.write_text(
        'data = "scores.parquet"\nprediction = "score"\nid = "loan"\ntargets = "region = \'s\'"\n'
        '[similar]\nage = "abs:1"\nregion = "exact"\n'
    )
    out = data / "out.parquet"
    result = invoke("run", "--config", config, "--similar", "age=range:0.1", "--out", out)
    assert result.exit_code == 0, result.output
    assert_same_local(out, expected(frame, id="loan", targets="region = 's'").local)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["run", "{data}/missing.parquet", *RUN], "no file named"),
        (
            ["run", "{data}/scores.parquet", "--prediction", "nope", "--features", "age"],
            "prediction column 'nope' is not in the data",
        ),
        (
            ["run", "{data}/scores.parquet", "--prediction", "score", "--similar", "age=range:x"],
            "malformed similarity 'range:x'",
        ),
        (
            ["run", "{data}/scores.parquet", "--prediction", "score", "--similar", "age"],
            "--similar 'age' is not FEATURE=KIND",
        ),
        (["run", "{data}/scores.parquet", *RUN, "--targets", "age >>> 3"], "reading the data with targets 'age >>> 3'"),
        (
            ["run", "{data}/scores.parquet", *RUN, "--targets", "x > 1", "--target-ids", "1"],
            "give one of --targets and --target-ids, not both",
        ),
        (
            ["run", "{data}/scores.parquet", *RUN, "--out", "{data}/out.xlsx"],
            "use a file name ending in .parquet or .csv",
        ),
        (["run", "{data}/scores.parquet", *RUN, "--into-table", "t"], "--into-table needs --database"),
        (["run", "{data}/scores.parquet", *RUN, "--config", "{data}/none.toml"], "cannot read config"),
        (["run", "SELECT * FROM nowhere", *RUN], "the data query: Catalog Error"),
        (["run", "{data}/none.duckdb:scores", *RUN], "no DuckDB database file"),
        (["run", "--prediction", "score"], "no DATA given"),
    ],
)
def test_failures_are_one_line_with_status_2_and_no_output(data, arguments, message):
    result = invoke(*[argument.format(data=data) for argument in arguments])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cohortsql: error:") and message in lines[0], result.output
    assert sorted(path.name for path in data.iterdir()) == ["scores.csv", "scores.parquet"]


def test_a_failure_after_other_warnings_prints_them_once(data, monkeypatch):
    """A library's warning (here a UserWarning, as PySpark's about pandas) before a failure: printed once,
    then the error line (printing it while warnings were still recorded recorded it again, without end)."""

    def warns_then_fails(*arguments, **options):
        warnings.warn("something outside cohortsql", UserWarning, stacklevel=1)
        warnings.warn("a cohortsql caution", cohortsql.CohortWarning, stacklevel=1)
        raise cohortsql.CohortError("the engine went away")

    monkeypatch.setattr("cohortsql.api.local.cohort_shapley", warns_then_fails)
    with pytest.warns(UserWarning, match="something outside cohortsql"):
        result = invoke("run", data / "scores.parquet", *RUN)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "cohortsql: warning: a cohortsql caution",
        "cohortsql: error: the engine went away",
    ]


def test_failed_run_leaves_an_existing_output_untouched(data):
    out = data / "out.parquet"
    out.write_bytes(b"previous")
    result = invoke("run", data / "scores.parquet", "--prediction", "score", "--similar", "age=abs:-1", "--out", out)
    assert result.exit_code == 2
    assert out.read_bytes() == b"previous"


def test_subprocess_run_and_failure(data):
    command = [sys.executable, "-m", "cohortsql.cli", "run", str(data / "scores.csv"), *RUN, "--top", "1"]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "80 targets x 2 features" in done.stdout
    failed = subprocess.run([*command[:4], str(data / "nope.csv"), *RUN], capture_output=True, text=True)
    assert failed.returncode == 2
    assert failed.stderr.strip().splitlines() == [
        f"cohortsql: error: no file named '{data / 'nope.csv'}'; check the path"
    ]
    assert "Traceback" not in failed.stderr


def test_shipped_example_config():
    result = invoke("run", "--config", ROOT / "examples" / "boston.toml", "--top", "3")
    assert result.exit_code == 0, result.output
    assert "506 targets x 13 features, 506 subjects" in result.output


def test_help_has_examples():
    result = invoke("run", "--help")
    assert result.exit_code == 0
    assert "Examples" in result.output and "--similar" in result.output


def test_weights_several_predictions_and_a_bootstrap(data, frame):
    weighted = frame.with_columns(w=pl.Series(np.arange(80) % 3), late=(pl.col("score") > 0.5).cast(pl.Float64))
    weighted.write_parquet(data / "weighted.parquet")
    out = data / "explained.parquet"
    done = invoke(
        "shapley",
        data / "weighted.parquet",
        *RUN,
        "--prediction",
        "late",
        "--weight",
        "w",
        "--id",
        "loan",
        "--target-ids",
        "L001,L002",
        "--bootstrap",
        "20",
        "--seed",
        "3",
        "--out",
        out,
    )
    assert done.exit_code == 0, done.output
    assert "== score" in done.output and "== late" in done.output
    assert "95% intervals from 20 Bayesian-bootstrap replicates" in done.output
    written = pl.read_parquet(out)
    assert written["outcome"].unique(maintain_order=True).to_list() == ["score", "late"]
    assert {"shapley_ci_low", "shapley_ci_high", "shapley_squared_ci_low"} <= set(written.columns)
    reference = cohortsql.cohort_shapley(
        weighted,
        prediction=["score", "late"],
        similarity={"age": "range:0.1", "region": "exact"},
        id="loan",
        weight="w",
        targets=["L001", "L002"],
        bootstrap=20,
        seed=3,
    )
    assert_same_local(out, reference.local)
    np.testing.assert_allclose(written["shapley_ci_low"], reference.local["shapley_ci_low"], atol=1e-12)
    effects = invoke("effects", data / "weighted.parquet", *RUN, "--weight", "w", "--bootstrap", "20", "--seed", "3")
    assert effects.exit_code == 0, effects.output
    reference_effects = cohortsql.shapley_effects(
        weighted,
        prediction="score",
        similarity={"age": "range:0.1", "region": "exact"},
        weight="w",
        bootstrap=20,
        seed=3,
    ).effects
    low = reference_effects.filter(pl.col("feature") == "age")["shapley_effect_ci_low"][0]
    assert f"({low:.4g} to " in effects.output
    assert "(95% bias-corrected percentile intervals" in effects.output  # which interval, said


def test_effects_with_two_predictions_and_intervals(data, frame):
    frame.with_columns(late=(pl.col("score") > 0.5).cast(pl.Float64)).write_parquet(data / "two.parquet")
    out = data / "effects.csv"
    done = invoke("effects", data / "two.parquet", *RUN, "--prediction", "late", "--bootstrap", "30", "--out", out)
    assert done.exit_code == 0, done.output
    table = pl.read_csv(out)
    assert table["outcome"].unique(maintain_order=True).to_list() == ["score", "late"]
    assert {"shapley_effect_ci_low", "shapley_effect_ci_high"} <= set(table.columns)
    # Every row is a target: the standard errors are 0, as Python holds them (they were "-" here and
    # 0.0 in Python), beside the intervals, and a note says why.
    rows = [line.split() for line in done.output.splitlines() if line.startswith(("age ", "region "))]
    assert rows and all(row[2] == "0" and row[-3].startswith("(") and row[-2] == "to" for row in rows), done.output
    assert (table["shapley_effect_se"] == 0).all()
    assert "every row is a target" in done.output


@pytest.mark.parametrize("command", ["shapley", "effects"])
def test_interactions_are_written_and_their_largest_pairs_printed(data, frame, command):
    """--interactions: the _interactions table beside --out (two outcomes stacked), the largest pairs in
    the summary; with --method permutation estimated with standard errors for each target, and refused
    in the command line's words for the effects."""
    out = data / "explained.parquet"
    done = invoke(command, data / "scores.parquet", *RUN, "--interactions", "--out", out)
    assert done.exit_code == 0, done.output
    assert "largest interactions" in done.output and "age x region" in done.output
    table = pl.read_parquet(data / "explained_interactions.parquet")
    assert set(table["feature"]) == set(table["other"]) == {"age", "region"} and table.height in (4, 80 * 4)
    if command == "shapley":
        api = expected(frame, id="loan", interactions=True)
        np.testing.assert_allclose(table["interaction"].to_numpy(), api.interaction_table["interaction"].to_numpy())
    estimated = invoke(
        command, data / "scores.parquet", *RUN, "--interactions", "--method", "permutation", "--seed", "1", "--out", out
    )
    if command == "shapley":
        assert estimated.exit_code == 0, estimated.output
        assert "interaction_se" in pl.read_parquet(data / "explained_interactions.parquet").columns
    else:
        assert estimated.exit_code == 2
        assert "--interactions for Shapley effects needs --method exact" in estimated.output


def test_groups_from_flags_and_config_give_the_apis_values_and_owen_table(data, frame):
    """--group NAME=a,b (or a config's table) and --group-values owen: the players' values in the main
    table, each feature's Owen value in _owen, equal to the API's; a malformed --group is named."""
    frame = frame.with_columns(band=(pl.col("age") // 10).cast(pl.Int64))
    frame.write_parquet(data / "banded.parquet")
    flags = ["--prediction", "score", "--id", "loan", "--features", "age,region,band", "--group-values", "owen"]
    out = data / "grouped.parquet"
    done = invoke("shapley", data / "banded.parquet", *flags, "--group", "who=age,region", "--out", out)
    assert done.exit_code == 0, done.output
    api = cohortsql.cohort_shapley(
        frame,
        prediction="score",
        id="loan",
        similarity=["age", "region", "band"],
        groups={"who": ["age", "region"]},
        group_values="owen",
    )
    assert_same_local(out, api.local)
    owen = pl.read_parquet(data / "grouped_owen.parquet")
    assert owen.columns == ["id", "group", "feature", "owen"]
    np.testing.assert_allclose(owen["owen"].to_numpy(), api.owen_table["owen"].to_numpy(), atol=1e-12)
    config = data / "grouped.toml"
    config.write_text('group_values = "owen"\n[groups]\nwho = ["age", "region"]\n')
    effects = invoke("effects", data / "banded.parquet", *flags[:6], "--config", config)
    assert effects.exit_code == 0, effects.output
    assert "Owen effects within the groups" in effects.output and "who.region" in effects.output
    anchored = invoke("shapley", data / "banded.parquet", *flags[:6], "--anchored", "2", "--out", out)
    assert anchored.exit_code == 0, anchored.output
    terms = pl.read_parquet(data / "grouped_anchored.parquet")
    assert terms.columns == ["id", "term", "order", "anchored"] and set(terms["order"]) == {1, 2}
    assert "region & band" in set(terms["term"]) and terms.height == 80 * 6
    wrong = invoke("shapley", data / "banded.parquet", *flags, "--group", "who")
    assert wrong.exit_code == 2 and "--group 'who' is not NAME=FEATURE,FEATURE" in wrong.output
    config.write_text('[groups]\nwho = "age,region"\n')
    wrong = invoke("effects", data / "banded.parquet", *flags[:6], "--config", config)
    assert wrong.exit_code == 2 and 'groups must be a table of NAME = ["FEATURE", ...] entries' in wrong.output


def test_a_top_that_hides_features_says_how_many(data):
    done = invoke("run", data / "scores.parquet", *RUN, "--top", "1")
    assert done.exit_code == 0, done.output
    assert "... and 1 more features (--top 2 shows them all)" in done.output
    assert "more features" not in invoke("run", data / "scores.parquet", *RUN, "--top", "2").output


def test_uniqueness_command(data, frame):
    out = data / "uniqueness.parquet"
    done = invoke("uniqueness", data / "scores.parquet", "--features", "region", "--similar", "age=abs:5", "--out", out)
    assert done.exit_code == 0, done.output
    assert "of the targets are unique on every feature" in done.output
    expected = cohortsql.uniqueness_shapley(frame, similarity={"region": None, "age": "abs:5"})
    written = pl.read_parquet(out)
    np.testing.assert_allclose(written["shapley"], expected.local["shapley"], atol=1e-12)
    assert pl.read_parquet(data / "uniqueness_totals.parquet").columns == ["id", "cohort_size", "value"]


def test_config_lists_several_predictions(data, frame, tmp_path):
    frame.with_columns(late=(pl.col("score") > 0.5).cast(pl.Float64)).write_parquet(data / "two.parquet")
    config = tmp_path / "run.toml"
    config.write_text(
        'data = "two.parquet"\nprediction = ["score", "late"]\nfeatures = ["region"]\nweight = "age"\nbootstrap = 10\n'
    )
    done = invoke("shapley", "--config", config)
    assert done.exit_code == 0, done.output
    assert "== late" in done.output
    bad = tmp_path / "bad.toml"
    bad.write_text('data = "two.parquet"\nprediction = [1, 2]\nfeatures = ["region"]\n')
    failed = invoke("shapley", "--config", bad)
    assert failed.exit_code == 2 and "prediction must be text or a list" in failed.output


def test_compare_command(data, frame, tmp_path):
    import pickle

    from sklearn.linear_model import LinearRegression

    model = LinearRegression().fit(frame.select("age").to_numpy(), frame["score"].to_numpy())
    scored = frame.with_columns(prediction=pl.Series(model.predict(frame.select("age").to_numpy())))
    scored.write_parquet(data / "scored.parquet")
    saved = tmp_path / "model.pkl"
    saved.write_bytes(pickle.dumps(model))
    out = data / "compared.parquet"
    arguments = ["compare", data / "scored.parquet", "--prediction", "prediction", "--model", saved]
    done = invoke(*arguments, "--model-input", "numpy", "--similar", "age=abs:5", "--out", out)
    assert done.exit_code == 0, done.output
    assert "of the hybrid points are realistic" in done.output and "ABS2" in done.output
    expected = cohortsql.baseline_shapley(scored, model=model, features={"age": "abs:5"}, model_input="numpy")
    written = pl.read_parquet(out).filter(pl.col("method") == "BS")
    np.testing.assert_allclose(written["value"], expected.shapley[:, 0], atol=1e-12)
    assert (data / "compared_global.parquet").exists() and (data / "compared_totals.parquet").exists()
    planned = invoke(*arguments, "--model-input", "numpy", "--similar", "age=abs:5", "--dry-run")
    assert planned.exit_code == 0, planned.output
    assert "all-baseline: " in planned.output and "total: about" in planned.output
    missing = invoke(*arguments[:-2], "--features", "age")
    assert missing.exit_code == 2 and "--model" in missing.output
    not_a_model = invoke(*arguments[:-1], data / "scored.parquet", "--features", "age")
    assert not_a_model.exit_code == 2 and "cannot load model" in not_a_model.output
    nowhere = invoke(*arguments, "--features", "age", "--out", tmp_path / "no" / "such.parquet")
    assert nowhere.exit_code == 2 and "does not exist" in nowhere.output
    shifted = frame.with_columns(prediction=pl.Series(model.predict(frame.select("age").to_numpy()) + 1e-3))
    shifted.write_parquet(data / "shifted.parquet")
    moved = ["compare", data / "shifted.parquet", "--prediction", "prediction", "--model", saved, "--features", "age"]
    refused = invoke(*moved, "--model-input", "numpy")
    assert refused.exit_code == 2 and "does not reproduce the column 'prediction'" in refused.output
    assert "--model-tolerance (inf skips the check)" in refused.output  # the command line's spelling
    assert invoke(*moved, "--model-input", "numpy", "--model-tolerance", "0.01").exit_code == 0


@pytest.mark.parametrize(
    ("command", "group"),
    [
        ("shapley", "ShapleyOptions"),
        ("effects", "EffectsOptions"),
        ("uniqueness", "UniquenessOptions"),
        ("compare", "CompareOptions"),
    ],
)
def test_every_api_option_of_a_command_is_a_flag(command: str, group: str) -> None:
    from cohortsql import _typing
    from cohortsql.cli.flags import API_ONLY

    shown = runner.invoke(app, [command, "--help"], terminal_width=200).output
    for key in getattr(_typing, group).__annotations__:
        if key not in API_ONLY:
            assert f"--{key.replace('_', '-')}" in shown, key


@pytest.mark.parametrize(
    ("arguments", "message", "helped"),
    [
        (["shapely"], "No such command 'shapely'. Did you mean 'shapley'?", "cohortsql"),
        (
            ["shapley", "x.parquet", "--predictoin", "y"],
            "No such option: --predictoin (Possible options: --prediction)",
            "cohortsql shapley",
        ),
        (["shapley", "x.parquet", "--prediction"], "requires an argument", "cohortsql shapley"),
        (["report", "values.parquet"], "Missing option '--out'", "cohortsql report"),
    ],
)
def test_a_mistyped_command_line_is_one_line_with_status_2(arguments, message, helped):
    """One line, naming the help of the command the mistake is in (not the top level's)."""
    done = subprocess.run([sys.executable, "-m", "cohortsql", *arguments], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("cohortsql: error: ") and message in line and line.endswith(f"(see {helped} --help)")


def test_the_help_lists_no_earlier_names_and_report_offers_no_sample():
    top = subprocess.run([sys.executable, "-m", "cohortsql", "--help"], capture_output=True, text=True).stdout
    assert "│ shapley " in top and "│ run " not in top and "│ global " not in top
    report = subprocess.run([sys.executable, "-m", "cohortsql", "report", "--help"], capture_output=True, text=True)
    assert "--target-ids" in report.stdout and "--sample" not in report.stdout


COMMANDS_SHOWN = ("shapley", "effects", "audit", "game", "compare", "fairness", "calibrate", "sql")


@pytest.mark.parametrize("command", COMMANDS_SHOWN)
def test_a_commands_help_reads_at_80_columns_in_the_panels_of_the_options_page(command):
    """Each flag under its concern's panel (as the options page groups them), helps of a line or two
    (the long texts are in the docs), examples that paste into a shell as shown."""
    from cohortsql.cli.panels import CONCERN_PANELS

    shown = runner.invoke(app, [command, "--help"], terminal_width=80).output
    lines = shown.splitlines()
    assert len(lines) <= 150 and max(len(line) for line in lines) <= 80
    panels = re.findall(r"╭─ (.+?) ─", shown)
    assert panels[:2] == ["Arguments", "Options"] and len(panels) == len(set(panels)) >= 4
    assert set(panels[2:]) <= {*CONCERN_PANELS.values(), "What to explain", "Protected attributes", "SQL", "Output"}
    rows = [line for line in lines if line.startswith("│ --")]
    continued = [line for line in lines if line.startswith("│ ") and not line.startswith("│ --")]
    assert len(continued) <= 2 * len(rows)  # at most three lines a flag on average
    examples = shown.split("Examples:")[1].splitlines()
    for line, after in zip(examples, examples[1:]):
        if after.startswith("     --"):
            assert line.rstrip().endswith(" \\"), line


def test_examples_are_laid_out_without_changing_the_command():
    from cohortsql.cli.examples import WIDTH, laid_out

    command = (
        "cohortsql shapley 'scores/*.parquet' --prediction score --id loan_id --features age,income"
        " --targets \"region = 'north'\" --sample 1000 --into-table explained --database results.duckdb"
    )
    text = laid_out(command)
    assert all(len(line) <= WIDTH for line in text.splitlines()) and len(text.splitlines()) == 3
    assert text.replace(" \\\n    ", " ") == command
    assert "\n    --targets \"region = 'north'\"" in text or "--targets \"region = 'north'\" " in text
    assert laid_out("# a comment that is longer than the width of a line but is not a command at all, as it is") == (
        "# a comment that is longer than the width of a line but is not a command at all, as it is"
    )


def test_no_arguments_show_the_help():
    done = subprocess.run([sys.executable, "-m", "cohortsql"], capture_output=True, text=True)
    assert done.returncode == 0 and "Usage: cohortsql" in done.stdout and "shapley" in done.stdout


def test_effects_command_estimates_wide_tables_by_permutation(tmp_path):
    rng = np.random.default_rng(8)
    columns = {f"f{j:02d}": rng.integers(0, 2, 60) for j in range(26)}
    frame = pl.DataFrame(columns).with_columns(y=pl.col("f00") + 0.1 * pl.col("f01"))
    frame.write_parquet(tmp_path / "wide.parquet")
    arguments = ["effects", tmp_path / "wide.parquet", "--prediction", "y", "--features", "all"]
    refused = invoke(*arguments)
    assert refused.exit_code == 2 and "use --method permutation" in refused.output
    assert "method=" not in refused.output  # the command line's spelling, not the API's
    done = invoke(*arguments, "--method", "permutation", "--max-permutations", "10", "--seed", "1")
    assert done.exit_code == 0, done.output
    assert "method permutation, path pairwise" in done.output
    assert done.output.index("f00 ") < done.output.index("f01 ")  # ranked by effect


def test_warnings_come_before_the_table_and_mark_its_rows(tmp_path):
    """A high-cardinality text column: its warning is printed before the ranking (not after it), the row
    it names is marked, and the summary says which kind each defaulted feature got and why."""
    rng = np.random.default_rng(4)
    rows = 400
    frame = pl.DataFrame(
        {
            "zip": [f"{value:05d}" for value in rng.integers(0, 300, rows)],
            "income": rng.lognormal(10, 1, rows),
            "plan": rng.choice(["basic", "pro"], rows),
        }
    ).with_columns(score=pl.col("income").log() / 20 + (pl.col("plan") == "pro") * 0.1)
    frame.write_parquet(tmp_path / "churn.parquet")
    for command in ("effects", "shapley"):
        done = invoke(command, tmp_path / "churn.parquet", "--prediction", "score", "--features", "zip,income,plan")
        assert done.exit_code == 0, done.output
        output = done.output
        warning = output.index("warning: feature 'zip' has about")
        assert warning < output.index("\n! zip ") and "(! named in a warning above)" in output
        assert "\n  income " in output  # unmarked rows keep their alignment
        assert "similarity per feature" in output
        assert re.search(
            r"income  quantile:0\.1   window ±[0-9.e+]+; by default: long-tailed: range:0\.1 would keep", output
        )
        assert "plan    exact          by default: text values" in output
        assert "zip     exact          by default:" in output  # every feature, none hidden


def test_a_feature_whose_window_keeps_the_whole_table_is_marked_in_the_ranking(tmp_path):
    """The broad-window warning named its feature unquoted, so the ranking's "!" mark never appeared."""
    rng = np.random.default_rng(3)
    income = rng.lognormal(mean=10, sigma=1.2, size=2000)
    age = rng.uniform(20, 70, 2000)
    pl.DataFrame({"income": income, "age": age, "y": np.log(income) + age / 50}).write_parquet(tmp_path / "s.parquet")
    arguments = ["--prediction", "y", "--similar", "income=range:0.1", "--similar", "age=range:0.1", "--sample", "200"]
    done = invoke("shapley", tmp_path / "s.parquet", *arguments, "--seed", "1")
    assert done.exit_code == 0, done.output
    assert "similarity on 'income' alone (range:0.1)" in done.output and "e.g. income=range:0.05" in done.output
    assert "\n! income " in done.output and "\n  age " in done.output


def test_game_interactions_are_printed_and_a_mark_cut_by_top_has_no_legend(tmp_path):
    rng = np.random.default_rng(5)
    frame = pl.DataFrame({"a": rng.integers(0, 3, 60), "b": rng.normal(size=60).round(1), "c": rng.integers(0, 2, 60)})
    frame = frame.with_columns(y=pl.col("a") * 2.0 + pl.col("b") + pl.Series(rng.normal(scale=0.1, size=60)))
    data = tmp_path / "t.parquet"
    frame.write_parquet(data)
    game = invoke(
        "game", data, "--game", "cohort-variance", "--prediction", "y", "--features", "a,b,c", "--interactions"
    )
    assert game.exit_code == 0 and "largest interactions" in game.output and " x " in game.output, game.output
    # b under a window so wide that it keeps the whole table: warned, marked, then cut by --top 1
    shown = invoke("shapley", data, "--prediction", "y", "--similar", "b=range:1", "--features", "a", "--top", "1")
    assert shown.exit_code == 0, shown.output
    assert "alone (range:1) keeps over 90%" in shown.output and "(! named in a warning above)" not in shown.output
