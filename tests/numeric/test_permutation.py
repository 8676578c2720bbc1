"""The permutation method: calibrated against exact values, efficient per target, any d up to 128."""

import numpy as np
import polars as pl
import pytest

import cohortsql
from cohortsql.numeric import permutation
from cohortsql.run import preparation as prepare
from cohortsql.run import strategy


def table(seed, n, d):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, d))
    y = x @ rng.normal(size=d) + x[:, 0] * x[:, 1] + rng.normal(scale=0.2, size=n)
    return pl.DataFrame({f"x{j}": x[:, j] for j in range(d)} | {"y": y})


def test_estimates_are_calibrated_against_exact_values(engine):
    frame = table(1, 300, 10)
    similarity = {f"x{j}": "abs:0.15" for j in range(10)}
    options = dict(prediction="y", similarity=similarity, targets=list(range(40)), **engine.options)
    exact = cohortsql.cohort_shapley(frame, **options)
    estimate = cohortsql.cohort_shapley(frame, **options, method="permutation", seed=7, max_permutations=200)
    assert estimate.method == "permutation" and (estimate.permutations == 200).all()
    for values, errors, truth in [
        (estimate.shapley, estimate.shapley_se, exact.shapley),
        (estimate.shapley_squared, estimate.shapley_squared_se, exact.shapley_squared),
    ]:
        deviation = np.abs(values - truth)
        within_3 = np.mean(deviation <= 3 * errors + 1e-12)
        within_196 = np.mean(deviation <= 1.96 * errors + 1e-12)
        assert within_3 >= 0.99
        assert 0.90 <= within_196 <= 0.99


def test_every_estimate_is_efficient():
    frame = table(2, 200, 30)
    result = cohortsql.cohort_shapley(
        frame, prediction="y", similarity=[f"x{j}" for j in range(30)], targets=[0, 1, 2], method="permutation", seed=1
    )
    np.testing.assert_allclose(result.shapley.sum(axis=1), result.totals["value"], atol=1e-12)
    np.testing.assert_allclose(result.shapley_squared.sum(axis=1), result.totals["value_squared"], atol=1e-12)
    assert result.local.columns[-4:] == ["shapley", "shapley_squared", "shapley_se", "shapley_squared_se"]


def test_predictors_beyond_the_first_mask_word():
    """d = 100: only x70 varies, so it carries the whole value in every permutation (others are dummies)."""
    rng = np.random.default_rng(3)
    columns = {f"x{j}": np.zeros(50) for j in range(100)}
    columns["x70"] = rng.integers(0, 3, 50).astype(float)
    frame = pl.DataFrame(columns | {"y": columns["x70"] + rng.normal(size=50)})
    result = cohortsql.cohort_shapley(
        frame,
        prediction="y",
        similarity={f"x{j}": "exact" for j in range(100)},
        targets=[0, 1],
        method="permutation",
        seed=0,
    )
    np.testing.assert_allclose(result.shapley[:, 70], result.totals["value"], atol=1e-12)
    others = np.delete(result.shapley, 70, axis=1)
    assert np.abs(others).max() < 1e-12
    assert np.abs(result.shapley_se).max() < 1e-12


def test_seeded_runs_repeat_and_do_not_depend_on_batching(monkeypatch):
    frame = table(4, 120, 20)
    options = dict(
        prediction="y", similarity=[f"x{j}" for j in range(20)], targets=list(range(6)), method="permutation", seed=11
    )
    first = cohortsql.cohort_shapley(frame, **options)
    monkeypatch.setattr(prepare, "BATCH_MEMORY_BYTES", 150 * strategy.HISTOGRAM_ROW_BYTES)  # one target per batch
    second = cohortsql.cohort_shapley(frame, **options)
    np.testing.assert_allclose(first.shapley, second.shapley, atol=1e-14)  # sums in another order
    other = cohortsql.cohort_shapley(frame, **(options | {"seed": 12}))
    assert not np.array_equal(first.shapley, other.shapley)


def test_tolerance_stops_early_and_budget_caps():
    frame = table(5, 150, 12)
    options = dict(
        prediction="y", similarity=[f"x{j}" for j in range(12)], targets=[0, 1], method="permutation", seed=2
    )
    loose = cohortsql.cohort_shapley(frame, **options, tolerance=1e6, max_permutations=1000)
    assert (loose.permutations == 2 * permutation.MIN_PAIRS).all()
    tight = cohortsql.cohort_shapley(frame, **options, tolerance=1e-9, max_permutations=40)
    assert (tight.permutations == 40).all()


def test_auto_method_switches_at_sixteen_features():
    small, large = table(6, 60, 16), table(6, 60, 17)
    assert (
        cohortsql.cohort_shapley(
            small, prediction="y", similarity=list(small.columns[:-1]), targets=[0], method="auto"
        ).method
        == "exact"
    )
    assert (
        cohortsql.cohort_shapley(
            large, prediction="y", similarity=list(large.columns[:-1]), targets=[0], method="auto"
        ).method
        == "permutation"
    )


def test_too_many_features_and_bad_budget():
    frame = pl.DataFrame({f"x{j}": [0.0, 1.0] for j in range(129)} | {"y": [0.0, 1.0]})
    with pytest.raises(cohortsql.CohortError, match="at most 128 features; got 129"):
        cohortsql.cohort_shapley(frame, prediction="y", similarity=list(frame.columns[:-1]), method="permutation")
    with pytest.raises(cohortsql.CohortError, match="max_permutations must be at least 2"):
        cohortsql.cohort_shapley(
            table(0, 10, 3), prediction="y", similarity=["x0"], method="permutation", max_permutations=1
        )


def test_prefix_lengths_by_brute_force():
    rng = np.random.default_rng(9)
    bits = rng.uniform(size=(6, 40)) < 0.7
    complete = bits.all(axis=0)
    order = rng.permutation(6)
    lengths = permutation.prefix_lengths(bits, complete, order)
    for mask in range(40):
        expected = next((position for position, feature in enumerate(order) if not bits[feature, mask]), 6)
        assert lengths[mask] == expected


def test_unpack_masks_across_words():
    words = [np.array([0b101, 0]), np.array([0b10, 0b1])]
    bits = permutation.unpack_masks(words, d=5, word_bits=3)
    assert bits[:, 0].tolist() == [True, False, True, False, True]
    assert bits[:, 1].tolist() == [False, False, False, True, False]


def test_the_interaction_sample_averaged_over_every_order_is_the_exact_interaction_values():
    """Unbiased by construction: the per-permutation samples (importance-weighted second differences at
    the players before each pair) averaged over all d! orders give the interaction values exactly."""
    import itertools

    from cohortsql.numeric import dividends, shapley
    from cohortsql.numeric.permutation import _increments, unpack_masks

    rng = np.random.default_rng(5)
    d = 4
    masks = np.arange(1 << d)
    counts = rng.integers(1, 6, 1 << d).astype(float)
    sums = rng.normal(size=1 << d) * counts
    mean = sums.sum() / counts.sum()
    bits = unpack_masks([masks], d, 63)
    complete = bits.all(axis=0)
    orders = list(itertools.permutations(range(d)))
    average = sum(_increments(bits, complete, counts, sums, mean, np.array(order), True) for order in orders) / len(
        orders
    )
    game = shapley.superset_sums(sums[None]) / shapley.superset_sums(counts[None]) - mean
    game[:, 0] = 0.0
    phi = shapley.shapley_values(game)
    np.testing.assert_allclose(average[0], phi[0], atol=1e-12)
    np.testing.assert_allclose(average[2:], dividends.interaction_values(game, phi)[0], atol=1e-12)
