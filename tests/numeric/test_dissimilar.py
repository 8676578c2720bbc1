"""The integrated kernel's histograms (`cohortsql.numeric.dissimilar`): compiled, they equal the numpy
definition on every shape, the ones whose subjects and players are not multiples of the 8 x 8 squares
the compiled kernel transposes its flags by, several blocks of subjects, and players of several features."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from cohortsql.numeric import dissimilar, kernels, pair_masks
from cohortsql.numeric.pair_tests import EQUAL, WINDOW, PairTest

pytest.importorskip("numba")


def _histograms(rows: int, features: int, grouped: bool, ranked: bool) -> tuple[np.ndarray, np.ndarray]:
    """(compiled, numpy) totals of 3 targets against `rows` subjects of `features` small integers and
    doubles (some missing), two sums each."""
    rng = np.random.default_rng(rows * 100 + features)
    columns, tests = [], []
    for j in range(features):
        if j % 2:
            values = rng.normal(size=rows)
            columns.append(pa.array(values, mask=rng.uniform(size=rows) < 0.1))
            tests.append(PairTest(WINDOW, delta=0.5))
        else:
            columns.append(pa.array(rng.integers(0, 3, rows).astype(np.int8)))
            tests.append(PairTest(EQUAL, integer=True))
    subjects = pair_masks.Columns.of(columns, tests, [None] * features, compact=True)
    targets = pair_masks.Columns.of([column.slice(0, 3) for column in columns], tests, [None] * features)
    player_of = np.arange(features) // 2 if grouped else np.arange(features)
    players = int(player_of.max()) + 1
    ranks = np.stack([rng.permutation(players) + 1 for _ in range(3)]) if ranked else None
    measures = np.column_stack([rng.uniform(0.5, 2.0, rows), rng.normal(size=rows)])
    found = []
    for compiled in (True, False):
        histogram = dissimilar.DissimilarHistogram(targets, tests, player_of, 2, ranks)
        if compiled:
            histogram.add(subjects, measures)
        else:
            histogram._add_in_numpy(subjects, measures)
        found.append(histogram.totals)
    return found[0], found[1]


@pytest.mark.skipif(not kernels.available(), reason="the compiled kernel is not installed")
@pytest.mark.parametrize("rows", [1, 7, 8, 300, 1_029])
@pytest.mark.parametrize("features", [1, 9, 24])
@pytest.mark.parametrize("grouped", [False, True], ids=["features", "pairs of features"])
@pytest.mark.parametrize("ranked", [False, True], ids=["by k", "by rank"])
def test_the_compiled_histogram_is_the_numpy_definition(rows, features, grouped, ranked):
    compiled, by_numpy = _histograms(rows, features, grouped, ranked)
    np.testing.assert_allclose(compiled, by_numpy, rtol=1e-12, atol=1e-12)
    assert np.abs(compiled).sum() > 0
