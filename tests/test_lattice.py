"""The lattice walk against cohorts found by brute force."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from cohortsql import lattice


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
    result = lattice.subset_cohorts(codes, counts, sums, targets)
    for u in range(1 << d):
        keys = [j for j in range(d) if u >> j & 1]
        same = (codes[:, None, keys] == codes[None, :, keys]).all(axis=2)  # cell x cell
        cohort_sizes = same @ counts
        cohort_sums = same @ sums
        # v_var(u): every subject t contributes (its cohort's mean centred value)^2
        expected = (counts * (cohort_sums / cohort_sizes) ** 2).sum() / counts.sum() if u else 0.0
        np.testing.assert_allclose(result.variance_game[u], expected, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(result.sizes[:, u], cohort_sizes[targets])
        if u:
            np.testing.assert_allclose(result.game[:, u], cohort_sums[targets] / cohort_sizes[targets], atol=1e-12)


def test_subsets_are_each_visited_once_with_bounded_group_numbers():
    codes = np.random.default_rng(1).integers(0, 50, size=(30, 5))
    visited = []
    for subset, groups, bound in lattice.subset_groups(codes):
        visited.append(subset)
        assert groups.min() >= 0 and groups.max() < bound <= max(4 * 30, 1) * 50
    assert sorted(visited) == list(range(32))
