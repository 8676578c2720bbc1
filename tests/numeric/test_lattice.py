"""The lattice walk against cohorts found by brute force."""

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from cohortsql.numeric import lattice
from cohortsql.run import grouping_sets


@st.composite
def cells(draw):
    m = draw(st.integers(1, 12))
    d = draw(st.integers(1, 4))
    high = draw(st.integers(1, 40))  # large codes force the dense renumbering
    codes = draw(arrays(np.int64, (m, d), elements=st.integers(0, high)))
    counts = draw(arrays(np.float64, m, elements=st.integers(1, 5).map(float)))
    sums = draw(arrays(np.float64, m, elements=st.floats(-10, 10)))
    targets = draw(st.lists(st.integers(0, m - 1), min_size=0, max_size=4))
    return codes, counts, sums, np.array(targets, dtype=np.int64)


@settings(max_examples=100, deadline=None)
@given(cells())
def test_every_subset_matches_brute_force(case):
    codes, counts, sums, targets = case
    m, d = codes.shape
    result = lattice.subset_cohorts(codes, counts[:, None], sums[:, None], np.zeros(1, dtype=np.int64), targets)
    for u in range(1 << d):
        keys = [j for j in range(d) if u >> j & 1]
        same = (codes[:, None, keys] == codes[None, :, keys]).all(axis=2)  # cell x cell
        cohort_sizes = same @ counts
        cohort_sums = same @ sums
        # v_var(u): every subject t contributes (its cohort's mean centred value)^2
        expected = (counts * (cohort_sums / cohort_sizes) ** 2).sum() / counts.sum() if u else 0.0
        np.testing.assert_allclose(result.variance_game[0, u], expected, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(result.sizes[:, 0, u], cohort_sizes[targets])
        if u:
            np.testing.assert_allclose(result.game[:, 0, u], cohort_sums[targets] / cohort_sizes[targets], atol=1e-12)


@settings(max_examples=50, deadline=None)
@given(arrays(np.int64, st.integers(0, 30), elements=st.integers(0, 10_000)))
def test_dense_renumbering_keeps_order_and_equality(groups):
    bound = int(groups.max(initial=-1)) + 1
    numbers, count = lattice.dense(groups, bound)
    assert count == len(np.unique(groups))
    assert sorted(set(numbers.tolist())) == list(range(count))
    assert ((numbers[:, None] == numbers[None, :]) == (groups[:, None] == groups[None, :])).all()
    assert ((numbers[:, None] < numbers[None, :]) == (groups[:, None] < groups[None, :])).all()


def test_cells_alone_leave_the_walk_without_changing_anything():
    """Mostly unique cells (as for 10 keys of 10 bins on a million rows): pruned early, same numbers."""
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 6, size=(200, 6))
    counts = rng.integers(1, 4, 200).astype(float)
    sums = rng.normal(size=200)
    targets = np.array([0, 5, 17, 199])
    result = lattice.subset_cohorts(codes, counts[:, None], sums[:, None], np.zeros(1, dtype=np.int64), targets)
    for u in range(1, 1 << 6):
        keys = [j for j in range(6) if u >> j & 1]
        same = (codes[:, None, keys] == codes[None, :, keys]).all(axis=2)
        cohort_sizes, cohort_sums = same @ counts, same @ sums
        expected = (counts * (cohort_sums / cohort_sizes) ** 2).sum() / counts.sum()
        np.testing.assert_allclose(result.variance_game[0, u], expected, rtol=1e-12)
        np.testing.assert_allclose(result.sizes[:, 0, u], cohort_sizes[targets])
        np.testing.assert_allclose(result.game[:, 0, u], cohort_sums[targets] / cohort_sizes[targets], atol=1e-12)
        if len(keys) == 1:
            np.testing.assert_allclose(result.feature_sizes[:, keys[0]], cohort_sizes)


@settings(max_examples=60, deadline=None)
@given(cells(), st.integers(1, 3), st.integers(0, 2**31))
def test_every_game_of_every_weighting_matches_brute_force(case, weightings, seed):
    """Several weightings (bootstrap replicates) and outcomes at once: each game is the walk of its own
    weights and centred sums."""
    codes, counts, sums, targets = case
    m, d = codes.shape
    rng = np.random.default_rng(seed)
    weights = counts[:, None] * rng.uniform(0.5, 2.0, size=(m, weightings))
    weighting = np.array([0, weightings - 1, 0])
    centered = rng.normal(size=(m, len(weighting)))
    result = lattice.subset_cohorts(codes, weights, centered, weighting, targets)
    for u in range(1, 1 << d):
        keys = [j for j in range(d) if u >> j & 1]
        same = (codes[:, None, keys] == codes[None, :, keys]).all(axis=2)
        for game, b in enumerate(weighting):
            sizes, totals = same @ weights[:, b], same @ centered[:, game]
            expected = (weights[:, b] * (totals / sizes) ** 2).sum() / weights[:, b].sum()
            np.testing.assert_allclose(result.variance_game[game, u], expected, rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(result.game[:, game, u], totals[targets] / sizes[targets], atol=1e-12)
            np.testing.assert_allclose(result.sizes[:, b, u], sizes[targets])


@st.composite
def mixed_cells(draw):
    """Up to 6 keys of very different cardinalities: some subsets are dense tables, the rest walk."""
    m = draw(st.integers(1, 30))
    d = draw(st.integers(1, 6))
    highs = draw(st.lists(st.sampled_from([0, 1, 2, 5, 60]), min_size=d, max_size=d))
    codes = np.column_stack([draw(arrays(np.int64, m, elements=st.integers(0, high))) for high in highs])
    counts = draw(arrays(np.float64, m, elements=st.integers(1, 5).map(float)))
    sums = draw(arrays(np.float64, m, elements=st.floats(-10, 10)))
    targets = draw(st.lists(st.integers(0, m - 1), min_size=0, max_size=5))
    return codes, counts, sums, np.array(targets, dtype=np.int64)


@settings(max_examples=150, deadline=None)
@given(mixed_cells())
def test_dense_tables_and_the_walk_agree_with_brute_force(case):
    codes, counts, sums, targets = case
    m, d = codes.shape
    result = lattice.subset_cohorts(codes, counts[:, None], sums[:, None], np.zeros(1, dtype=np.int64), targets)
    for u in range(1, 1 << d):
        keys = [j for j in range(d) if u >> j & 1]
        same = (codes[:, None, keys] == codes[None, :, keys]).all(axis=2)
        cohort_sizes, cohort_sums = same @ counts, same @ sums
        expected = (counts * (cohort_sums / cohort_sizes) ** 2).sum() / counts.sum()
        np.testing.assert_allclose(result.variance_game[0, u], expected, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(result.sizes[:, 0, u], cohort_sizes[targets])
        np.testing.assert_allclose(result.game[:, 0, u], cohort_sums[targets] / cohort_sizes[targets], atol=1e-12)
        if len(keys) == 1:
            np.testing.assert_allclose(result.feature_sizes[:, keys[0]], cohort_sizes)


def test_every_subset_of_ten_keys_is_found_once_whether_tabled_or_walked():
    """Ten keys of 2 to 7 levels over 3,000 cells: roots, their coarser tables and walked subsets all
    appear, and each subset's game equals the brute-force one."""
    rng = np.random.default_rng(11)
    codes = np.column_stack([rng.integers(0, levels, 3000) for levels in (2, 7, 3, 5, 2, 6, 4, 3, 7, 2)])
    counts = rng.integers(1, 3, 3000).astype(float)
    sums = rng.normal(size=3000)
    targets = np.array([0, 1234, 2999])
    result = lattice.subset_cohorts(codes, counts[:, None], sums[:, None], np.zeros(1, dtype=np.int64), targets)
    for u in rng.choice(1 << 10, size=60, replace=False).tolist() + [(1 << 10) - 1, 1, 1 << 9]:
        if u == 0:
            continue
        keys = [j for j in range(10) if u >> j & 1]
        groups = np.unique(codes[:, keys], axis=0, return_inverse=True)[1].reshape(-1)
        sizes, totals = np.bincount(groups, counts), np.bincount(groups, sums)
        expected = (totals**2 / sizes).sum() / counts.sum()
        np.testing.assert_allclose(result.variance_game[0, u], expected, rtol=1e-10)
        np.testing.assert_allclose(result.sizes[:, 0, u], sizes[groups[targets]])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-3, 3), st.integers(-(2**40), 2**40)), min_size=1, max_size=20))
def test_key_codes_keep_order_and_equality_with_null_as_zero(values):
    """Integer keys are offset from their minimum when their range is narrow, ranked otherwise: either
    way codes are 1, 2, ... in the values' order and NULL is 0."""
    key = pl.Series("k", values, dtype=pl.Int64)
    codes = grouping_sets._codes(key)
    present = [value is not None for value in values]
    assert ((codes == 0) == ~np.array(present)).all()
    kept = np.array([value for value in values if value is not None])
    coded = codes[np.array(present)]
    assert (coded >= 1).all()
    assert ((coded[:, None] < coded[None, :]) == (kept[:, None] < kept[None, :])).all()
    assert ((coded[:, None] == coded[None, :]) == (kept[:, None] == kept[None, :])).all()
