"""The numpy core against the Shapley axioms, brute-force transforms and the anchored form."""

import math

import numpy as np
import oracles
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from cohortsql.numeric import shapley

values = st.floats(-100, 100, allow_nan=False, allow_infinity=False)


@st.composite
def games(draw, max_d=6, batch=2):
    """A batch of games v on d players with v({}) = 0."""
    d = draw(st.integers(1, max_d))
    game = draw(arrays(np.float64, (batch, 1 << d), elements=values))
    game[:, 0] = 0.0
    return game


def definition(game: np.ndarray) -> np.ndarray:
    """phi_j = sum_{u not containing j} |u|! (d - |u| - 1)! / d! (v(u + j) - v(u)), one game."""
    d = game.shape[-1].bit_length() - 1
    phi = np.zeros(d)
    for j in range(d):
        for u in range(1 << d):
            if not u >> j & 1:
                size = bin(u).count("1")
                weight = math.factorial(size) * math.factorial(d - size - 1) / math.factorial(d)
                phi[j] += weight * (game[u | 1 << j] - game[u])
    return phi


@settings(deadline=None)
@given(games())
def test_matches_the_definition(game):
    expected = np.array([definition(g) for g in game])
    np.testing.assert_allclose(shapley.shapley_values(game), expected, atol=1e-9, rtol=1e-12)


@settings(deadline=None)
@given(games())
def test_efficiency(game):
    np.testing.assert_allclose(shapley.shapley_values(game).sum(axis=-1), game[:, -1] - game[:, 0], atol=1e-9)


@settings(deadline=None)
@given(games(), st.data())
def test_symmetry(game, data):
    """Players i and j that are interchangeable in v get equal values."""
    d = game.shape[-1].bit_length() - 1
    if d < 2:
        return
    i, j = data.draw(st.lists(st.integers(0, d - 1), min_size=2, max_size=2, unique=True))
    swapped = np.array([u ^ ((u >> i & 1) ^ (u >> j & 1)) * ((1 << i) | (1 << j)) for u in range(1 << d)])
    symmetric = (game + game[:, swapped]) / 2
    phi = shapley.shapley_values(symmetric)
    np.testing.assert_allclose(phi[:, i], phi[:, j], atol=1e-9)


@settings(deadline=None)
@given(games(), st.data())
def test_dummy_player_gets_zero(game, data):
    """A player whose addition never changes v gets phi = 0."""
    d = game.shape[-1].bit_length() - 1
    j = data.draw(st.integers(0, d - 1))
    without_j = np.array([u & ~(1 << j) for u in range(1 << d)])
    dummy = game[:, without_j]
    np.testing.assert_allclose(shapley.shapley_values(dummy)[:, j], 0.0, atol=1e-9)


@settings(deadline=None)
@given(games(batch=1), st.floats(-3, 3))
def test_linearity(game, scale):
    other = np.random.default_rng(0).normal(size=game.shape)
    other[:, 0] = 0
    combined = shapley.shapley_values(game + scale * other)
    separate = shapley.shapley_values(game) + scale * shapley.shapley_values(other)
    np.testing.assert_allclose(combined, separate, atol=1e-8)


@settings(deadline=None)
@given(games())
def test_anchored_decomposition_equals_weighted_marginals(game):
    np.testing.assert_allclose(
        oracles.anchored_shapley_values(game), shapley.shapley_values(game), atol=1e-9, rtol=1e-12
    )


@settings(deadline=None)
@given(arrays(np.float64, (3, 1 << 4), elements=values))
def test_superset_sums_by_brute_force(histogram):
    expected = np.array([[sum(row[m] for m in range(16) if m & u == u) for u in range(16)] for row in histogram])
    np.testing.assert_allclose(shapley.superset_sums(histogram), expected, atol=1e-9)


@pytest.mark.parametrize("d", [1, 2, 5, 13, 20])
def test_weights_of_all_orders_sum_to_one(d):
    """sum_s C(d - 1, s) w(s) = 1: every ordering puts j after some set of size s."""
    weights = shapley.shapley_weights(d)
    assert sum(math.comb(d - 1, s) * weights[s] for s in range(d)) == pytest.approx(1.0, rel=1e-14)


def test_set_sizes():
    d = 5
    assert list(shapley.set_sizes(d)) == [bin(u).count("1") for u in range(1 << d)]


def test_cohort_shapley_from_a_histogram():
    """Two predictors, target with mask 0b11; histogram of (mask -> count, sum)."""
    counts = np.zeros((1, 4))
    sums = np.zeros((1, 4))
    for mask, count, total in [(0b11, 1, 10.0), (0b01, 2, 4.0), (0b10, 1, 0.0), (0b00, 1, 1.0)]:
        counts[0, mask], sums[0, mask] = count, total
    mean = 15.0 / 5
    result = oracles.cohort_shapley(counts, sums, mean, np.array([3.0]))
    # cohorts: {} all five (mean 3), {0} masks 01,11 (14/3), {1} masks 10,11 (5), {0,1} mask 11 (10)
    game = np.array([0.0, 14 / 3 - 3, 5 - 3, 10 - 3])
    np.testing.assert_allclose(result.per_row.shapley[0], definition(game))
    np.testing.assert_allclose(result.per_row.shapley_squared[0], definition(game**2))
    assert result.per_row.cohort_size[0] == 1
    assert result.per_row.cohort_mean[0] == pytest.approx(10.0)
    np.testing.assert_allclose(result.squared_games[0], 3 * game**2)  # the target stands for three


def test_rejects_games_of_wrong_length():
    with pytest.raises(ValueError):
        shapley.shapley_values(np.zeros(6))


@pytest.mark.parametrize("slots", [1, 3])
def test_chunks_on_every_core_equal_one_row_at_a_time_and_repeat_exactly(monkeypatch, slots):
    """Chunks of a row or two run on a thread per core (slot boundaries inside chunks, too): the values
    equal each game row computed alone, and two runs give the same bits (squared games add in order)."""
    rng = np.random.default_rng(8)
    rows, d = 12 * slots, 5
    counts = rng.integers(0, 3, size=(rows, 1 << d)).astype(float)
    counts[:, -1] += 1  # every target is in its own cohort
    sums = rng.normal(size=(rows, 1 << d)) * counts
    means, weights = rng.normal(size=rows), rng.uniform(1, 2, size=rows)
    row, mask = np.nonzero(counts)
    batch = shapley.GameBatch(row, mask, counts[row, mask], sums[row, mask], rows, d, means, weights, slots)
    alone = [
        oracles.cohort_shapley(counts[r : r + 1], sums[r : r + 1], means[r : r + 1], weights[r : r + 1])
        for r in range(rows)
    ]
    monkeypatch.setattr(shapley, "CACHE_CHUNK_VALUES", 2 << d)  # two rows per chunk: six to eighteen chunks
    chunked = shapley.cohort_shapley_of_histograms(batch)
    again = shapley.cohort_shapley_of_histograms(batch)
    for field in ("shapley", "shapley_squared", "cohort_size", "path_mean"):
        whole = getattr(chunked.per_row, field)
        np.testing.assert_allclose(whole, np.concatenate([getattr(one.per_row, field) for one in alone]))
        np.testing.assert_array_equal(whole, getattr(again.per_row, field))
    by_slot = [sum(alone[r].squared_games[0] for r in range(slot, rows, slots)) for slot in range(slots)]
    np.testing.assert_allclose(chunked.squared_games, np.array(by_slot), rtol=1e-12)
    np.testing.assert_array_equal(chunked.squared_games, again.squared_games)


@settings(deadline=None)
@given(games(max_d=7), st.integers(0, 3))
def test_blocks_of_sets_give_the_definition(game, bits):
    """Beyond 2^BLOCK_BITS sets the values are summed a block of sets at a time (so that d = 24 holds
    blocks, not 2^24-long temporaries: 2 targets peaked at 2.8 GB before, 1.1 GB after); any block
    size gives the definition."""
    original = shapley.BLOCK_BITS
    shapley.BLOCK_BITS = bits
    try:
        blocked = shapley.shapley_values(game)
    finally:
        shapley.BLOCK_BITS = original
    expected = np.array([definition(g) for g in game])
    np.testing.assert_allclose(blocked, expected, atol=1e-9, rtol=1e-12)
