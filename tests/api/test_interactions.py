"""cohort_shapley(interactions=True) against the definition of the Shapley interaction index, by brute
force over every subset, on every engine; and the identities that tie interactions to the values."""

import itertools

import numpy as np
import polars as pl
import pytest
import reference

import cohortsql

CASES = {
    # every kind an equivalence: effects over every row take the grouping-sets path
    "cells": ({"a": "exact", "b": "bins:3"}, {"a": reference.exact(), "b": reference.bins(3)}),
    "equivalences": (
        {"a": "exact", "b": "bins:3", "c": "quantile:0.25", "d": "sql:s.d - t.d BETWEEN -0.2 AND 0.35"},
        {
            "a": reference.exact(),
            "b": reference.bins(3),
            "c": reference.quantile_window(0.25),
            "d": reference.custom(lambda s, t: -0.2 <= s - t <= 0.35),
        },
    ),
    "windows": (
        {"a": "abs:1", "b": "relative:0.4", "c": "range:0.2", "d": "quantile:0.3:0.2"},
        {
            "a": reference.absolute(1),
            "b": reference.relative(0.4),
            "c": reference.range_window(0.2),
            "d": reference.quantile_window(0.3, 0.2),
        },
    ),
}


def table(n=30, seed=4):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n).astype(float)
    b, c, d = rng.uniform(0, 1, n), rng.uniform(0, 1, n), rng.uniform(-1, 1, n)
    # y has a pure a x b interaction, so that the off-diagonal values are not all near zero
    y = a * (b > 0.5) + c + rng.normal(scale=0.1, size=n)
    return pl.DataFrame({"a": a, "b": b, "c": c, "d": d, "y": y})


@pytest.mark.parametrize("case", sorted(CASES))
def test_interactions_match_the_definition_by_brute_force(case, engine):
    frame = table()
    kinds, python = CASES[case]
    result = cohortsql.cohort_shapley(
        frame, prediction="y", similarity=kinds, interactions=True, targets=[0, 3, 7, 11], **engine.options
    )
    expected = reference.cohort_interactions(
        [frame[name].to_list() for name in kinds], list(python.values()), frame["y"].to_list(), [0, 3, 7, 11]
    )
    np.testing.assert_allclose(result.interactions, expected, atol=1e-12)
    assert np.abs(expected[:, 0, 1]).max() > 0.01  # a and b interact


def test_interactions_add_up_to_the_values_for_every_column_weight_and_repeated_target():
    """Rows add up to phi, matrices to cohort mean - mean; targets that share predictor values (one
    distinct target fanned out) and several explained columns with case weights keep that."""
    frame = table(60).with_columns(
        a2=pl.col("a"), z=pl.col("y") ** 2, w=pl.Series(np.arange(60) % 4 + 0.5), b=(pl.col("b") * 4).round()
    )
    similarity = {"a": "exact", "b": "exact", "c": "abs:0.1", "a2": "exact"}
    results = cohortsql.cohort_shapley(
        frame, prediction=["y", "z"], similarity=similarity, weight="w", interactions=True, sample=25, seed=1
    )
    for outcome in ("y", "z"):
        result = results[outcome]
        assert result.interactions.shape == (25, 4, 4)
        np.testing.assert_allclose(result.interactions.sum(axis=2), result.shapley, atol=1e-12)
        np.testing.assert_allclose(result.interactions.sum(axis=(1, 2)), result.totals["value"], atol=1e-12)
        np.testing.assert_allclose(result.interactions, result.interactions.transpose(0, 2, 1), atol=1e-15)
        # a2 is a copy of a: the pair is symmetric, each gets the same interaction with every other feature
        np.testing.assert_allclose(result.interactions[:, 0, 1], result.interactions[:, 3, 1], atol=1e-12)


def test_the_interaction_table_is_the_array_in_long_form():
    frame = table()
    result = cohortsql.cohort_shapley(
        frame, prediction="y", similarity={"a": "exact", "b": "bins:3"}, interactions=True, targets=[2, 5]
    )
    long = result.interaction_table
    assert long.columns == ["id", "feature", "other", "interaction"]
    assert long.height == 2 * 2 * 2
    row = long.filter((pl.col("id") == 5) & (pl.col("feature") == "b") & (pl.col("other") == "a"))
    assert row["interaction"].item() == result.interactions[1, 1, 0]
    by_feature = long.group_by("id", "feature", maintain_order=True).agg(pl.col("interaction").sum())
    np.testing.assert_allclose(by_feature["interaction"], result.shapley.reshape(-1), atol=1e-12)


def test_interactions_are_absent_unless_asked_and_effects_need_the_exact_method():
    frame = table()
    plain = cohortsql.cohort_shapley(frame, prediction="y", similarity={"a": "exact"})
    assert plain.interactions is None and plain.interactions_se is None
    with pytest.raises(cohortsql.CohortError, match="interactions=True"):
        _ = plain.interaction_table
    with pytest.raises(cohortsql.CohortError, match="interactions=True for Shapley effects needs method='exact'"):
        cohortsql.shapley_effects(
            frame, prediction="y", similarity={"a": "exact"}, interactions=True, method="permutation", seed=1
        )
    with pytest.raises(cohortsql.CohortError, match="interactions must be True or False"):
        cohortsql.cohort_shapley(frame, prediction="y", similarity={"a": "exact"}, interactions="yes")


@pytest.mark.parametrize("case", ["cells", "equivalences"])
def test_interaction_effects_are_the_variance_games_interaction_values(case, engine):
    """v_var(u) = mean over every row t of v_CS(t, u)^2, its interactions by the definition."""
    frame = table(24)
    kinds, python = CASES[case]
    effects = cohortsql.shapley_effects(frame, prediction="y", similarity=kinds, interactions=True, **engine.options)
    columns, y = [frame[name].to_list() for name in kinds], frame["y"].to_list()
    games = [reference.cohort_values(columns, list(python.values()), y, t) for t in range(frame.height)]
    variance = {u: np.mean([game[u] ** 2 for game in games]) for u in games[0]}
    expected = reference.interactions(variance, len(kinds))
    names = list(kinds)
    for row in effects.interaction_table.iter_rows(named=True):
        i, j = names.index(row["feature"]), names.index(row["other"])
        assert row["interaction_effect"] == pytest.approx(expected[i, j], abs=1e-12)
    assert effects.interaction_table.height == len(names) ** 2
    sums = effects.interaction_table.group_by("feature").agg(pl.col("interaction_effect").sum())
    for name, total in sums.iter_rows():
        assert total == pytest.approx(effects.effects.filter(pl.col("feature") == name)["shapley_effect"].item())
    first = effects.interaction_table["interaction_effect"].abs().to_numpy()
    assert (np.diff(first) <= 1e-15).all()  # the largest pairs first
    assert cohortsql.shapley_effects(frame, prediction="y", similarity=kinds).interactions is None
    np.testing.assert_allclose(effects.interactions, expected, atol=1e-12)  # feature order


def moebius(value, d):
    """g_T = sum over S in T of (-1)^(|T| - |S|) v(S), every T, by the definition."""
    return {
        frozenset(t): sum(
            (-1) ** (len(t) - size) * value[frozenset(s)]
            for size in range(len(t) + 1)
            for s in itertools.combinations(t, size)
        )
        for k in range(1, d + 1)
        for t in itertools.combinations(range(d), k)
    }


def test_anchored_terms_are_the_moebius_inverse_and_give_the_values(engine):
    """anchored=K: each target's g_T for |T| <= K equal the Moebius inverse of its cohort game by the
    definition; with K = d they add up to cohort mean - mean and give phi_j = sum over T containing j
    of g_T / |T| (the paper's Theorem 1); the effects' terms are those of the variance game."""
    frame = table()
    kinds, python = CASES["windows"]
    targets = [0, 3, 7]
    result = cohortsql.cohort_shapley(
        frame, prediction="y", similarity=kinds, anchored=4, targets=targets, **engine.options
    )
    columns, y = [frame[name].to_list() for name in kinds], frame["y"].to_list()
    features = list(kinds)
    for row, target in enumerate(targets):
        expected = moebius(reference.cohort_values(columns, list(python.values()), y, target), 4)
        mine = result.anchored().filter(pl.col("id") == target)
        for term, order, value in mine.select("term", "order", "anchored").iter_rows():
            members = frozenset(features.index(name) for name in term.split(" & "))
            assert order == len(members) and abs(value - expected[members]) < 1e-12
        assert abs(mine["anchored"].sum() - result.totals["value"][row]) < 1e-12
        phi = [sum(expected[t] / len(t) for t in expected if j in t) for j in range(4)]
        np.testing.assert_allclose(result.shapley[row], phi, atol=1e-12)
    assert result.anchored(max_order=2)["order"].max() == 2 and result.anchored(2).height == len(targets) * 10
    effects = cohortsql.shapley_effects(frame, prediction="y", similarity=kinds, anchored=2, **engine.options)
    assert effects.anchored().height == 10 and abs(effects.anchored(1)["anchored"].sum()) > 0
    with pytest.raises(cohortsql.CohortError, match=r"max_order must be 1..2"):
        effects.anchored(3)
    for wrong in ("2", 2.5, True):  # raised TypeError, or passed as a number
        with pytest.raises(cohortsql.CohortError, match="max_order must be a whole number"):
            result.anchored(wrong)


def test_anchored_terms_are_refused_where_values_are_estimated():
    with pytest.raises(cohortsql.CohortError, match="anchored=2 needs method='exact'"):
        cohortsql.cohort_shapley(table(), prediction="y", similarity=["a", "b"], anchored=2, method="permutation")
    with pytest.raises(cohortsql.CohortError, match="anchored must be at least 0"):
        cohortsql.cohort_shapley(table(), prediction="y", similarity=["a", "b"], anchored=-1)


def test_permutation_estimates_of_interactions_lie_within_three_standard_errors_of_exact(engine):
    """The same permutations estimate the values and their interactions (importance-weighted second
    differences): at least 99% of the cells within 3 standard errors of the exact matrices, every row
    adding up to the target's estimated value, the matrices symmetric."""
    frame = table(40, seed=7).with_columns(e=pl.col("c") + pl.col("d"), f=(pl.col("b") * 3).round())
    similarity = {"a": "exact", "b": "abs:0.2", "c": "range:0.2", "d": "quantile:0.3", "e": "abs:0.3", "f": "exact"}
    options = {"prediction": "y", "similarity": similarity, "interactions": True, "targets": list(range(0, 40, 2))}
    exact = cohortsql.cohort_shapley(frame, **options, **engine.options)
    estimated = cohortsql.cohort_shapley(
        frame, **options, method="permutation", max_permutations=400, seed=11, **engine.options
    )
    inside = np.abs(estimated.interactions - exact.interactions) <= 3 * estimated.interactions_se + 1e-12
    assert inside.mean() >= 0.99, inside.mean()
    assert (estimated.interactions_se[:, 0, 1] > 0).all() and np.abs(exact.interactions[:, 0, 1]).max() > 0.01
    np.testing.assert_allclose(estimated.interactions.sum(axis=2), estimated.shapley, atol=1e-12)
    np.testing.assert_allclose(estimated.interactions, estimated.interactions.transpose(0, 2, 1), atol=1e-15)
    assert estimated.interaction_table.columns == ["id", "feature", "other", "interaction", "interaction_se"]
