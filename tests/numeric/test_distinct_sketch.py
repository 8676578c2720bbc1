"""The sketch of distinct 64-bit hashes that Spark's executors keep (`cohortsql.numeric.distinct_sketch`):
each part's smallest distinct hashes are those of a full sort, parts merge into the whole's sketch, a
table of fewer distinct hashes than the sketch holds is counted exactly, and a larger one within a few
standard errors (1 / sqrt(k - 2), 1.6%)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cohortsql.numeric.distinct_sketch import SKETCH_SIZE, distinct_estimate, smallest_hashes


def hashes(distinct: int, seed: int, repeats: int = 1) -> np.ndarray:
    """`distinct` random 64-bit hashes (negative ones too, as BIGINT holds them), each `repeats` times, shuffled."""
    rng = np.random.default_rng(seed)
    values = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=distinct, dtype=np.int64)
    return rng.permutation(np.repeat(values, repeats))


def reference(values: np.ndarray, size: int = SKETCH_SIZE) -> np.ndarray:
    return np.unique(values.view(np.uint64))[:size]


def test_a_part_keeps_the_smallest_distinct_hashes_of_a_full_sort_whatever_their_repeats():
    # 100,000 repeats of the 3 smallest values: the partial sort's first few hold too few distinct ones.
    many = hashes(50_000, seed=1)
    small = np.sort(many.view(np.uint64))[:3].view(np.int64)
    crowded = np.concatenate([many, np.repeat(small, 100_000)])
    for values in (many, hashes(10_000, seed=2, repeats=5), crowded, hashes(3, seed=3, repeats=9000)):
        np.testing.assert_array_equal(smallest_hashes(values), reference(values))


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max), max_size=300),
    cuts=st.lists(st.integers(0, 300), max_size=4),
    size=st.integers(1, 40),
)
def test_parts_sketches_merge_into_the_whole_s(values, cuts, size):
    whole = np.array(values, dtype=np.int64)
    parts = np.split(whole, sorted(cut for cut in cuts if cut <= len(whole)))
    merged = distinct_estimate([smallest_hashes(part, size) for part in parts], size)
    assert merged == distinct_estimate([smallest_hashes(whole, size)], size)
    if len(set(values)) < size:
        assert merged == len(set(values))


def test_fewer_distinct_hashes_than_the_sketch_holds_are_counted_exactly():
    assert distinct_estimate([]) == 0
    assert distinct_estimate([smallest_hashes(np.zeros(0, dtype=np.int64))]) == 0
    values = hashes(SKETCH_SIZE - 1, seed=4, repeats=7)
    assert distinct_estimate([smallest_hashes(part) for part in np.array_split(values, 5)]) == SKETCH_SIZE - 1


def test_many_distinct_hashes_are_estimated_within_a_few_standard_errors():
    standard_error = 1 / np.sqrt(SKETCH_SIZE - 2)
    for distinct, repeats in ((20_000, 3), (300_000, 1), (1_000_000, 2)):
        values = hashes(distinct, seed=distinct, repeats=repeats)
        estimate = distinct_estimate([smallest_hashes(part) for part in np.array_split(values, 4)])
        assert abs(estimate / distinct - 1) < 4 * standard_error, (distinct, estimate)
