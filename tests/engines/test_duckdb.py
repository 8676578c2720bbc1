"""The DuckDB engine under the caller's settings: memory limits too small to run anything, limits a
wide table's statistics must fit, and connections whose configuration is locked."""

import duckdb
import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app

FRAME = pl.DataFrame({"a": [1.0, 2, 3, 4] * 5, "b": [0, 1, 1, 0, 1] * 4, "y": np.linspace(0, 1, 20)})


def test_a_memory_limit_too_small_to_run_is_one_error(tmp_path):
    with pytest.raises(cohortsql.CohortError, match="memory_limit '1KB' is below the 4 MB DuckDB needs"):
        cohortsql.cohort_shapley(
            FRAME, prediction="y", similarity=["a", "b"], engine=cohortsql.DuckDB(memory_limit="1KB")
        )
    with pytest.raises(cohortsql.CohortError, match="memory_limit 'lots' is not a size DuckDB reads"):
        cohortsql.cohort_shapley(
            FRAME, prediction="y", similarity=["a", "b"], engine=cohortsql.DuckDB(memory_limit="lots")
        )
    path = tmp_path / "d.parquet"
    FRAME.write_parquet(path)
    result = CliRunner().invoke(
        app, ["shapley", str(path), "--prediction", "y", "--features", "a,b", "--memory-limit", "1KB"]
    )
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and "below the 4 MB" in lines[0], result.output


def test_a_caller_connection_gets_its_settings_back_even_after_running_out_of_memory():
    rng = np.random.default_rng(5)
    large = pl.DataFrame({"a": rng.normal(size=200_000), "y": rng.normal(size=200_000)})
    connection = duckdb.connect()
    before = connection.execute("SELECT current_setting('memory_limit')").fetchall()
    for _ in range(3):  # the cleanup's own statements failed at random under the limit
        with pytest.raises(cohortsql.CohortError, match="Out of Memory Error.*; raise memory_limit"):
            cohortsql.cohort_shapley(
                large,
                prediction="y",
                similarity={"a": "quantile:0.1"},
                engine=cohortsql.DuckDB(memory_limit="5MB"),
                connection=connection,
            )
        assert connection.execute("SELECT current_setting('memory_limit')").fetchall() == before


def test_the_statistics_of_thirty_defaulted_features_fit_a_hundred_megabytes():
    rng = np.random.default_rng(30)
    wide = pl.DataFrame({f"x{j}": rng.normal(size=100).round(j % 3) for j in range(30)}).with_columns(
        y=pl.Series(rng.normal(size=100))
    )
    options = dict(prediction="y", similarity="all", targets=[0, 1], method="permutation", seed=1)
    limited = cohortsql.cohort_shapley(wide, engine=cohortsql.DuckDB(memory_limit="100MB"), **options)
    free = cohortsql.cohort_shapley(wide, **options)
    assert limited.kinds == free.kinds
    np.testing.assert_allclose(limited.shapley, free.shapley, atol=1e-12)


def test_a_locked_configuration_runs_without_settings_it_does_not_need():
    connection = duckdb.connect()
    connection.register("frame", FRAME.to_arrow())
    connection.execute("SET lock_configuration = true")
    res = cohortsql.cohort_shapley("frame", prediction="y", similarity=["a", "b"], connection=connection)
    np.testing.assert_allclose(
        res.shapley, cohortsql.cohort_shapley(FRAME, prediction="y", similarity=["a", "b"]).shapley
    )
    with pytest.raises(
        cohortsql.CohortError, match=r"memory_limit cannot be set: the connection's configuration is locked"
    ):
        cohortsql.cohort_shapley(
            "frame",
            prediction="y",
            similarity=["a", "b"],
            connection=connection,
            engine=cohortsql.DuckDB(memory_limit="1GB"),
        )


def test_without_external_access_no_message_tells_which_files_exist(tmp_path):
    """Python's own look at the file system bypassed DuckDB's restriction: a missing path and an
    existing one got different messages, and a glob's named the files it matched."""
    for name in ("secret_1", "secret_2"):
        FRAME.write_parquet(tmp_path / f"{name}.parquet")
        FRAME.write_csv(tmp_path / f"{name}.csv")
    connection = duckdb.connect(config={"enable_external_access": False})
    messages = {}
    for pattern in ("secret_1", "nothing", "secret_*", "none_*"):
        for suffix in (".parquet", ".csv"):
            path = str(tmp_path / f"{pattern}{suffix}")
            with pytest.raises(cohortsql.CohortError) as caught:
                cohortsql.cohort_shapley(path, prediction="y", similarity=["a"], connection=connection)
            messages.setdefault(suffix, set()).add(str(caught.value).replace(path, "PATH"))
            assert "secret_2" not in str(caught.value)
    assert all(len(seen) == 1 for seen in messages.values()), messages


def test_a_callers_memory_limit_is_planned_for(tmp_path):
    """A connection the caller limited to 50 MB (not a limit given to cohortsql): the call plans for it
    as for one it was given, so the check that 2,000,000 text ids are unique spills instead of failing
    with DuckDB's out-of-memory error."""
    rows = 2_000_000
    rng = np.random.default_rng(4)
    path = tmp_path / "big.parquet"
    pl.DataFrame(
        {
            "id": pl.int_range(rows, eager=True).cast(pl.String).str.zfill(12),
            "x": rng.normal(size=rows),
            "p": rng.normal(size=rows),
        }
    ).write_parquet(path)
    connection = duckdb.connect()
    connection.execute("SET memory_limit = '50MB'")
    connection.execute(f"CREATE VIEW big AS SELECT * FROM read_parquet('{path}')")
    result = cohortsql.cohort_shapley(
        "big", prediction="p", similarity={"x": "range:0.1"}, id="id", targets="p > 4.6", connection=connection
    )
    assert result.local.height == result.ids.len() > 0
    assert connection.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] == "47.6 MiB"
