"""Memory settings, progress reports and batching options."""

import io

import duckdb
import numpy as np
import polars as pl
import pytest

import cohortsql
from cohortsql import prepare, progress, shapley
from cohortsql.engines import EngineSettings, open_engine

FRAME = pl.DataFrame({"x": np.arange(40) % 7 * 1.0, "z": np.arange(40) % 3, "y": np.arange(40) / 10})


def test_memory_settings_apply_and_are_restored_on_the_callers_connection(tmp_path):
    connection = duckdb.connect()
    before = connection.execute("SELECT current_setting('memory_limit')").fetchall()
    result = cohortsql.cohort_shapley(
        FRAME,
        prediction="y",
        similarity={"x": "abs:1", "z": "exact"},
        memory_limit="300MB",
        temp_directory=tmp_path / "spill",
        connection=connection,
    )
    assert len(result.ids) == 40
    assert connection.execute("SELECT current_setting('memory_limit')").fetchall() == before


def test_memory_limit_bounds_the_batches():
    """A quarter of DuckDB's memory limit, when less than the default budget, bounds each batch."""
    limited = open_engine(engine="duckdb", settings=EngineSettings(memory_limit="400MB"))
    try:
        assert limited.memory_budget == pytest.approx(400e6, rel=1e-3)
        assert prepare._batch_bytes(limited) == limited.memory_budget // 4
    finally:
        limited.close()
    unlimited = open_engine(engine="duckdb")
    try:
        assert unlimited.memory_budget is None
        assert prepare._batch_bytes(unlimited) == prepare.BATCH_MEMORY_BYTES
    finally:
        unlimited.close()
    assert shapley.targets_per_batch(20, 100 * 2**20) == 2  # 6 arrays of 2^20 doubles per target


def test_bad_memory_limit_names_the_setting():
    with pytest.raises(cohortsql.CohortError, match="setting memory_limit = 'lots'"):
        cohortsql.cohort_shapley(FRAME, prediction="y", similarity=["x"], memory_limit="lots")


def test_batches_of_targets_give_the_same_values(monkeypatch):
    whole = cohortsql.cohort_shapley(FRAME, prediction="y", similarity={"x": "abs:1", "z": "exact"})
    monkeypatch.setattr(prepare, "BATCH_MEMORY_BYTES", 1)  # one target per batch
    batched = cohortsql.cohort_shapley(FRAME, prediction="y", similarity={"x": "abs:1", "z": "exact"})
    np.testing.assert_allclose(batched.shapley, whole.shapley, atol=1e-14)


class Terminal(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def test_progress_shows_on_a_terminal_only():
    batches = [[1, 2], [3, 4], [5]]
    for tty, enabled, shown in [(True, True, True), (False, None, False), (True, False, False)]:
        stream = Terminal(tty)
        assert list(progress.track(batches, total=5, size=len, enabled=enabled, stream=stream)) == batches
        assert ("2/5 targets" in stream.getvalue()) == shown
        assert ("5/5 targets" in stream.getvalue()) == shown


def test_progress_over_real_batches(monkeypatch, capsys):
    """Progress counts distinct targets: targets with identical predictors are computed once."""
    monkeypatch.setattr(prepare, "BATCH_MEMORY_BYTES", 1)
    cohortsql.cohort_shapley(FRAME, prediction="y", similarity=["x"], progress=True)
    assert "cohortsql: 7/7 targets" in capsys.readouterr().err
    cohortsql.cohort_shapley(FRAME, prediction="y", similarity=["x"], progress=False)
    assert capsys.readouterr().err == ""
