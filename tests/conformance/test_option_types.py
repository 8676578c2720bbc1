"""The matrix's axis of the *types* of an option's value: every kind of value a user passes for an
option (a boolean mask of any array library, numpy scalars, booleans) through every public call that
takes the option, each held to one expectation: the same run as the option's plain spelling, or one
`CohortError` naming the option."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import cohortsql
import cohortsql.polars  # noqa: F401 (the df.cohort namespace)
from cohortsql.errors import CohortError

FRAME = pl.DataFrame(
    {
        "a": [1, 2, 2, 3, 1, 2, 3, 1, 2, 3],
        "b": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0],
        "g": ["x", "y", "x", "y", "x", "y", "x", "y", "x", "y"],
        "p": [0.1, 0.5, 0.4, 0.9, 0.2, 0.6, 1.0, 0.3, 0.45, 0.95],
    }
)
SELECTED = [1, 2, 5, 8]
"""The rows where ``a == 2``: what every mask below selects (by position)."""

MASKS: dict[str, Callable[[pl.DataFrame], Any]] = {
    "polars Series": lambda frame: frame["a"] == 2,
    "numpy array": lambda frame: (frame["a"] == 2).to_numpy(),
    "list of bools": lambda frame: (frame["a"] == 2).to_list(),
    "list of numpy bools": lambda frame: list((frame["a"] == 2).to_numpy()),
    "pyarrow array": lambda frame: pa.array((frame["a"] == 2).to_list()),
    "pyarrow chunked array": lambda frame: pc.equal(frame.to_arrow()["a"], 2),
    "pandas Series": lambda frame: pd.Series((frame["a"] == 2).to_list()),
}


def _ids(result: Any) -> list[Any]:
    found = getattr(result, "cohort", result)  # an audit's own cohort run
    return found.ids.to_list()


CALLS: dict[str, Callable[..., Any]] = {
    "cohort_shapley": lambda frame, **options: cohortsql.cohort_shapley(
        frame, prediction="p", similarity=["a", "b"], **options
    ),
    "game_shapley": lambda frame, **options: cohortsql.game_shapley(
        frame, game="cohort-variance", prediction="p", similarity=["a", "b"], **options
    ),
    "uniqueness_shapley": lambda frame, **options: cohortsql.uniqueness_shapley(
        frame, similarity=["a", "b"], **options
    ),
    "audit": lambda frame, **options: cohortsql.audit(
        frame, prediction="p", protected="g", similarity=["a", "b"], bootstrap=0, **options
    ),
    "df.cohort.shapley": lambda frame, **options: frame.cohort.shapley(
        prediction="p", similarity=["a", "b"], **options
    ),
    "df.cohort.audit": lambda frame, **options: frame.cohort.audit(
        prediction="p", protected="g", similarity=["a", "b"], bootstrap=0, **options
    ),
}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("mask", list(MASKS))
def test_a_boolean_mask_selects_its_rows_never_the_ids_0_and_1(call, mask):
    found = CALLS[call](FRAME, targets=MASKS[mask](FRAME))
    assert _ids(found) == SELECTED


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("call", ["cohort_shapley", "audit"])
def test_a_mask_with_an_id_column_is_refused_in_words_and_read_against_the_frame_on_df_cohort(call):
    frame = FRAME.with_columns(id=pl.Series([f"r{row}" for row in range(FRAME.height)]))
    with pytest.raises(CohortError, match="boolean mask.*id='id'"):
        CALLS[call](frame, id="id", targets=frame["a"] == 2)
    on_frame = CALLS[f"df.cohort.{call.removeprefix('cohort_')}"](frame, id="id", targets=frame["a"] == 2)
    assert _ids(on_frame) == [f"r{row}" for row in SELECTED]


@pytest.mark.parametrize("targets", [[True, False], np.ones(11, dtype=bool)])
def test_a_mask_of_the_wrong_length_is_refused_naming_both_lengths(targets):
    with pytest.raises(CohortError, match=f"mask of {len(targets)} values.*10 rows"):
        cohortsql.cohort_shapley(FRAME, prediction="p", similarity=["a"], targets=targets)
    with pytest.raises(CohortError, match=f"mask of {len(targets)} values.*10 rows"):
        FRAME.cohort.shapley(prediction="p", similarity=["a"], targets=targets)


def test_a_mask_of_no_rows_or_with_missing_values_is_refused():
    with pytest.raises(CohortError, match="selects no rows"):
        cohortsql.cohort_shapley(FRAME, prediction="p", similarity=["a"], targets=np.zeros(10, dtype=bool))
    with pytest.raises(CohortError, match="missing values"):
        cohortsql.cohort_shapley(FRAME, prediction="p", similarity=["a"], targets=pl.Series([True, None] + [False] * 8))


def test_include_refuses_a_mask():
    with pytest.raises(CohortError, match="include takes a list of ids, not a boolean mask"):
        cohortsql.cohort_shapley(
            FRAME, prediction="p", similarity=["a"], sample=3, seed=1, include=(FRAME["a"] == 2).to_numpy()
        )


@pytest.mark.parametrize("limit", ["-1GB", "0", "0GB", "-5MB", "-0.5GB", "20000000TB"])
def test_a_memory_limit_that_is_no_limit_is_refused_on_every_surface(limit, tmp_path):
    """DuckDB reads a negative size (or an exbibyte) as no limit at all: refused in words, through the
    configured engine, the command line's flag and a config file's key alike."""
    from typer.testing import CliRunner

    from cohortsql.cli import app

    with pytest.raises(CohortError, match="memory_limit .* not a"):
        cohortsql.cohort_shapley(FRAME, prediction="p", similarity=["a"], engine=cohortsql.DuckDB(memory_limit=limit))
    data = tmp_path / "frame.parquet"
    FRAME.write_parquet(data)
    flagged = CliRunner().invoke(
        app, ["shapley", str(data), "--prediction", "p", "--features", "a", "--memory-limit", limit]
    )
    assert flagged.exit_code == 2 and "not a" in flagged.output, flagged.output
    config = tmp_path / "run.toml"
    config.write_text(f'data = "{data}"\nprediction = "p"\nfeatures = "a"\nmemory_limit = "{limit}"\n')
    configured = CliRunner().invoke(app, ["shapley", "--config", str(config)])
    assert configured.exit_code == 2 and "not a" in configured.output, configured.output


@pytest.mark.parametrize("callers", ["3GB", "1000MB", "2.2GiB", "750MB"])
def test_the_callers_memory_limit_reads_the_same_after_any_number_of_calls(callers):
    """DuckDB shows a limit to one decimal and drops the rest ('3GB' reads '2.7 GiB'): setting the text it
    shows lowered the caller's limit at every call (2.5 GiB after two)."""
    import duckdb

    connection = duckdb.connect()
    connection.execute(f"SET memory_limit = '{callers}'")
    shown = connection.execute("SELECT current_setting('memory_limit')").fetchall()
    connection.register("frame", FRAME.to_arrow())
    for _ in range(3):
        cohortsql.cohort_shapley(
            "frame",
            prediction="p",
            similarity=["a"],
            connection=connection,
            engine=cohortsql.DuckDB(memory_limit="64MB"),
        )
        assert connection.execute("SELECT current_setting('memory_limit')").fetchall() == shown


@pytest.mark.parametrize("threshold", [np.float32(0.5), np.int64(1), np.float16(0.5), np.int8(0), 0.5])
def test_a_numpy_threshold_is_a_number_on_fairness_and_the_audit(threshold):
    table = cohortsql.datasets.redlining(rows=60)
    fair = cohortsql.fairness(table, prediction="denial", protected="group", threshold=threshold, bootstrap=0)
    plain = cohortsql.fairness(table, prediction="denial", protected="group", threshold=float(threshold), bootstrap=0)
    assert fair.groups.equals(plain.groups)
    found = cohortsql.audit(
        table, prediction="denial", protected="group", similarity=["zip"], threshold=threshold, bootstrap=0, null=0
    )
    assert found.fairness is not None and found.fairness.groups.equals(plain.groups)


@pytest.mark.parametrize("threshold", [np.bool_(True), True, np.float32("nan"), "0.5"])
def test_a_threshold_that_is_no_number_is_refused_naming_it(threshold):
    with pytest.raises(CohortError, match="threshold must be a finite number"):
        cohortsql.fairness(
            cohortsql.datasets.redlining(rows=60), prediction="denial", protected="group", threshold=threshold
        )


def test_malformed_attributions_are_one_error_never_a_panic():
    """A text value column, a result of several explained columns (a PanicException from polars, which
    `except Exception` does not catch) and rows missing are each one CohortError naming what to pass."""
    table = FRAME.with_row_index("id").with_columns(q=pl.col("p") * 2)
    explained = dict(prediction="p", similarity=["a", "b"], id="id")
    values = cohortsql.cohort_shapley(table, **explained)
    several = cohortsql.cohort_shapley(table, prediction=["p", "q"], similarity=["a", "b"], id="id")
    cases = {
        "holds String, not numbers": values.local.select("id", "feature", pl.lit("high").alias("value")),
        "several explained columns": several,
        "no value of feature": values.local.select("id", "feature", pl.col("shapley").alias("value")).head(3),
        "need columns id, feature and value": {"a": [1, 2]},
        "must be a cohortsql result or a table": object(),
    }
    for culprit, attributions in cases.items():
        try:
            cohortsql.insertion_deletion(table, **explained, attributions=attributions)
        except CohortError as error:
            assert culprit in str(error), (culprit, str(error))
        except BaseException as error:  # noqa: BLE001 (what must never escape: a panic is a BaseException)
            pytest.fail(f"{culprit}: {type(error).__name__} escaped: {error}")
        else:
            pytest.fail(f"{culprit}: accepted")


@pytest.mark.parametrize("call", ["cohort_shapley", "audit", "df.cohort.shapley", "game_shapley"])
def test_a_count_as_targets_needs_a_seed_never_a_silent_random_sample(call):
    """targets=3 is three random rows, not the row whose id is 3: without a seed (a different sample at
    every run) it is refused with both spellings; with one it runs, and says so."""
    with pytest.raises(CohortError, match=r"targets=3 would explain a random sample of 3 rows.*targets=\[3\]"):
        CALLS[call](FRAME, targets=np.int64(3))
    with pytest.warns(cohortsql.CohortWarning, match=r"targets=3 explains a random sample"):
        found = CALLS[call](FRAME, targets=3, seed=1)
    assert len(_ids(found)) == 3


@pytest.mark.parametrize("switch", [np.bool_(True), True])
def test_a_numpy_boolean_is_a_boolean(switch):
    found = cohortsql.cohort_shapley(FRAME, prediction="p", similarity=["a", "b"], interactions=switch)
    assert found.interactions is not None
    with pytest.raises(CohortError, match="interactions must be True or False, got 1"):
        cohortsql.cohort_shapley(FRAME, prediction="p", similarity=["a", "b"], interactions=1)


@pytest.mark.parametrize("text", ["false", "no", 0, 1])
def test_progress_is_a_boolean_or_none_never_text_or_a_number(text, capsys):
    """``progress="false"`` was read as true (any non-empty text is) and reported progress; it is now
    refused naming the option, as ``interactions`` is. numpy's booleans and None are what they are."""
    with pytest.raises(CohortError, match=f"progress must be True or False, got {text!r}"):
        cohortsql.cohort_shapley(FRAME, prediction="p", similarity=["a", "b"], progress=text)
    for quiet in (np.bool_(False), False, None):
        cohortsql.cohort_shapley(FRAME, prediction="p", similarity=["a", "b"], progress=quiet)
        assert capsys.readouterr().err == ""
    cohortsql.cohort_shapley(FRAME, prediction="p", similarity=["a", "b"], progress=np.bool_(True))
    assert "10/10 targets" in capsys.readouterr().err


NUMBERS = {
    "bootstrap": (3, {"seed": 1}),
    "confidence": (0.9, {"bootstrap": 3, "seed": 1}),
    "seed": (2, {"sample": 5}),
    "sample": (5, {"seed": 1}),
    "max_permutations": (10, {"method": "permutation", "seed": 1}),
    "tolerance": (0.5, {"method": "permutation", "seed": 1}),
    "anchored": (1, {}),
    "null": (2, {"null_features": ["a"], "seed": 1}),
}
"""Every numeric option of `cohort_shapley`, a value of it and what it needs beside it."""

NUMPY_KINDS = {int: (np.int64, np.int32, np.uint8), float: (np.float64, np.float32)}


@pytest.mark.parametrize("option", list(NUMBERS))
def test_every_numeric_option_takes_numpy_numbers_and_refuses_a_boolean(option):
    """The axis of an option's value type: a numpy number is the Python number it is (the same run,
    the same recorded settings), and a boolean is never a number (True is not 1)."""
    value, beside = NUMBERS[option]
    run = dict(prediction="p", similarity=["a", "b"], **beside)
    plain = cohortsql.cohort_shapley(FRAME, **run, **{option: value})
    for kind in NUMPY_KINDS[type(value)]:
        found = cohortsql.cohort_shapley(FRAME, **run, **{option: kind(value)})
        # to rounding: DuckDB's threads may add a sum's terms in another order when the machine is busy
        np.testing.assert_allclose(found.shapley, plain.shapley, rtol=1e-12, atol=1e-14)
        if float(kind(value)) == value:  # (a float32 of 0.9 is 0.8999999761581421: recorded as what it is)
            assert {k: v for k, v in found.settings.items() if k != "created"} == {
                k: v for k, v in plain.settings.items() if k != "created"
            }
    with pytest.raises(CohortError, match=option):
        cohortsql.cohort_shapley(FRAME, **run, **{option: True})
