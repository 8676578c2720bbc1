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
