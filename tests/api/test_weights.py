"""Case weights and several outcomes: integer weights are repeated rows, a weight of 0 is a dropped
row, bad weights are refused by name, and several outcomes in one pass equal separate runs."""

import warnings

import numpy as np
import polars as pl
import pytest

import cohortsql
from cohortsql.numeric.quantiles import weighted_quantile

WINDOWS = {"a": "exact", "b": "bins:3", "c": "quantile:0.2", "d": "range:0.15"}
"""Every kind whose parameters depend on the data (bins, quantiles, ranges): weights must enter them."""
EQUIVALENCES = {"a": "exact", "b": "bins:3"}
"""Kinds the lattice (grouping sets) path handles."""


def weighted_table(seed: int, rows: int = 36) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, rows)
    b = rng.uniform(0, 1, rows).round(2)
    c = rng.normal(size=rows).round(2)
    d = rng.uniform(0, 10, rows).round(1)
    y = a + 2 * b - c + rng.normal(scale=0.3, size=rows)
    return pl.DataFrame(
        {
            "id": np.arange(100, 100 + rows),
            "a": a,
            "b": b,
            "c": c,
            "d": d,
            "y": y,
            "z": (y > 1).astype(float),
            "w": rng.integers(0, 4, rows),
        }
    )


def repeated(table: pl.DataFrame) -> pl.DataFrame:
    """Every row repeated `w` times (rows of weight 0 gone), each copy with its own ``copy`` id."""
    copies = table.filter(pl.col("w") > 0).select(pl.all().repeat_by(pl.col("w")).explode())
    return copies.with_columns(copy=pl.int_range(pl.len(), dtype=pl.Int64))


def per_origin(result, copies: pl.DataFrame) -> pl.DataFrame:
    """A result on the repeated table, one row per (original id, feature) (copies agree)."""
    origin = copies.select(pl.col("copy").alias("id"), pl.col("id").alias("origin"))
    return (
        result.local.join(origin, on="id")
        .group_by("origin", "feature", maintain_order=True)
        .agg(pl.col("shapley").first(), pl.col("shapley_squared").first())
        .sort("origin", "feature")
    )


def quietly(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cohortsql.CohortWarning)
        return function(*args, **kwargs)


@pytest.mark.parametrize("seed", [1, 2])
def test_integer_weights_are_the_table_with_each_row_repeated(engine, seed):
    table = weighted_table(seed)
    copies = repeated(table)
    weighted = quietly(
        cohortsql.cohort_shapley, table, prediction="y", similarity=WINDOWS, id="id", weight="w", **engine.options
    )
    plain = quietly(cohortsql.cohort_shapley, copies, prediction="y", similarity=WINDOWS, id="copy", **engine.options)
    expected = per_origin(plain, copies)
    got = weighted.local.sort("id", "feature")
    assert got["id"].to_list() == expected["origin"].to_list()
    np.testing.assert_allclose(got["shapley"], expected["shapley"], atol=1e-12)
    np.testing.assert_allclose(got["shapley_squared"], expected["shapley_squared"], atol=1e-12)
    assert weighted.mean == pytest.approx(plain.mean, abs=1e-12)
    assert weighted.variance == pytest.approx(plain.variance, abs=1e-12)
    for column in ("shapley_effect", "share", "mean_abs_shapley"):
        np.testing.assert_allclose(weighted.global_[column], plain.global_[column], atol=1e-12)
    sizes = dict(zip(weighted.ids.to_list(), weighted.cohort_size))
    origin_of = dict(zip(copies["copy"].to_list(), copies["id"].to_list()))
    for copy, size in zip(plain.ids.to_list(), plain.cohort_size):
        assert sizes[origin_of[copy]] == pytest.approx(size)  # sizes are sums of weights


@pytest.mark.parametrize("path", ["pairwise", "grouping_sets"])
def test_integer_weights_are_repeated_rows_for_the_effects_on_both_paths(engine, path):
    table = weighted_table(3, rows=60)
    copies = repeated(table)
    options = dict(prediction=["y", "z"], similarity=EQUIVALENCES, path=path, **engine.options)
    weighted = quietly(cohortsql.shapley_effects, table, id="id", weight="w", **options)
    plain = quietly(cohortsql.shapley_effects, copies, id="copy", **options)
    assert weighted.effects.columns == plain.effects.columns
    for column in ("shapley_effect", "share"):
        np.testing.assert_allclose(weighted.effects[column], plain.effects[column], atol=1e-12)
    assert weighted["y"].explained == pytest.approx(plain["y"].explained, abs=1e-12)


def test_a_weight_of_zero_is_a_dropped_row(engine):
    table = weighted_table(4).with_columns(w=(pl.col("w") > 0).cast(pl.Int64))
    kept = table.filter(pl.col("w") == 1)
    options = dict(prediction="y", similarity=WINDOWS, id="id", **engine.options)
    weighted = quietly(cohortsql.cohort_shapley, table, weight="w", **options)
    dropped = quietly(cohortsql.cohort_shapley, kept.drop("w"), **options)
    assert weighted.ids.to_list() == dropped.ids.to_list()
    np.testing.assert_allclose(weighted.shapley, dropped.shapley, atol=1e-12)
    np.testing.assert_allclose(weighted.shapley_squared, dropped.shapley_squared, atol=1e-12)
    assert weighted.subjects == dropped.subjects == kept.height
    zero = table.filter(pl.col("w") == 0)["id"][0]
    with pytest.raises(cohortsql.CohortError, match=r"target ids not found .*rows of weight 0 are left out.*"):
        cohortsql.cohort_shapley(table, weight="w", targets=[zero], **options)


def test_weights_scale_freely_but_for_the_sizes(engine):
    table = weighted_table(5).with_columns(w=pl.col("w") + 1)
    similarity = {"a": "exact", "b": "abs:0.2", "c": "abs:0.5"}
    options = dict(prediction="y", similarity=similarity, id="id", **engine.options)
    once = quietly(cohortsql.cohort_shapley, table, weight="w", **options)
    scaled = quietly(cohortsql.cohort_shapley, table.with_columns(w=pl.col("w") * 2.5), weight="w", **options)
    np.testing.assert_allclose(scaled.shapley, once.shapley, atol=1e-12)
    np.testing.assert_allclose(scaled.cohort_size, 2.5 * once.cohort_size)


@pytest.mark.parametrize(
    "weights, message",
    [
        ([1.0, -1.0, 1.0], r"weight column 'w' has 1 negative, NULL, NaN or infinite values \(the first at id = 2\)"),
        ([1.0, None, 1.0], r"weight column 'w' has 1 negative, NULL, NaN or infinite values \(the first at id = 2\)"),
        ([1.0, 1.0, float("nan")], r"weight column 'w' has 1 negative.* \(the first at id = 3\)"),
        ([float("inf"), 1.0, 1.0], r"weight column 'w' has 1 negative.* \(the first at id = 1\)"),
        ([0.0, 0.0, 0.0], r"weight column 'w' sums to 0"),
    ],
)
def test_bad_weights_are_refused_by_name(engine, weights, message):
    table = pl.DataFrame({"id": [1, 2, 3], "x": [1, 2, 3], "y": [0.5, 1.5, 2.0], "w": weights})
    with pytest.raises(cohortsql.CohortError, match=message):
        cohortsql.cohort_shapley(table, prediction="y", similarity=["x"], id="id", weight="w", **engine.options)


@pytest.mark.parametrize(
    "weight, message",
    [
        ("label", r"weight column 'label' holds text values; weights must be numbers"),
        ("x", r"feature 'x' is the weight column"),
        ("y", r"weight column 'y' is explained \(a prediction\)"),
        ("missing", r"weight column 'missing' is not in the data"),
    ],
)
def test_a_weight_column_must_be_a_column_of_numbers_of_its_own(weight, message):
    table = pl.DataFrame({"x": [1, 2, 3], "y": [0.5, 1.5, 2.0], "label": ["a", "b", "c"]})
    with pytest.raises(cohortsql.CohortError, match=message):
        cohortsql.cohort_shapley(table, prediction="y", similarity=["x"], weight=weight)


@pytest.mark.parametrize("seed", range(30))
def test_weighted_quantiles_are_quantiles_of_the_repeated_values(seed):
    rng = np.random.default_rng(seed)
    values = np.sort(rng.integers(0, 20, rng.integers(1, 12)).astype(float))
    weights = rng.integers(1, 5, len(values)).astype(float)
    upto = np.cumsum(weights)
    rows = [
        {"value": value, "before": end - weight, "upto": end, "total": upto[-1]}
        for value, weight, end in zip(values, weights, upto)
    ]
    for probability in (0.0, 0.05, 0.3, 0.5, 0.95, 1.0):
        expected = np.quantile(np.repeat(values, weights.astype(int)), probability)
        assert weighted_quantile(rows, probability) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("path", ["pairwise", "grouping_sets"])
def test_several_outcomes_in_one_pass_equal_separate_runs(engine, path):
    table = weighted_table(6, rows=48)
    options = dict(similarity=EQUIVALENCES, id="id", weight="w", path=path, **engine.options)
    together = quietly(cohortsql.cohort_shapley, table, prediction=["y", "z"], **options)
    assert together.outcomes == ("y", "z")
    for outcome in ("y", "z"):
        alone = quietly(cohortsql.cohort_shapley, table, prediction=outcome, **options)
        one = together[outcome]
        np.testing.assert_allclose(one.shapley, alone.shapley, atol=1e-12)
        np.testing.assert_allclose(one.shapley_squared, alone.shapley_squared, atol=1e-12)
        np.testing.assert_allclose(one.cohort_mean, alone.cohort_mean, atol=1e-12)
        assert one.mean == pytest.approx(alone.mean, abs=1e-12)
        assert one.local.drop("shapley", "shapley_squared").equals(alone.local.drop("shapley", "shapley_squared"))
    stacked = together.local
    assert stacked.columns[0] == "outcome"
    assert stacked.height == 2 * together["y"].local.height
    assert stacked.filter(pl.col("outcome") == "z").drop("outcome").equals(together["z"].local)
    assert together.global_["outcome"].unique(maintain_order=True).to_list() == ["y", "z"]
    assert together.by("a")["outcome"].unique(maintain_order=True).to_list() == ["y", "z"]


def test_several_outcomes_with_the_permutation_method_equal_separate_seeded_runs():
    table = weighted_table(7, rows=40)
    similarity = {"a": "exact", "b": "abs:0.2", "c": "abs:0.4", "d": "abs:2"}
    options = dict(similarity=similarity, id="id", method="permutation", seed=11, max_permutations=20)
    together = quietly(cohortsql.cohort_shapley, table, prediction=["y", "z"], **options)
    for outcome in ("y", "z"):
        alone = quietly(cohortsql.cohort_shapley, table, prediction=outcome, **options)
        np.testing.assert_allclose(together[outcome].shapley, alone.shapley, atol=1e-12)
        np.testing.assert_allclose(together[outcome].shapley_se, alone.shapley_se, atol=1e-12)


def test_several_outcomes_for_the_effects_equal_separate_runs(engine):
    table = weighted_table(8, rows=50)
    options = dict(similarity=WINDOWS, id="id", weight="w", **engine.options)
    together = quietly(cohortsql.shapley_effects, table, prediction=["z", "y"], **options)
    assert together.effects["outcome"].unique(maintain_order=True).to_list() == ["z", "y"]
    for outcome in ("y", "z"):
        alone = quietly(cohortsql.shapley_effects, table, prediction=outcome, **options)
        for column in ("shapley_effect", "shapley_effect_se", "share"):
            np.testing.assert_allclose(together[outcome].effects[column], alone.effects[column], atol=1e-12)


def test_outcomes_must_be_distinct_columns():
    table = weighted_table(9)
    with pytest.raises(cohortsql.CohortError, match="prediction column 'y' is listed twice"):
        cohortsql.cohort_shapley(table, prediction=["y", "y"], similarity=["a"])
    with pytest.raises(cohortsql.CohortError, match="prediction must be the name of a column"):
        cohortsql.cohort_shapley(table, prediction=[], similarity=["a"])
    with pytest.raises(cohortsql.CohortError, match="'q' is not an explained column here; they are: y, z"):
        quietly(cohortsql.cohort_shapley, table, prediction=["y", "z"], similarity=["a"])["q"]
