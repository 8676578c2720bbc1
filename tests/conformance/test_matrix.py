"""The conformance matrix: every case of the hostile corpus (`corpus.py`) through every surface
(`surfaces.py`), each held to one expectation: the brute-force values (`oracle.py`), or one
`CohortError` naming the culprit. The audit surface is held to its groups as well: a level is a value
as the cohorts compare it (NaN missing, -0.0 equal to 0.0, the text 'null' apart from NULL), and every
group has a label of its own."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from corpus import CASE_IDS, CASES, ID, Case
from oracle import (
    assert_values_equal,
    brute_force,
    brute_force_curves,
    brute_force_fairness,
    brute_force_integrated,
    brute_force_variance,
    prediction_scale,
)
from surfaces import SURFACES, Context

import cohortsql
from cohortsql.errors import CohortError


def brute_force_included(case: Case, kinds: dict[str, str]) -> pl.DataFrame:
    """The brute-force values of the ids the include surface asks for."""
    from surfaces import INCLUDED

    return brute_force(case, kinds).filter(pl.col(ID).is_in(case.frame()[ID].head(INCLUDED).to_list()))


ORACLES = {
    "include": brute_force_included,
    "integrated": brute_force_integrated,
    "insertion_deletion": brute_force_curves,
    "fairness": brute_force_fairness,
    "game": brute_force_variance,
    "game_cli": brute_force_variance,
}
"""Surfaces whose values are not cohort Shapley's own: the definition each is held to."""

SQUARED = ("game", "game_cli")
"""Surfaces whose values are in the prediction's squared units (variances): compared at its scale squared."""

COMPARES_NOTHING = ("fairness",)
"""Surfaces that compare no rows (their oracles read no similarity kinds)."""


def resolved_kinds(case: Case) -> dict[str, str]:
    """Each feature's kind: the case's, or for a default the one the library chose (its choice is
    tested elsewhere; the matrix holds the values to it)."""
    if all(kind is not None for kind in case.similarity.values()):
        return dict(case.similarity)  # type: ignore[arg-type]
    found = cohortsql.cohort_shapley(case.frame(), prediction=case.prediction, similarity=case.similarity, id=ID)
    return {feature: str(found.kinds[feature]) for feature in found.features}


_EXPECTED: dict[tuple[str, object], pl.DataFrame] = {}
"""Each case's oracle values, by case and oracle: every surface of a case reads the same ones (computed
once per worker, not once per surface)."""


def expected_values(case: Case, surface: str) -> pl.DataFrame:
    oracle = ORACLES.get(surface, brute_force)
    key = (case.name, oracle)
    if key not in _EXPECTED:
        _EXPECTED[key] = oracle(case, {} if surface in COMPARES_NOTHING else resolved_kinds(case))
    return _EXPECTED[key]


@pytest.mark.parametrize("surface", list(SURFACES))
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
# no case of any size leaks numpy's "invalid value" or "divide by zero" to the user
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_every_case_on_every_surface(case: Case, surface: str, tmp_path, request):
    if surface in case.not_on:
        pytest.skip(case.not_on[surface])
    context = Context(tmp_path, request)
    run = SURFACES[surface]
    culprit = None if surface in case.computed_on else case.refused or case.refused_on.get(surface)
    if culprit is not None:
        with pytest.raises(CohortError) as raised:
            run(case, context)
        assert culprit in str(raised.value), str(raised.value)
        return
    found = run(case, context)
    expected = expected_values(case, surface)
    scale = prediction_scale(case)
    assert_values_equal(found, expected, scale**2 if surface in SQUARED else scale)
    if surface == "audit":
        check_groups(context.audit, case, expected)  # type: ignore[attr-defined]


def level_key(value: object) -> object:
    """A protected attribute's value as its group's key: NaN is missing, -0.0 is 0.0."""
    if isinstance(value, float):
        return None if math.isnan(value) else value + 0.0
    return value


def level_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def check_groups(found, case: Case, expected: pl.DataFrame) -> None:
    """The audit's groups of the case's attribute against the values grouped by brute force."""
    frame = case.frame()
    attribute = case.attribute
    keys = [level_key(value) for value in frame[attribute].to_list()]
    phi = expected.filter(pl.col("feature") == attribute).sort(ID)["shapley"].to_numpy()
    groups = found.groups.filter(pl.col("protected") == attribute)
    assert groups["label"].n_unique() == groups.height, groups["label"].to_list()  # every group told apart
    assert groups["count"].sum() == groups["rows"].sum() == frame.height
    y = frame[case.prediction].cast(pl.Float64).to_numpy()
    missing = [index for index, key in enumerate(keys) if key is None]
    missing_rows = groups.filter(pl.col("level").is_null())
    assert missing_rows.height == (1 if missing else 0)
    if missing:
        assert missing_rows["count"][0] == len(missing)
        assert missing_rows["value"][0] == pytest.approx(phi[missing].mean(), abs=1e-9 * prediction_scale(case))
    if groups["grouping"][0] != "level":
        return
    members: dict[object, list[int]] = {}
    for index, key in enumerate(keys):
        if key is not None:
            members.setdefault(key, []).append(index)
    assert groups.height == len(members) + (1 if missing else 0)
    for key, rows in members.items():
        row = groups.filter(pl.col("level") == level_text(key))
        assert row.height == 1, (key, groups["level"].to_list())
        assert row["count"][0] == row["rows"][0] == len(rows)
        assert row["value"][0] == pytest.approx(np.mean(phi[rows]), abs=1e-9 * prediction_scale(case))
        # the gap over every row: the group's mean prediction less the mean
        assert row["gap"][0] == pytest.approx(np.mean(y[rows]) - np.mean(y), abs=1e-9 * prediction_scale(case))
