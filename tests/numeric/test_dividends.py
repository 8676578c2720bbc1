"""Dividends, interaction values, Owen values and quotient games against their definitions, by brute
force over every subset or every admissible order of a few players, and against the axioms."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from cohortsql.numeric import dividends as module
from cohortsql.numeric.shapley import shapley_values

values = st.floats(-100, 100, allow_nan=False, allow_infinity=False)


@st.composite
def games(draw, min_d=1, max_d=5):
    """One game on d players (v({}) arbitrary: nothing here may assume it is 0)."""
    d = draw(st.integers(min_d, max_d))
    return draw(arrays(np.float64, (1 << d,), elements=values))


@st.composite
def structures(draw, max_d=5):
    """A game and a partition of its players into unions (players in a random order)."""
    game = draw(games(max_d=max_d))
    d = game.shape[-1].bit_length() - 1
    order = draw(st.permutations(range(d)))
    labels = [draw(st.integers(0, d - 1)) for _ in range(d)]
    unions = [[player for player, label in zip(order, labels) if label == k] for k in range(d)]
    return game, [union for union in unions if union]


def size(u: int) -> int:
    return bin(u).count("1")


def index_by_definition(game: np.ndarray, i: int, j: int) -> float:
    """I_ij = sum over S not meeting {i, j} of |S|! (d - |S| - 2)! / (d - 1)! times the discrete
    second difference v(S + ij) - v(S + i) - v(S + j) + v(S)."""
    d = game.shape[-1].bit_length() - 1
    total = 0.0
    for s in range(1 << d):
        if s >> i & 1 or s >> j & 1:
            continue
        weight = math.factorial(size(s)) * math.factorial(d - size(s) - 2) / math.factorial(d - 1)
        total += weight * (game[s | 1 << i | 1 << j] - game[s | 1 << i] - game[s | 1 << j] + game[s])
    return total


def owen_by_orders(game: np.ndarray, unions: list[list[int]]) -> np.ndarray:
    """The mean marginal contribution of each player over every order of the players in which each
    union's members come one after another (Owen 1977)."""
    d = game.shape[-1].bit_length() - 1
    totals, count = np.zeros(d), 0
    for union_order in itertools.permutations(unions):
        for inner in itertools.product(*(itertools.permutations(union) for union in union_order)):
            before = 0
            for player in itertools.chain(*inner):
                totals[player] += game[before | 1 << player] - game[before]
                before |= 1 << player
            count += 1
    return totals / count


@settings(deadline=None)
@given(games(max_d=4))
def test_dividends_are_the_moebius_inverse(game):
    """g_T by its definition, and the subset sums of g give v back."""
    d = game.shape[-1].bit_length() - 1
    g = module.dividends(game)
    expected = [sum((-1) ** (size(t) - size(s)) * game[s] for s in range(1 << d) if s & t == s) for t in range(1 << d)]
    np.testing.assert_allclose(g, expected, atol=1e-8)
    rebuilt = [sum(g[s] for s in range(1 << d) if s & u == s) for u in range(1 << d)]
    np.testing.assert_allclose(rebuilt, game, atol=1e-8)


@settings(deadline=None)
@given(games(min_d=2))
def test_the_interaction_index_is_its_definition(game):
    d = game.shape[-1].bit_length() - 1
    index = module.interaction_index(game)
    for i, j in itertools.combinations(range(d), 2):
        assert index[i, j] == pytest.approx(index_by_definition(game, i, j), abs=1e-7)
        assert index[j, i] == index[i, j]
    np.testing.assert_array_equal(np.diag(index), 0.0)


@settings(deadline=None)
@given(games())
def test_interaction_values_add_up_to_the_shapley_values_and_the_whole(game):
    """shap's convention: rows sum to phi_i, every entry to v(1:d) - v({}), the matrix is symmetric."""
    phi = shapley_values(game)
    values = module.interaction_values(game)
    np.testing.assert_allclose(values.sum(axis=1), phi, atol=1e-8)
    assert values.sum() == pytest.approx(game[-1] - game[0], abs=1e-7)
    np.testing.assert_allclose(values, values.T, atol=1e-12)


def test_an_additive_game_has_no_interactions_and_a_product_one_interaction():
    """v(S) = sum of a_j over S: no pair interacts. v(S) = [0 and 1 in S]: only (0, 1), with index 1."""
    d, weights = 4, np.array([1.0, -2.0, 0.5, 3.0])
    sets = np.arange(1 << d)
    additive = ((sets[:, None] >> np.arange(d)) & 1) @ weights
    values = module.interaction_values(additive)
    np.testing.assert_allclose(values, np.diag(weights), atol=1e-12)
    both = ((sets & 0b11) == 0b11).astype(float)
    index = module.interaction_index(both)
    expected = np.zeros((d, d))
    expected[0, 1] = expected[1, 0] = 1.0
    np.testing.assert_allclose(index, expected, atol=1e-12)
    np.testing.assert_allclose(shapley_values(both), [0.5, 0.5, 0, 0], atol=1e-12)


def test_a_batch_of_games_is_each_game_on_its_own():
    rng = np.random.default_rng(3)
    batch = rng.normal(size=(3, 2, 1 << 4))
    np.testing.assert_allclose(
        module.interaction_values(batch)[2, 1], module.interaction_values(batch[2, 1]), atol=1e-12
    )
    unions = [[0, 2], [1, 3]]
    np.testing.assert_allclose(module.owen_values(batch, unions)[1, 0], module.owen_values(batch[1, 0], unions))


@settings(deadline=None)
@given(structures())
def test_owen_values_are_the_mean_over_orders_that_keep_each_union_together(case):
    game, unions = case
    np.testing.assert_allclose(module.owen_values(game, unions), owen_by_orders(game, unions), atol=1e-7)


@settings(deadline=None)
@given(structures())
def test_owen_values_add_up_within_a_union_to_its_value_in_the_quotient_game(case):
    """Efficiency and the quotient-game property; one union of everyone, or singletons, give Shapley."""
    game, unions = case
    d = game.shape[-1].bit_length() - 1
    owen = module.owen_values(game, unions)
    quotient = shapley_values(module.quotient_game(game, unions))
    np.testing.assert_allclose([owen[union].sum() for union in unions], quotient, atol=1e-7)
    assert owen.sum() == pytest.approx(game[-1] - game[0], abs=1e-7)
    phi = shapley_values(game)
    np.testing.assert_allclose(module.owen_values(game, [list(range(d))]), phi, atol=1e-8)
    np.testing.assert_allclose(module.owen_values(game, [[j] for j in range(d)]), phi, atol=1e-8)


def test_symmetric_players_of_one_union_get_equal_owen_values():
    """v depends on players 0 and 1 only through how many of them are in S: they are symmetric."""
    sets = np.arange(1 << 4)
    game = ((sets & 1) + (sets >> 1 & 1)) ** 2 + 5.0 * (sets >> 3 & 1) * (sets >> 2 & 1)
    owen = module.owen_values(game.astype(float), [[0, 1, 2], [3]])
    assert owen[0] == pytest.approx(owen[1], abs=1e-12)


def test_the_quotient_game_values_the_unions_members_together():
    game = np.arange(16, dtype=float)  # v(S) = S's bits as a number
    quotient = module.quotient_game(game, [[1, 3], [0], [2]])
    assert quotient.tolist() == [0, 0b1010, 0b0001, 0b1011, 0b0100, 0b1110, 0b0101, 0b1111]


@pytest.mark.parametrize("unions", [[[0, 1], [1, 2]], [[0], [2]], [[0, 1, 2], []], [[0, 1, 2, 5]]])
def test_unions_must_partition_the_players(unions):
    with pytest.raises(ValueError, match="must partition the 3 players"):
        module.owen_values(np.zeros(8), unions)


@settings(deadline=None)
@given(games(max_d=4))
def test_anchored_terms_are_the_dividends_up_to_an_order(game):
    """The paper's Theorem 1: phi_j = sum over T containing j of g_T / |T|; every term of every order
    adds up to v(1:d) - v({})."""
    d = game.shape[-1].bit_length() - 1
    sets, terms = module.anchored_terms(game, d)
    assert sorted(sets.tolist()) == list(range(1, 1 << d))
    assert [size(s) for s in sets] == sorted(size(s) for s in sets)
    assert terms.sum() == pytest.approx(game[-1] - game[0], abs=1e-7)
    phi = [sum(term / size(s) for s, term in zip(sets, terms) if s >> j & 1) for j in range(d)]
    np.testing.assert_allclose(phi, shapley_values(game), atol=1e-7)
    first, firsts = module.anchored_terms(game, 1)
    assert first.tolist() == [1 << j for j in range(d)]
    np.testing.assert_allclose(firsts, game[first] - game[0], atol=1e-9)
    with pytest.raises(ValueError, match="max_order must be at least 1"):
        module.anchored_terms(game, 0)
