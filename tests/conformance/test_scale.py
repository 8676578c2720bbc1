"""Scale invariance, as a property: multiplying the explained column by c = 1e-9 or 1e9 multiplies
every value by c (squared ones by c^2), and changes no ranking, no reason's order, no warning and no
word: nothing in cohortsql cuts, rounds or ties at an absolute size."""

from __future__ import annotations

import re
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cohortsql

SCALES = [1e-9, 1e9]


@st.composite
def tables(draw) -> pl.DataFrame:
    rows = draw(st.integers(6, 30))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    frame = pl.DataFrame(
        {
            "id": np.arange(rows),
            "a": rng.integers(0, draw(st.integers(1, 4)), rows),
            "b": rng.normal(size=rows).round(1),
            "c": rng.choice(["x", "y", "z"], rows),
        }
    )
    weights = rng.normal(size=3)
    y = frame["a"].to_numpy() * weights[0] + frame["b"].to_numpy() * weights[1] + rng.normal(scale=0.3, size=rows)
    return frame.with_columns(p=pl.Series(y))


def said(lines: list[str]) -> list[str]:
    """What lines say, their numbers aside (those carry the scale)."""
    return [re.sub(r"[+-]?\d[\d,.]*(e[+-]?\d+)?%?", "#", line) for line in lines]


def explained(frame: pl.DataFrame) -> tuple[cohortsql.CohortShapleyResult, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", cohortsql.CohortWarning)
        result = cohortsql.cohort_shapley(
            frame, prediction="p", similarity={"a": "exact", "b": "abs:0.3", "c": "exact"}, id="id"
        )
    return result, sorted(str(warning.message) for warning in caught)


@pytest.mark.parametrize("scale", SCALES)
@settings(max_examples=15, deadline=None)
@given(frame=tables())
def test_every_value_scales_and_nothing_else_changes(frame, scale):
    plain, plain_warnings = explained(frame)
    scaled, scaled_warnings = explained(frame.with_columns(p=pl.col("p") * scale))
    size = max(float(np.abs(plain.shapley).max()), 1e-300)
    np.testing.assert_allclose(scaled.shapley / scale, plain.shapley, rtol=1e-9, atol=1e-12 * size)
    np.testing.assert_allclose(
        scaled.shapley_squared / scale**2, plain.shapley_squared, rtol=1e-9, atol=1e-12 * size**2
    )
    assert scaled.global_["feature"].to_list() == plain.global_["feature"].to_list()
    assert scaled.reasons(3)["feature"].to_list() == plain.reasons(3)["feature"].to_list()
    assert said(scaled.reasons(3)["reason"].to_list()) == said(plain.reasons(3)["reason"].to_list())
    assert said(scaled_warnings) == said(plain_warnings)
    effects = cohortsql.shapley_effects(frame, prediction="p", similarity=["a", "b", "c"], id="id")
    scaled_effects = cohortsql.shapley_effects(
        frame.with_columns(p=pl.col("p") * scale), prediction="p", similarity=["a", "b", "c"], id="id"
    )
    assert scaled_effects.effects["feature"].to_list() == effects.effects["feature"].to_list()
    np.testing.assert_allclose(scaled_effects.effects["share"], effects.effects["share"], rtol=1e-9, atol=1e-12)


EXTREME_SCALES = [1e-300, 1e-170, 1e-160, 1e-130, 1e130, 1e150, 1e160, 1e300]
"""The scale axis's ends: where a column's squares still fit a DOUBLE (1e-130, 1e130, 1e150) every
value scales; beyond, the column is refused with the factor that rescales it, never explained with
effects of 0 and shares of NaN."""

CALLS = {
    "cohort_shapley": lambda frame: cohortsql.cohort_shapley(
        frame, prediction="p", similarity={"a": "exact", "b": "abs:0.3", "c": "exact"}, id="id"
    ),
    "shapley_effects": lambda frame: cohortsql.shapley_effects(
        frame, prediction="p", similarity={"a": "exact", "b": "abs:0.3", "c": "exact"}, id="id"
    ),
    "integrated": lambda frame: cohortsql.shapley_effects(
        frame, prediction="p", similarity={"a": "exact", "b": "abs:0.3", "c": "exact"}, id="id", method="integrated"
    ),
    "cohort-variance": lambda frame: cohortsql.game_shapley(
        frame, game="cohort-variance", prediction="p", similarity={"a": "exact", "b": "abs:0.3", "c": "exact"}, id="id"
    ),
}


def _numbers(result) -> tuple[np.ndarray, np.ndarray, int]:
    """What scales in a result (its values, or its effects), what must not (shares), and the power of the scale."""
    if hasattr(result, "effects"):
        table = result.effects.sort("feature")
        return table["shapley_effect"].to_numpy(), table["share"].to_numpy(), 2
    if getattr(result, "shapley_squared", None) is not None:
        return np.concatenate([result.shapley.ravel(), result.shapley_squared.ravel()]), result.shapley.ravel(), 1
    return result.shapley.ravel(), np.zeros(0), 2


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("scale", EXTREME_SCALES)
def test_at_the_ends_of_the_scale_values_scale_or_the_column_is_refused_with_its_factor(call, scale):
    rng = np.random.default_rng(3)
    frame = pl.DataFrame(
        {
            "id": np.arange(40),
            "a": rng.integers(0, 3, 40),
            "b": rng.normal(size=40).round(1),
            "c": rng.choice(["x", "y"], 40),
        }
    ).with_columns(p=pl.col("a") * 0.7 + pl.col("b") + pl.Series(rng.normal(scale=0.3, size=40)))
    plain = CALLS[call](frame)
    spread = float((frame["p"] - frame["p"][0]).abs().max())
    magnitude = np.log10(spread) + np.log10(scale)
    representable = -280 <= 2 * magnitude and 2 * magnitude + np.log10(40) < 308
    if not representable:
        factor = f"1e{-int(np.floor(magnitude)):+d}"
        with pytest.raises(cohortsql.CohortError, match=rf"'p'.*multiply 'p' by {re.escape(factor)}"):
            CALLS[call](frame.with_columns(p=pl.col("p") * scale))
        return
    scaled = CALLS[call](frame.with_columns(p=pl.col("p") * scale))
    (values, unscaled, power), (found, same, _) = _numbers(plain), _numbers(scaled)
    if call == "cohort_shapley":  # values scale with c, squared values with c^2
        d = plain.shapley.size
        np.testing.assert_allclose(found[:d] / scale, values[:d], rtol=1e-9, atol=1e-12 * np.abs(values[:d]).max())
        np.testing.assert_allclose(found[d:] / scale**2, values[d:], rtol=1e-9, atol=1e-12 * np.abs(values[d:]).max())
        return
    np.testing.assert_allclose(found / scale**power, values, rtol=1e-9, atol=1e-12 * np.abs(values).max())
    np.testing.assert_allclose(same, unscaled, rtol=1e-9, atol=1e-12)
