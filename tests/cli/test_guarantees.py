"""The README's guarantees: input tables, output files, errors and numerics, each defect once found pinned here.

Nothing lost: the input is never written (tests/test_cli.py::test_into_table_never_replaces_the_input),
nor an existing table replaced without --replace (test_cli.py::test_into_table). Nothing silently
wrong, no second statement, whole output sets, one-line failures: below.
"""

import datetime
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app
from cohortsql.formats import files as output

runner = CliRunner()


def invoke(*arguments):
    return runner.invoke(app, [str(argument) for argument in arguments])


def one_line_error(result, fragment):
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("cohortsql: error:") and fragment in lines[0], result.output


@pytest.fixture
def scores(tmp_path):
    frame = pl.DataFrame(
        {
            "loan": ["001", "002", "003", "004"],
            "day": pl.date_range(pl.date(2020, 1, 1), pl.date(2020, 1, 4), eager=True),
            "x": [1.0, 2.0, 3.0, 4.0],
            "y": [0.1, 0.5, 0.9, 0.3],
        }
    )
    frame.write_parquet(tmp_path / "scores.parquet")
    return tmp_path


# -- numbers: one comparison semantics, and no digits lost to an offset ---------------------


def test_int64_values_near_two_to_the_sixty_compare_exactly(engine):
    values = [2**60 + i for i in range(40)]
    frame = pl.DataFrame({"x": values, "y": np.arange(40.0)})
    for similarity, window in [(["x"], 3), ({"x": "range:0.1"}, 3), ({"x": "abs:2"}, 2), ({"x": "exact"}, 0)]:
        result = cohortsql.cohort_shapley(frame, prediction="y", similarity=similarity, **engine.options)
        expected = [sum(abs(other - value) <= window for other in values) for value in values]
        assert result.totals["cohort_size"].to_list() == expected
    binned = cohortsql.cohort_shapley(frame, prediction="y", similarity={"x": "bins:4"}, **engine.options)
    assert binned.totals["cohort_size"].to_list() == [10] * 40


def test_a_large_offset_changes_nothing(engine):
    rng = np.random.default_rng(4)
    frame = pl.DataFrame({"a": rng.integers(0, 3, 200), "b": rng.integers(0, 4, 200), "y": rng.integers(-50, 50, 200)})
    frame = frame.with_columns(pl.col("y").cast(pl.Float64) / 8)
    shifted = frame.with_columns(y=pl.col("y") + 1e15)
    base = cohortsql.variance_shapley(frame, prediction="y", similarity=["a", "b"], **engine.options)
    far = cohortsql.variance_shapley(shifted, prediction="y", similarity=["a", "b"], **engine.options)
    np.testing.assert_allclose(far.effects["shapley_effect"], base.effects["shapley_effect"], rtol=1e-9)
    assert far.explained_share == pytest.approx(base.explained_share, rel=1e-9)
    assert 0 < far.explained_share <= 1


# -- one statement per user string ----------------------------------------------------------


@pytest.mark.parametrize(
    "options, fragment",
    [
        ({"targets": "x > 1; COPY (SELECT 1) TO 'pwned.csv'"}, "holds a ';'"),
        ({"targets": "x > 1) OR (TRUE"}, "unbalanced parentheses"),
        ({"similarity": {"x": "sql:s.x = t.x; DROP TABLE t"}}, "holds a ';'"),
    ],
)
def test_user_sql_is_one_expression(scores, options, fragment, engine, local_files):
    options.setdefault("similarity", ["x"])
    with pytest.raises(cohortsql.CohortError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        cohortsql.cohort_shapley(str(scores / "scores.parquet"), prediction="y", **options, **engine.options)
    assert not (Path.cwd() / "pwned.csv").exists()


@pytest.mark.parametrize(
    "query, fragment",
    [
        ("SELECT * FROM '{path}'; ATTACH '{other}' AS other", "more than one statement"),
        ("WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a", "it holds 'INSERT'"),
        ("ATTACH '{other}' AS other", "no file named"),
    ],
)
def test_a_data_query_is_one_select(scores, query, fragment):
    other = scores / "other.duckdb"
    text = query.format(path=scores / "scores.parquet", other=other)
    one_line_error(invoke("run", text, "--prediction", "y", "--features", "x"), fragment)
    assert not other.exists()


# -- output files: whole sets, the umask's permissions, no temporaries left ------------------


def test_a_failed_set_leaves_every_earlier_file_as_it_was(scores, monkeypatch):
    out = scores / "out.parquet"
    out.write_bytes(b"previous run")
    original, calls = pl.DataFrame.write_parquet, []

    def disk_full_on_the_second_file(self, *arguments, **options):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return original(self, *arguments, **options)

    monkeypatch.setattr(pl.DataFrame, "write_parquet", disk_full_on_the_second_file)
    result = invoke("run", scores / "scores.parquet", "--prediction", "y", "--similar", "x=abs:2", "--out", out)
    one_line_error(result, "No space left on device")
    assert out.read_bytes() == b"previous run"
    assert sorted(path.name for path in scores.iterdir()) == ["out.parquet", "scores.parquet"]
    (scores / "out_totals.parquet").mkdir()
    arguments = ("run", scores / "scores.parquet", "--prediction", "y", "--similar", "x=abs:2", "--out", out)
    one_line_error(invoke(*arguments), "it is a directory")


def test_interrupted_writes_leave_no_temporaries(scores, monkeypatch):
    frame = pl.DataFrame({"a": [1]})
    calls = []

    def interrupted(self, *arguments, **options):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(self, *arguments, **options)

    original = pl.DataFrame.write_parquet
    monkeypatch.setattr(pl.DataFrame, "write_parquet", interrupted)
    with pytest.raises(KeyboardInterrupt):
        output.write_frames({scores / "a.parquet": frame, scores / "b.parquet": frame})
    assert sorted(path.name for path in scores.iterdir()) == ["scores.parquet"]


def test_stale_temporaries_of_killed_runs_are_removed(scores):
    stale = scores / f".out.parquet{output.TEMPORARY_MARK}dead.tmp"
    fresh = scores / f".out.parquet{output.TEMPORARY_MARK}live.tmp"
    stale.write_bytes(b"x" * 100)
    fresh.write_bytes(b"x")
    old = time.time() - 2 * output.STALE_SECONDS
    os.utime(stale, (old, old))
    output.write_frame(pl.DataFrame({"a": [1]}), scores / "out.parquet")
    assert not stale.exists() and fresh.exists()


def test_files_get_the_umasks_permissions(scores):
    previous = os.umask(0o022)
    try:
        output.write_frame(pl.DataFrame({"a": [1]}), scores / "out.csv")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((scores / "out.csv").stat().st_mode) == 0o644


def test_parquet_files_carry_metadata(scores):
    output.write_frame(pl.DataFrame({"a": [1]}), scores / "out.parquet", {"cohortsql": "yes", "seed": 3})
    metadata = pl.read_parquet_metadata(scores / "out.parquet")
    assert (metadata["cohortsql"], metadata["seed"]) == ('"yes"', "3")  # each value as JSON


# -- one line and status 2 for every mistake --------------------------------------------------


@pytest.mark.parametrize(
    "config, fragment",
    [
        ("features = 5", "features must be text or a list, got 5"),
        ('sample = "x"', "sample must be a whole number or a number, got 'x'"),
        ("out = 5", "out must be text, got 5"),
        ("seed = -3", "seed must be at least 0, got -3"),
        ('max_permutations = "a"', "max_permutations must be a whole number, got 'a'"),
        ("similar = 3", "similar must be a table of FEATURE"),
    ],
)
def test_config_values_of_the_wrong_type(scores, config, fragment):
    path = scores / "explain.toml"
    path.write_text(f'data = "scores.parquet"\nprediction = "y"\n{config}\n')
    one_line_error(invoke("run", "--config", path, "--features", "x"), fragment)


def test_config_data_of_the_wrong_type_and_flag_spellings(scores):
    path = scores / "explain.toml"
    path.write_text('data = 5\nprediction = "y"\n')
    one_line_error(invoke("run", "--config", path, "--features", "x"), "data must be text, got 5")
    path.write_text('data = "scores.parquet"\nprediction = "y"\nmemory-limit = "1GB"\nfeatures = ["x"]\n')
    result = invoke("run", "--config", path)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "arguments, fragment",
    [
        (["--seed", "-1"], "seed must be at least 0, got -1"),
        (["--method", "permutation", "--tolerance", "-1"], "tolerance must be a finite number > 0"),
    ],
)
def test_bad_numbers_on_the_command_line(scores, arguments, fragment):
    one_line_error(
        invoke("run", scores / "scores.parquet", "--prediction", "y", "--features", "x", *arguments), fragment
    )


def test_a_file_that_is_not_a_duckdb_database(scores):
    (scores / "fake.duckdb").write_text("not a database")
    one_line_error(
        invoke("run", f"{scores / 'fake.duckdb'}:scores", "--prediction", "y", "--features", "x"),
        "not a valid DuckDB database file",
    )


def test_a_locked_duckdb_database(scores):
    database = scores / "locked.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); c.execute('CREATE TABLE t AS SELECT 1 AS x, 2.0 AS y');"
            " print('ready', flush=True); time.sleep(60)",
            str(database),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        one_line_error(
            invoke("run", f"{database}:t", "--prediction", "y", "--features", "x"), "cannot open DuckDB database"
        )
    finally:
        holder.kill()
        holder.wait()


def test_plot_of_a_corrupt_file(scores):
    (scores / "bad.parquet").write_bytes(b"PAR1 garbage")
    one_line_error(invoke("plot", scores / "bad.parquet", "--out", scores / "f.png"), "cannot read")


def test_a_ragged_csv_is_named(tmp_path):
    (tmp_path / "ragged.csv").write_text("x,y\n1,2\n3\n4,5,6\n")
    with pytest.raises(cohortsql.CohortError, match="same number of fields"):
        cohortsql.cohort_shapley(str(tmp_path / "ragged.csv"), prediction="y", similarity=["x"])


@pytest.mark.parametrize(
    "options, fragment",
    [
        ({"targets": [2**70]}, "too large for any id column"),
        ({"similarity": None}, "similarity must be a mapping"),
        ({"max_permutations": "5"}, "max_permutations must be a whole number, got '5'"),
        ({"tolerance": -0.5}, "tolerance must be a finite number > 0"),
        ({"seed": 1.5}, "seed must be a whole number"),
        ({"prediction": 3}, "prediction must be the name of a column"),
    ],
)
def test_bad_python_arguments(scores, options, fragment):
    arguments = {"prediction": "y", "similarity": ["x"]} | options
    with pytest.raises(cohortsql.CohortError, match=fragment):
        cohortsql.cohort_shapley(str(scores / "scores.parquet"), **arguments)


# -- ids of other types ----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["exact", "integrated"])
def test_unsigned_ids_beyond_bigint_are_found(method):
    """Target ids of a UINT64 id column above 2^63 - 1 are that column's values (they were refused as
    too large for any id column); beyond 2^64 - 1, or for a signed id column, they are refused by name."""
    rng = np.random.default_rng(3)
    frame = pl.DataFrame(
        {
            "big": pl.Series([2**64 - 1 - row for row in range(8)], dtype=pl.UInt64),
            "row": np.arange(8),
            "x": rng.integers(0, 3, 8),
            "y": rng.normal(size=8),
        }
    )
    options = dict(prediction="y", similarity={"x": "exact"}, method=method)
    by_big = cohortsql.cohort_shapley(frame, id="big", targets=[2**64 - 1, 2**64 - 3], **options)
    by_row = cohortsql.cohort_shapley(frame, id="row", targets=[0, 2], **options)  # the same rows
    assert by_big.ids.to_list() == [2**64 - 3, 2**64 - 1]  # in id order: rows 2 and 0
    np.testing.assert_allclose(by_big.shapley, by_row.shapley[::-1], atol=1e-15)
    with pytest.raises(cohortsql.CohortError, match="are not values of id column 'row'"):
        cohortsql.cohort_shapley(frame, id="row", targets=[2**64 - 1], **options)
    with pytest.raises(cohortsql.CohortError, match="too large for any id column"):
        cohortsql.cohort_shapley(frame, id="big", targets=[2**64], **options)


def test_target_ids_are_read_in_the_id_columns_type(scores):
    out = scores / "out.parquet"
    by_date = invoke(
        "run",
        scores / "scores.parquet",
        "--prediction",
        "y",
        "--features",
        "x",
        "--id",
        "day",
        "--target-ids",
        "2020-01-03",
        "--out",
        out,
    )
    assert by_date.exit_code == 0, by_date.output
    assert pl.read_parquet(out)["id"].to_list() == [datetime.date(2020, 1, 3)]
    by_text = invoke(
        "run",
        scores / "scores.parquet",
        "--prediction",
        "y",
        "--features",
        "x",
        "--id",
        "loan",
        "--target-ids",
        "003",
        "--out",
        out,
    )
    assert by_text.exit_code == 0, by_text.output
    assert pl.read_parquet(out)["id"].to_list() == ["003"]
    missing = invoke(
        "run",
        scores / "scores.parquet",
        "--prediction",
        "y",
        "--features",
        "x",
        "--id",
        "day",
        "--target-ids",
        "2020-13-01",
    )
    one_line_error(missing, "are not values of id column 'day'")


# -- memory ----------------------------------------------------------------------------------


def test_quantiles_spill_under_a_small_memory_limit(tmp_path):
    """An exact quantile aggregate holds every value: on 4,000,000 rows it fails under 64 MB; the
    sorted order statistics cohortsql uses under a memory limit spill and give the same widths. (At
    40 MB the sort itself failed once in a busy run, and 2 times in 4 at 36 MB: DuckDB's parallel
    sort pins blocks as its threads go, so the limit keeps a margin.)"""
    import duckdb

    path = tmp_path / "big.parquet"
    duckdb.sql(
        "COPY (SELECT range AS id, hash(range) % 1000000 / 1000000.0 AS x, hash(range, 2) % 1000 / 1000.0 AS y"
        f" FROM range(4000000)) TO '{path}' (FORMAT parquet)"
    )
    aggregate = duckdb.connect()
    aggregate.execute("SET memory_limit = '64MB'")
    with pytest.raises(duckdb.OutOfMemoryException):
        aggregate.execute(f"SELECT quantile_cont(x, 0.1) FROM '{path}'").fetchall()
    options = dict(prediction="y", similarity={"x": "quantile:0.1"}, id="id", targets=[1, 2])
    limited = cohortsql.cohort_shapley(str(path), engine=cohortsql.DuckDB(memory_limit="64MB"), **options)
    free = cohortsql.cohort_shapley(str(path), **options)
    assert limited.feature_statistics == free.feature_statistics
    np.testing.assert_allclose(limited.shapley, free.shapley, atol=1e-12)


# -- round 3: nothing lost, nothing read wrongly ---------------------------------------------


@pytest.mark.parametrize("out", ["scores.parquet", "link.parquet", "res.parquet"])
def test_out_never_writes_over_an_input_file(scores, out, monkeypatch):
    """The input itself, a link to it, or (for res.parquet) the _totals file beside it that is the input."""
    monkeypatch.chdir(scores)
    (scores / "link.parquet").symlink_to(scores / "scores.parquet")
    data = "res_totals.parquet" if out == "res.parquet" else "scores.parquet"
    if data != "scores.parquet":
        (scores / data).write_bytes((scores / "scores.parquet").read_bytes())
    before = (scores / data).read_bytes()
    one_line_error(invoke("shapley", data, "--prediction", "y", "--features", "x", "--out", out), "is an input")
    assert (scores / data).read_bytes() == before


def test_into_table_never_replaces_its_input_under_another_spelling_or_link(scores):
    import duckdb

    database = scores / "in.duckdb"
    with duckdb.connect(str(database)) as connection:
        connection.execute(f"CREATE TABLE scores AS SELECT * FROM read_parquet('{scores / 'scores.parquet'}')")
    os.link(database, scores / "hard.duckdb")
    for data, table, target in [
        (f"{database}:main.scores", "SCORES", database),
        (f"{database}:scores", "main.Scores", scores / "hard.duckdb"),
    ]:
        result = invoke(
            "shapley",
            data,
            "--prediction",
            "y",
            "--features",
            "x",
            "--into-table",
            table,
            "--database",
            target,
            "--replace",
        )
        assert result.exit_code == 2 and "error: will not write over table" in result.output, result.output
        assert "this run's input" in result.output
    with duckdb.connect(str(database)) as connection:
        assert connection.execute("SELECT count(*) FROM scores").fetchall() == [(4,)]


def test_database_must_be_a_duckdb_file_or_a_new_one(scores):
    (scores / "db.csv").write_text("a,b\n1,2\n")
    result = invoke(
        "shapley",
        scores / "scores.parquet",
        "--prediction",
        "y",
        "--features",
        "x",
        "--into-table",
        "t",
        "--database",
        scores / "db.csv",
    )
    one_line_error(result, "is not a DuckDB database")
    assert (scores / "db.csv").read_text() == "a,b\n1,2\n"


@pytest.mark.parametrize("flag", ["--target-ids", "--targets"])
@pytest.mark.parametrize("value", ["", " ", ","])
def test_an_empty_choice_of_targets_is_refused_not_every_row(scores, flag, value):
    if flag == "--targets" and value == ",":
        return  # a comma is not an empty predicate (the SQL check refuses it)
    result = invoke("shapley", scores / "scores.parquet", "--prediction", "y", "--features", "x", flag, value)
    one_line_error(result, "is empty")


@pytest.mark.parametrize("name", ["select.parquet", "from/x.parquet", "values (1).parquet"])
def test_files_named_like_queries_are_read_as_files(scores, name):
    path = scores / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes((scores / "scores.parquet").read_bytes())
    result = invoke("shapley", path, "--prediction", "y", "--features", "x")
    assert result.exit_code == 0, result.output
    assert "4 targets x 1 features" in result.output


def test_columns_differing_only_in_case_are_refused(engine):
    frame = pl.DataFrame({"A": [1, 2, 3, 4], "a": [4, 1, 3, 2], "y": [0.1, 0.5, 0.9, 0.3]})
    with pytest.raises(cohortsql.CohortError, match="'A' and 'a' differ only in case"):
        cohortsql.cohort_shapley(frame, prediction="y", similarity=["a"], **engine.options)


def test_integer_predictions_near_two_to_the_sixty_keep_their_digits(engine):
    """y = 2^60 + k explains exactly as k does: the pilot is subtracted in integers, before any DOUBLE
    (cast first, y lost its last digits and the values moved by up to 49)."""
    rng = np.random.default_rng(1)
    k, x = rng.integers(0, 100, 60), rng.integers(0, 5, 60)
    near = pl.DataFrame({"x": x, "y": (2**60 + k).astype(np.int64)})
    small = pl.DataFrame({"x": x, "y": k.astype(np.int64)})
    options = dict(prediction="y", similarity=["x"], **engine.options)
    big, reference = cohortsql.cohort_shapley(near, **options), cohortsql.cohort_shapley(small, **options)
    np.testing.assert_array_equal(big.shapley, reference.shapley)
    np.testing.assert_array_equal(big.shapley_squared, reference.shapley_squared)
    effects = cohortsql.shapley_effects(near, **options).effects["shapley_effect"]
    np.testing.assert_allclose(
        effects, cohortsql.shapley_effects(small, **options).effects["shapley_effect"], rtol=1e-12
    )


def test_weights_whose_sums_overflow_are_refused_not_nan(engine):
    frame = pl.DataFrame({"x": [1, 2, 1, 2], "y": [1.0, 2.0, 3.0, 4.0], "w": [1e308] * 4})
    with pytest.raises(cohortsql.CohortError, match="overflow a DOUBLE; divide the weights"):
        cohortsql.cohort_shapley(frame, prediction="y", similarity=["x"], weight="w", **engine.options)
    scaled = frame.with_columns(w=pl.lit(1e300))  # the same ratios, within range: the unweighted values
    values = cohortsql.cohort_shapley(scaled, prediction="y", similarity=["x"], weight="w", **engine.options).shapley
    np.testing.assert_allclose(values.ravel(), [-0.5, 0.5, -0.5, 0.5], atol=1e-12)


def test_a_ctrl_c_that_a_library_swallows_still_stops_the_command(scores, monkeypatch):
    """pyarrow lost a KeyboardInterrupt raised while it imported pandas inside to_numpy(): the run went
    on, wrote its files and exited 0. Ctrl-C now also sets a flag that the command checks before it
    writes anything and when it ends."""
    import signal

    from cohortsql.api import local  # imported before the patch: it would import the patched function
    from cohortsql.formats import tables

    original = tables.warn_about_cohorts

    def interrupted_and_swallowed(*arguments, **options):
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass  # what a library's C code did with it
        return original(*arguments, **options)

    monkeypatch.setattr(tables, "warn_about_cohorts", interrupted_and_swallowed)
    monkeypatch.setattr(local, "warn_about_cohorts", interrupted_and_swallowed)
    out = scores / "out.parquet"
    result = invoke("shapley", scores / "scores.parquet", "--prediction", "y", "--features", "x", "--out", out)
    assert result.exit_code == 130, result.output
    assert "interrupted; nothing was written" in result.output
    assert not out.exists()


def test_a_full_disk_is_one_line_and_keeps_the_previous_file(scores, monkeypatch):
    """polars reports ENOSPC as its own ComputeError (measured on a 64 KiB tmpfs), not an OSError."""
    out = scores / "out.parquet"
    out.write_bytes(b"previous run")

    def disk_full(self, *arguments, **options):
        raise pl.exceptions.ComputeError("parquet: underlying IO error: No space left on device (os error 28)")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", disk_full)
    result = invoke("shapley", scores / "scores.parquet", "--prediction", "y", "--features", "x", "--out", out)
    assert result.exit_code == 2 and "No space left on device" in result.output, result.output
    assert out.read_bytes() == b"previous run"
    assert [path.name for path in scores.iterdir() if path.name.endswith(".tmp")] == []


def test_defaulted_features_are_counted_in_bounded_memory(tmp_path):
    """count(DISTINCT) over 2,000,000 distinct floats failed at memory_limit="50MB" (a hash table that
    does not spill); an estimate decides, and small estimates are counted exactly: a 10-level number
    is still `exact` and an 11-level one a window, as an exact count makes them."""
    rng = np.random.default_rng(0)
    n = 2_000_000
    frame = pl.DataFrame({f"x{j}": rng.normal(size=n) for j in range(6)}).with_columns(
        ten=pl.Series(rng.integers(0, 10, n)), eleven=pl.Series(rng.integers(0, 11, n)), y=pl.Series(rng.normal(size=n))
    )
    frame.write_parquet(tmp_path / "wide.parquet")
    features = [f"x{j}" for j in range(6)] + ["ten", "eleven"]
    plan = cohortsql.estimate(
        tmp_path / "wide.parquet",
        prediction="y",
        similarity=features,
        engine=cohortsql.DuckDB(memory_limit="50MB"),
        targets=[0, 1],
    )
    assert plan.features == 8
    small = frame.head(5_000)
    result = cohortsql.cohort_shapley(small, prediction="y", similarity=["ten", "eleven"], targets=[0])
    assert result.similarity == {"ten": "exact", "eleven": "range:0.1"}


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_two_million_text_ids_are_checked_under_a_small_memory_limit(tmp_path, suffix):
    """The memory axis: a table that needs more than its limit. Under --memory-limit 50MB, 2,000,000 text
    ids are checked unique by spilling, and a CSV is read with a buffer the limit holds (DuckDB's own,
    32 MB, failed before the first row: 'could not allocate block of size 30.5 MiB')."""
    rng = np.random.default_rng(1)
    n = 2_000_000
    data = tmp_path / f"ids.{suffix}"
    frame = pl.DataFrame(
        {
            "id": pl.int_range(n, eager=True).cast(pl.String).str.zfill(12),
            "x": rng.normal(size=n),
            "p": rng.normal(size=n),
        }
    )
    frame.write_csv(data) if suffix == "csv" else frame.write_parquet(data)
    result = invoke(
        "shapley",
        data,
        "--prediction",
        "p",
        "--features",
        "x",
        "--id",
        "id",
        "--targets",
        "p > 4.6",
        "--memory-limit",
        "50MB",
    )
    assert result.exit_code == 0, result.output
    assert "targets x 1 features" in result.output


def test_assemble_never_writes_over_the_histogram_it_reads(scores):
    histogram = scores / "histogram.parquet"
    sql = cohortsql.sql_query(scores / "scores.parquet", prediction="y", similarity=["x"], id="loan")
    import duckdb

    duckdb.sql(sql).pl().write_parquet(histogram)
    before = histogram.read_bytes()
    one_line_error(invoke("assemble", histogram, "--features", "x", "--out", histogram), "is an input")
    assert histogram.read_bytes() == before
