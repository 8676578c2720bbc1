"""Results an analyst can trust: defaults that fit the data, diagnostics, warnings, reasons, outputs that
say how they were made, interruption, and one vocabulary across Python, polars and the shell."""

import datetime
import inspect
import json
import signal
import subprocess
import sys
import types

import duckdb
import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app
from cohortsql.run import progress

runner = CliRunner()


def test_dates_and_timestamps_are_numbers_with_a_default_window(engine):
    days = [0, 1, 3, 10, 11, 40, 41, 45]
    dates = [datetime.date(2024, 1, 1) + datetime.timedelta(days=day) for day in days]
    frame = pl.DataFrame(
        {
            "day": pl.Series(dates, dtype=pl.Date),
            "at": pl.Series([datetime.datetime(2024, 1, 1) + datetime.timedelta(hours=6 * day) for day in days]),
            "flag": [True, False] * 4,
            "y": np.arange(8.0),
        }
    )
    result = cohortsql.cohort_shapley(frame, prediction="y", similarity=["day", "at", "flag"], **engine.options)
    assert result.similarity == {"day": "range:0.1", "at": "range:0.1", "flag": "exact"}
    window = 0.1 * 45  # days
    expected = [sum(abs(other - day) <= window for other in days) for day in days]
    assert result.feature_cohort_size[:, 0].tolist() == expected
    weekly = cohortsql.cohort_shapley(
        frame, prediction="y", similarity={"day": "abs:7", "at": "abs:18h"}, **engine.options
    )
    assert weekly.feature_cohort_size[:, 0].tolist() == [sum(abs(o - d) <= 7 for o in days) for d in days]
    hours = [6 * day for day in days]
    assert weekly.feature_cohort_size[:, 1].tolist() == [sum(abs(o - h) <= 18 for o in hours) for h in hours]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"similarity": ["key", "x"], "id": "key"}, "feature 'key' is the id column"),
        ({"similarity": ["y", "x"]}, "feature 'y' is the column being explained"),
        ({"similarity": {"x": "abs:2h"}}, "the duration in abs:2h needs a date or timestamp column"),
    ],
)
def test_features_that_cannot_explain_are_refused(options, message):
    frame = pl.DataFrame({"key": ["a", "b", "c"], "x": [1.0, 2.0, 3.0], "y": [0.0, 1.0, 0.0]})
    with pytest.raises(cohortsql.CohortError, match=message):
        cohortsql.cohort_shapley(frame, prediction="y", **options)


def test_exact_features_with_many_levels_warn():
    rng = np.random.default_rng(2)
    frame = pl.DataFrame(
        {
            "code": rng.integers(0, 1000, 5000).astype(str),
            "key": [f"k{i}" for i in range(5000)],
            "few": rng.integers(0, 8, 5000).astype(str),
            "y": rng.normal(size=5000),
        }
    )
    with pytest.warns(cohortsql.CohortWarning) as caught:
        cohortsql.shapley_effects(frame, prediction="y", similarity=["code", "key", "few"], sample=50, seed=1)
    messages = [str(warning.message) for warning in caught]
    assert any("'code' has about" in message and "distinct values" in message for message in messages)
    assert any("'key' has a different value on every row (like an id)" in message for message in messages)
    assert not any("'few'" in message for message in messages)
    # text has no window: the advice for it is a coarser key, and the advice works as given
    advice = "sql:left(s.code, 3) = left(t.code, 3)"
    assert any(advice in message for message in messages) and not any("range:0.1" in m for m in messages)
    coarser = cohortsql.shapley_effects(frame, prediction="y", similarity={"code": advice}, sample=50, seed=1)
    assert coarser.effects["feature"].to_list() == ["code"]
    numbers = frame.with_columns(pl.col("code").cast(pl.Int64))
    with pytest.warns(cohortsql.CohortWarning, match=r"if its values are ordered, give it a window \(range:0.1\)"):
        cohortsql.shapley_effects(numbers, prediction="y", similarity={"code": "exact"}, sample=50, seed=1)


def test_a_sample_of_a_predicates_rows(engine):
    frame = pl.DataFrame({"key": [f"r{i:03d}" for i in range(200)], "x": np.arange(200.0) % 17, "y": np.arange(200.0)})
    options = dict(prediction="y", similarity={"x": "abs:2"}, id="key", targets="x > 10", sample=20, seed=4)
    result = cohortsql.cohort_shapley(frame, **options, **engine.options)
    assert len(result.ids) == 20 and (result.targets["x"] > 10).all()
    assert result.population == int((frame["x"] > 10).sum())
    assert result.ids.to_list() == cohortsql.cohort_shapley(frame, **options).ids.to_list()
    with pytest.raises(cohortsql.CohortError, match="not from a list of ids"):
        cohortsql.cohort_shapley(frame, prediction="y", similarity=["x"], targets=[1, 2], sample=1)


def test_every_output_says_how_it_was_made(tmp_path):
    frame = pl.DataFrame({"x": np.arange(30.0) % 5, "y": np.arange(30.0)})
    frame.write_parquet(tmp_path / "in.parquet")
    database = tmp_path / "out.duckdb"
    result = runner.invoke(
        app,
        [
            "shapley",
            str(tmp_path / "in.parquet"),
            "--prediction",
            "y",
            "--similar",
            "x=exact",
            "--seed",
            "3",
            "--out",
            str(tmp_path / "out.parquet"),
            "--into-table",
            "explained",
            "--database",
            str(database),
        ],
    )
    assert result.exit_code == 0, result.output
    metadata = pl.read_parquet_metadata(tmp_path / "out_totals.parquet")
    assert json.loads(metadata["similarity"]) == {"x": "exact"} and json.loads(metadata["method"]) == "exact"
    assert json.loads(metadata["cohortsql_version"]) and json.loads(metadata["engine"]) == "duckdb"
    with duckdb.connect(str(database), read_only=True) as connection:
        ((tables, settings),) = connection.execute("SELECT tables, settings FROM cohortsql_runs").fetchall()
        comment = connection.execute("SELECT comment FROM duckdb_tables() WHERE table_name = 'explained'").fetchall()
    assert tables == "explained, explained_totals, explained_paths"
    assert json.loads(settings)["prediction"] == "y" and json.loads(comment[0][0])["seed"] == 3


def test_a_table_in_a_schema_of_a_database_file(tmp_path):
    database = tmp_path / "scores.duckdb"
    with duckdb.connect(str(database)) as connection:
        connection.execute("CREATE SCHEMA risk")
        connection.execute("CREATE TABLE risk.scores AS SELECT range % 4 AS x, range * 1.0 AS y FROM range(40)")
    result = runner.invoke(app, ["shapley", f"{database}:risk.scores", "--prediction", "y", "--features", "x"])
    assert result.exit_code == 0, result.output
    assert "40 targets x 1 features" in result.output


def test_ctrl_c_stops_a_long_run_and_leaves_nothing(tmp_path):
    data = tmp_path / "big.parquet"
    duckdb.sql(
        "COPY (SELECT hash(range) % 1000 / 1000.0 AS x0, hash(range, 1) % 1000 / 1000.0 AS x1,"
        f" hash(range, 2) % 1000 / 1000.0 AS x2, range * 1.0 AS y FROM range(1000000)) TO '{data}' (FORMAT parquet)"
    )
    out = tmp_path / "out"
    out.mkdir()
    command = [
        sys.executable,
        "-m",
        "cohortsql.cli",
        "shapley",
        str(data),
        "--prediction",
        "y",
        "--similar",
        "x0=abs:0.05",
        "--similar",
        "x1=abs:0.05",
        "--similar",
        "x2=abs:0.05",
        "--sample",
        "3000",
        "--seed",
        "1",
        "--out",
        str(out / "r.parquet"),
        "--progress",
    ]  # about a minute of work
    running = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = running.stderr.readline()  # the first progress line: the run is computing (however busy the machine)
    assert first.startswith("cohortsql:") and running.poll() is None, first
    running.send_signal(signal.SIGINT)
    _, rest = running.communicate()
    stderr = first + rest
    assert running.returncode == 130
    lines = stderr.strip().splitlines()  # progress lines (and perhaps the run's estimate) first, then:
    assert lines[-1] == "cohortsql: interrupted; nothing was written" and "Traceback" not in stderr
    assert all(line.startswith("cohortsql: ") for line in lines[:-1])
    assert list(out.iterdir()) == []


def test_the_command_line_describes_itself_without_loading_the_computations():
    code = (
        "import sys; from cohortsql.cli import app; from typer.testing import CliRunner;"
        " CliRunner().invoke(app, ['shapley', '--help']);"
        " print(sorted(m for m in ('polars', 'numpy', 'duckdb', 'pyarrow', 'matplotlib', 'pyspark') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("order", ["polars first", "cohortsql first"])
def test_the_polars_namespace_is_registered_in_any_import_order(order):
    imports = (
        "import polars as pl; import cohortsql" if order == "polars first" else "import cohortsql; import polars as pl"
    )
    code = f"{imports}; print(hasattr(pl.DataFrame(), 'cohort'), hasattr(pl.LazyFrame(), 'cohort'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True True"


def test_one_vocabulary_across_python_polars_and_the_shell():
    python = inspect.signature(cohortsql.cohort_shapley).parameters
    frame = pl.DataFrame({"x": [1.0]})
    namespace = inspect.signature(frame.cohort.shapley).parameters
    assert [name for name in python if name not in ("data", "connection")] == list(namespace)
    assert list(inspect.signature(frame.cohort.effects).parameters) == [
        name for name in inspect.signature(cohortsql.shapley_effects).parameters if name not in ("data", "connection")
    ]
    assert cohortsql.variance_shapley is cohortsql.shapley_effects
    for command in ("shapley", "effects", "run", "global"):
        assert runner.invoke(app, [command, "--help"]).exit_code == 0
    shell = runner.invoke(app, ["shapley", "--help"]).output
    for flag in (
        "--prediction",
        "--similar",
        "--id",
        "--targets",
        "--target-ids",
        "--sample",
        "--seed",
        "--method",
        "--path",
        "--tolerance",
        "--max-permutations",
        "--memory-limit",
        "--engine",
        "--reasons",
        "--dry-run",
    ):
        assert flag in shell


def test_a_notebook_sees_a_display_that_updates(monkeypatch):
    shown = []

    class Handle:
        def update(self, text):
            shown.append(("update", text))

    def display(text, display_id):
        shown.append(("display", text))
        return Handle()

    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: types.SimpleNamespace(config={"IPKernelApp": {}})
    ipython.display = types.ModuleType("IPython.display")
    ipython.display.display = display
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", ipython.display)
    assert progress.in_notebook()
    shown_reporter = progress.NotebookDisplay()
    shown_reporter.start(3)
    shown_reporter.update(1)
    shown_reporter.update(3)
    shown_reporter.finish()
    assert [kind for kind, _ in shown] == ["display", "update", "update"]
    assert shown[-1][1].startswith("cohortsql: 3/3 targets")


def test_a_warning_points_at_the_callers_line():
    """A CohortWarning names the line of the caller's code, not a module of the library (it named
    cohortsql/interrupts.py:83, the wrapper every public call goes through)."""
    import warnings

    frame = pl.DataFrame({"id": range(12), "x": range(12), "y": [float(value % 5) for value in range(12)]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cohortsql.cohort_shapley(frame, prediction="y", similarity={"x": "exact"}, id="id")
        line = inspect.currentframe().f_lineno - 1
    ours = [warning for warning in caught if issubclass(warning.category, cohortsql.CohortWarning)]
    assert ours, [str(warning.message) for warning in caught]
    assert {(warning.filename, warning.lineno) for warning in ours} == {(__file__, line)}
