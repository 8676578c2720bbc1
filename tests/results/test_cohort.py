"""The result of cohort Shapley as an analyst reads it: diagnostics of the cohorts the values rest on,
reasons in words, shares of the targets' own spread, and squared values that may be negative."""

import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import cohortsql


def test_diagnostics_on_a_hand_built_table():
    """Targets 0-3; a: 0,0,0,1; b: 0,1,2,3 (all distinct) -> cohorts on {a, b} are single rows."""
    frame = pl.DataFrame({"a": [0, 0, 0, 1] * 25, "b": list(range(100)), "y": np.arange(100.0)})
    with pytest.warns(cohortsql.CohortWarning, match="100% of the targets end in a cohort of one row"):
        result = cohortsql.cohort_shapley(frame, prediction="y", similarity={"a": "exact", "b": "exact"})
    checks = result.diagnostics
    assert checks["singleton_share"] == 1.0 and checks["median_cohort_size"] == 1
    assert checks["narrow_features"] == {"a": 0.0, "b": 1.0}  # b alone keeps 1 row = 1% of 100
    wider = cohortsql.cohort_shapley(frame, prediction="y", similarity={"a": "exact", "b": "abs:10"})
    assert wider.diagnostics["singleton_share"] == 0.0
    assert wider.diagnostics["median_cohort_size"] == np.median(wider.cohort_size)
    effects = cohortsql.shapley_effects(frame, prediction="y", similarity={"a": "exact", "b": "abs:10"})
    assert effects.diagnostics["median_cohort_size"] == wider.diagnostics["median_cohort_size"]
    assert effects.diagnostics["narrow_features"] == wider.diagnostics["narrow_features"]


def test_a_window_that_keeps_nearly_the_whole_table_is_flagged():
    """A lognormal income under range:0.1 kept most of the table for most targets and got a 3% share;
    the diagnostics now say so, with a warning that names the fix."""
    rng = np.random.default_rng(3)
    income = rng.lognormal(mean=10, sigma=1.2, size=2000)
    age = rng.uniform(20, 70, 2000)
    frame = pl.DataFrame({"income": income, "age": age, "y": np.log(income) + age / 50})
    warned = (
        r"similarity on 'income' alone \(range:0.1\) keeps over 90% of the table.*narrow it, e.g. income=range:0.05"
    )
    with pytest.warns(cohortsql.CohortWarning, match=warned):
        broad = cohortsql.cohort_shapley(
            frame, prediction="y", similarity={"income": "range:0.1", "age": "range:0.1"}, sample=200, seed=1
        )
    assert broad.diagnostics["broad_features"]["income"] > 0.5 and broad.diagnostics["broad_features"]["age"] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", cohortsql.CohortWarning)
        fitted = cohortsql.cohort_shapley(
            frame, prediction="y", similarity={"income": "quantile:0.1", "age": "range:0.1"}, sample=200, seed=1
        )
    assert fitted.diagnostics["broad_features"]["income"] == 0


def test_the_advice_fits_the_kind_and_a_rare_level_of_an_exact_feature_is_not_flagged():
    """A yes/no feature whose 'no' holds 95% of the rows was told to "narrow its window (e.g.
    quantile:0.1)", which no exact comparison has, while ranking first; windows get a narrower window
    of their own kind, bins more bins, a SQL predicate a stricter one."""
    rng = np.random.default_rng(4)
    rare = rng.random(2000) < 0.05
    income = rng.lognormal(mean=10, sigma=1.2, size=2000)
    frame = pl.DataFrame(
        {"insured": np.where(rare, "yes", "no"), "income": income, "y": rare * 1.0 + np.log(income) / 20}
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", cohortsql.CohortWarning)
        result = cohortsql.cohort_shapley(
            frame, prediction="y", similarity={"insured": "exact", "income": "quantile:0.9"}, sample=100, seed=2
        )
    messages = [str(warning.message) for warning in caught]
    assert result.diagnostics["broad_features"]["insured"] > 0.9  # its common level keeps 95% of the table
    assert not any("'insured'" in message for message in messages), messages
    assert any("'income' alone (quantile:0.9)" in m and "e.g. income=quantile:0.45" in m for m in messages), messages
    for kind, advice in (("bins:2", "e.g. income=bins:4"), ("sql:abs(s.income - t.income) < 1e9", "stricter")):
        with pytest.warns(cohortsql.CohortWarning, match=advice):
            cohortsql.cohort_shapley(frame, prediction="y", similarity={"income": kind}, sample=50, seed=2)


def test_diagnostics_of_the_lattice_walk_equal_the_pairwise_ones():
    rng = np.random.default_rng(5)
    frame = pl.DataFrame({"a": rng.integers(0, 3, 300), "b": rng.integers(0, 40, 300), "y": rng.normal(size=300)})
    similarity = {"a": "exact", "b": "bins:20"}
    walked = cohortsql.shapley_effects(frame, prediction="y", similarity=similarity, path="grouping_sets")
    joined = cohortsql.shapley_effects(frame, prediction="y", similarity=similarity, path="pairwise")
    assert walked.path == "grouping_sets"
    for name in ("narrow_features", "broad_features"):
        assert walked.diagnostics[name] == pytest.approx(joined.diagnostics[name])
    for name in ("singleton_share", "median_cohort_size", "targets", "subjects"):
        assert walked.diagnostics[name] == pytest.approx(joined.diagnostics[name])


def test_reasons_and_the_long_table_answer_why():
    frame = pl.DataFrame(
        {"sex": ["m", "f", "m", "f"] * 10, "age": [20.0, 30.0, 40.0, 50.0] * 10, "y": [1.0, 0.0, 1.0, 0.5] * 10}
    )
    result = cohortsql.cohort_shapley(frame, prediction="y", similarity={"sex": "exact", "age": "abs:5"}, targets=[0])
    local = result.local
    assert local["feature_value"].to_list() == ["m", "20.0"] and local["prediction"].to_list() == [1.0, 1.0]
    reasons = result.reasons(2)
    assert reasons.columns == ["id", "prediction", "rank", "feature", "feature_value", "shapley", "reason"]
    top = reasons.row(0, named=True)
    assert top["rank"] == 1 and abs(top["shapley"]) == np.abs(result.shapley[0]).max()
    direction = "raised" if top["shapley"] > 0 else "lowered"
    assert (
        top["reason"]
        == f"{top['feature']} = {top['feature_value']} {direction} the cohort mean by {abs(top['shapley']):.3g}"
    )
    with pytest.raises(cohortsql.CohortError, match="k must be a whole number"):
        result.reasons(0)


def test_global_shares_are_of_the_targets_own_spread():
    rng = np.random.default_rng(7)
    frame = pl.DataFrame({"a": rng.integers(0, 4, 400), "b": rng.uniform(size=400)})
    frame = frame.with_columns(y=pl.col("a") * 2.0 + pl.col("b"))
    every = cohortsql.cohort_shapley(frame, prediction="y", similarity={"a": "exact", "b": "abs:0.05"})
    assert every.target_variance == pytest.approx(every.variance)
    subset = cohortsql.cohort_shapley(
        frame, prediction="y", similarity={"a": "exact", "b": "abs:0.05"}, targets="a = 3"
    )
    shares = subset.global_["share"]
    assert shares.sum() == pytest.approx(
        float(np.mean((subset.cohort_mean - subset.mean) ** 2)) / subset.target_variance
    )
    assert 0 < shares.sum() <= 1.0 + 1e-9


def test_squared_values_can_be_negative_and_still_add_up():
    """Adding a feature that moves the cohort mean back towards the overall mean lowers v^2 (paper, Appendix 4)."""
    frame = pl.DataFrame({"a": [1, 1, 0, 0], "b": [1, 0, 1, 0], "y": [1.0, 3.0, 0.0, 0.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cohortsql.CohortWarning)
        result = cohortsql.cohort_shapley(frame, prediction="y", similarity=["a", "b"], targets=[0])
    assert result.shapley_squared.min() < 0
    assert result.shapley_squared.sum() == pytest.approx(result.totals["value_squared"][0])


def test_effects_say_why_their_standard_errors_are_zero():
    """Python's effects showed shapley_effect_se = 0.0 when every row was a target, with no word (the
    command line and the report explained it)."""
    loans = cohortsql.datasets.loans()
    every_row = cohortsql.shapley_effects(loans, prediction="score", similarity=["income", "region"])
    assert (every_row.effects["shapley_effect_se"] == 0).all()
    assert "(se: the error of explaining a sample of targets, none here as every row is a target)" in repr(every_row)
    sampled = cohortsql.shapley_effects(loans, prediction="score", similarity=["income", "region"], sample=6, seed=1)
    assert (sampled.effects["shapley_effect_se"] > 0).all() and "none here" not in repr(sampled)


def test_values_shown_to_people_are_rounded_and_tables_keep_every_digit(tmp_path):
    """unemp = 10.600000381469728 (a float32 value read as a double) in the reasons, the report's
    waterfall and the figure's labels; shown now as 10.6, while `local` keeps the value as it is."""
    from cohortsql import plot
    from cohortsql.report import ReportTables, report_html

    rng = np.random.default_rng(6)
    unemp = np.float32(rng.integers(20, 140, 300) / 10).astype(np.float64)
    frame = pl.DataFrame({"id": np.arange(300), "unemp": unemp, "n": rng.integers(0, 5, 300)})
    frame = frame.with_columns(y=pl.col("unemp") / 10 + pl.col("n") / 5)
    result = cohortsql.cohort_shapley(frame, prediction="y", similarity=["unemp", "n"], id="id")
    target = int(np.flatnonzero(np.round(unemp, 1) != unemp)[0])
    raw = repr(float(unemp[target]))
    shown = f"{float(np.round(unemp[target], 1)):g}"
    assert len(raw) > 10 and result.local.filter(pl.col("id") == target)["feature_value"][0] == raw
    reasons = result.reasons(2).filter(pl.col("id") == target)["reason"].to_list()
    assert any(text.startswith(f"unemp = {shown} ") for text in reasons) and not any(raw in text for text in reasons)
    html = report_html(ReportTables.of_result(result), targets=[target])
    assert f"unemp = {shown}<" in html and raw not in html
    labels = [label.get_text() for label in plot.target(result, target).axes[0].get_yticklabels()]
    assert f"unemp = {shown}" in labels
    assert result.reasons(2).filter(pl.col("feature") == "n")["reason"].str.contains(r"^n = \d ").all()


def test_the_advice_to_narrow_a_window_converges():
    """chas (0 or 1, 93% zeros) under the paper's quantile:0.1 was told "narrow it, e.g. quantile:0.05",
    then quantile:0.025, forever: a window narrower than the gap between whole numbers compares them
    exactly already, and no narrower one changes that. Wherever advice is given, following it a few
    times ends the warning; the shipped paper config gives no advice that cannot be followed."""
    boston = pl.read_parquet(Path(__file__).parents[2] / "examples" / "data" / "boston_predictions.parquet")
    features = [name for name in boston.columns if name not in ("medv", "prediction")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", cohortsql.CohortWarning)
        cohortsql.cohort_shapley(boston, prediction="prediction", similarity=dict.fromkeys(features, "quantile:0.1"))
    assert not [warning for warning in caught if "narrow it" in str(warning.message)]
    rng = np.random.default_rng(2)
    skewed = pl.DataFrame({"income": np.exp(rng.normal(size=400) * 2), "age": rng.uniform(20, 70, 400)})
    skewed = skewed.with_columns(y=pl.col("income").log() + pl.col("age") / 50)
    kinds = {"income": "range:0.1", "age": "range:0.1"}
    for _ in range(8):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", cohortsql.CohortWarning)
            cohortsql.cohort_shapley(skewed, prediction="y", similarity=kinds, sample=100, seed=1)
        advice = [str(warning.message) for warning in caught if "narrow it, e.g. income=" in str(warning.message)]
        if not advice:
            break
        kinds["income"] = advice[0].split("income=")[1].split()[0]
    else:
        pytest.fail(f"the advice did not converge: {kinds}")
    assert kinds["income"] != "range:0.1"  # advice was given, and followed


def test_a_range_beyond_the_whole_range_is_refused_naming_the_unit():
    with pytest.raises(cohortsql.CohortError, match=r"range:10 is 10 times the feature's whole range"):
        cohortsql.cohort_shapley(
            pl.DataFrame({"x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 3.0]}), prediction="y", similarity={"x": "range:10"}
        )


def test_settings_show_no_float_noise():
    """age's window read 4.6000000000000005 and rm's 0.22735000000000005: twelve significant digits."""
    boston = pl.read_parquet(Path(__file__).parents[2] / "examples" / "data" / "boston_predictions.parquet")
    similarity = dict.fromkeys(["age", "rm", "lstat", "crim", "dis"], "quantile:0.1")
    result = cohortsql.cohort_shapley(boston, prediction="prediction", similarity=similarity, targets=[0])
    windows = result.settings["windows"]
    assert windows["rm"] == 0.22735 and all(len(repr(width)) <= 14 for width in windows.values()), windows
