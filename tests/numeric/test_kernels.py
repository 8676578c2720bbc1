"""The compiled kernel (numba) against the pure-numpy reference, and when it is used."""

import numpy as np
import oracles
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cohortsql
from cohortsql.numeric import kernels, shapley

pytest.importorskip("numba", reason="the fast extra (numba) is not installed")


@st.composite
def histograms(draw):
    """Sparse mask histograms as SQL returns them: one row per (game row, mask), every game row with its
    full mask; game rows come in groups of `slots` games per target, each with its own overall mean."""
    d = draw(st.integers(1, 9))
    slots = draw(st.integers(1, 3))
    targets = slots * draw(st.integers(1, 4))
    rows = {(t, (1 << d) - 1) for t in range(targets)}
    rows |= set(draw(st.lists(st.tuples(st.integers(0, targets - 1), st.integers(0, (1 << d) - 1)), max_size=40)))
    target, mask = (np.array(column) for column in zip(*sorted(rows)))
    count = np.array(draw(st.lists(st.integers(1, 5), min_size=len(rows), max_size=len(rows))), dtype=float)
    sum_y = np.array(draw(st.lists(st.floats(-3, 3), min_size=len(rows), max_size=len(rows))))
    weights = np.array(draw(st.lists(st.integers(1, 3), min_size=targets, max_size=targets)), dtype=float)
    means = np.array(draw(st.lists(st.floats(-1, 1), min_size=targets, max_size=targets)))
    return target, mask, count, sum_y, targets, d, means, weights, slots


@settings(max_examples=60, deadline=None)
@given(histograms())
def test_the_kernel_equals_the_numpy_reference(case):
    target, mask, count, sum_y, targets, d, means, weights, slots = case
    counts, sums = oracles.scatter_histograms(target, mask, count, sum_y, targets, d)
    expected = oracles.cohort_shapley(counts, sums, means, weights, slots)
    shuffled = np.random.default_rng(0).permutation(len(target))  # rows may come in any order
    batch = shapley.GameBatch(
        target[shuffled], mask[shuffled], count[shuffled], sum_y[shuffled], targets, d, means, weights, slots
    )
    got = kernels.exact_values(batch)
    chunked = shapley.cohort_shapley_of_histograms(batch)
    assert expected.squared_games.shape == (slots, 1 << d)
    for field, array in oracles.flat(expected).items():
        np.testing.assert_allclose(oracles.flat(got)[field], array, atol=1e-10, err_msg=field)
        np.testing.assert_allclose(oracles.flat(chunked)[field], array, atol=1e-10, err_msg=field)


def test_the_kernel_is_used_only_where_compiling_pays(monkeypatch):
    monkeypatch.setattr(kernels, "_compiled", [])
    assert not kernels.worth_compiling(500, 13)  # Boston: numpy wins against import and compile time
    assert kernels.worth_compiling(200, 20)  # 2e8 cells: a couple of seconds of numpy
    kernels.exact_values(shapley.GameBatch(np.array([0]), np.array([1]), np.ones(1), np.ones(1), 1, 1, 0.0, np.ones(1)))
    assert kernels.ready() and kernels.worth_compiling(1, 1)  # once compiled, for everything


def test_a_run_through_the_kernel_equals_the_numpy_run(monkeypatch):
    rng = np.random.default_rng(3)
    frame = pl.DataFrame({f"x{j}": rng.uniform(size=300) for j in range(6)} | {"y": rng.normal(size=300)})
    similarity = {f"x{j}": "abs:0.2" for j in range(6)}
    monkeypatch.setattr(kernels, "COMPILE_WORTH_CELLS", 1 << 60)
    monkeypatch.setattr(kernels, "_compiled", [])
    reference = cohortsql.cohort_shapley(frame, prediction="y", similarity=similarity)
    monkeypatch.setattr(kernels, "COMPILE_WORTH_CELLS", 0)
    compiled = cohortsql.cohort_shapley(frame, prediction="y", similarity=similarity)
    assert kernels.ready()
    np.testing.assert_allclose(compiled.shapley, reference.shapley, atol=1e-12)
    np.testing.assert_allclose(compiled.shapley_squared, reference.shapley_squared, atol=1e-12)
    assert compiled.paths.drop("cohort_mean").equals(reference.paths.drop("cohort_mean"))
    np.testing.assert_allclose(compiled.paths["cohort_mean"], reference.paths["cohort_mean"], atol=1e-12)


def test_the_kernels_groups_follow_its_memory_bound(monkeypatch):
    """Fewer groups of targets (at d = 24 one: 40 targets had peaked at 6.6 GB with 64) give the same values."""
    rng = np.random.default_rng(4)
    targets, d = 9, 6
    rows = np.repeat(np.arange(targets), 5)
    masks = rng.integers(0, 1 << d, rows.size)
    masks[::5] = (1 << d) - 1  # each target is in its own cohorts
    batch = shapley.GameBatch(
        rows, masks, np.ones(rows.size), rng.normal(size=rows.size), targets, d, np.zeros(targets), np.ones(targets)
    )
    reference = kernels.exact_values(batch)
    monkeypatch.setattr(kernels, "KERNEL_MEMORY_BYTES", 1)
    bounded = kernels.exact_values(batch)
    for field, array in oracles.flat(reference).items():  # the squared games add up in another order: to rounding
        np.testing.assert_allclose(oracles.flat(bounded)[field], array, rtol=1e-12, err_msg=field)
