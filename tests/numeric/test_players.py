"""Players made of several features on the masks themselves: the re-keyed histogram against building
each player's cohort directly, and Owen values from the reduced games against the full game's."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cohortsql.numeric import dividends, players
from cohortsql.numeric.shapley import superset_sums


@st.composite
def histograms(draw, max_d=7):
    """A histogram over d feature masks for a few targets (repeated masks allowed) and a partition of
    the features into players, with a small word size so that masks span several words."""
    d = draw(st.integers(1, max_d))
    entries = draw(st.integers(1, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    order = rng.permutation(d)
    cuts = sorted(rng.choice(np.arange(1, d), size=rng.integers(0, d), replace=False)) if d > 1 else []
    unions = [sorted(int(j) for j in part) for part in np.split(order, cuts) if len(part)]
    histogram = {
        "target": rng.integers(0, 3, entries),
        "mask": rng.integers(0, 1 << d, entries),
        "w0": rng.integers(1, 4, entries),
        "s0_0": rng.normal(size=entries),
    }
    return d, unions, histogram


def words(masks, d, bits):
    return {f"mask{w}": (masks >> (w * bits)) & ((1 << bits) - 1) for w in range(-(-d // bits))}


@settings(max_examples=60, deadline=None)
@given(histograms(), st.integers(2, 4))
def test_player_histograms_equal_cohorts_built_player_by_player(case, bits):
    """Whatever the word size: the weight and sum of each (target, player mask) are those of the entries
    whose feature mask holds exactly those players' features whole."""
    d, unions, histogram = case
    masks = [sum(1 << j for j in union) for union in unions]
    given_ = {
        "target": histogram["target"],
        **words(histogram["mask"], d, bits),
        "w0": histogram["w0"],
        "s0_0": histogram["s0_0"],
    }
    result = players.histogram_of_players(given_, masks, bits)
    joined = sum(result[f"mask{w}"] << (w * bits) for w in range(-(-len(masks) // bits)))
    expected = {}
    for target, mask, weight, total in zip(*histogram.values()):
        key = (target, sum(1 << p for p, player in enumerate(masks) if mask & player == player))
        old = expected.get(key, (0.0, 0.0))
        expected[key] = (old[0] + weight, old[1] + total)
    got = {(t, m): (w, s) for t, m, w, s in zip(result["target"], joined, result["w0"], result["s0_0"])}
    assert got.keys() == expected.keys()
    for key, (weight, total) in expected.items():
        assert got[key][0] == weight and abs(got[key][1] - total) < 1e-12


@settings(max_examples=60, deadline=None)
@given(histograms(max_d=6))
def test_owen_values_of_reduced_games_equal_those_of_the_whole_game(case):
    """The reduced game of a union (other unions whole, its members alone), built from the re-keyed
    histogram, gives its members the Owen values the game of every feature gives them."""
    d, unions, histogram = case
    one = histogram["target"] == 0
    counts = np.bincount(histogram["mask"][one], weights=histogram["w0"][one], minlength=1 << d)
    whole = superset_sums(counts)  # |C_u| for every set of features: a game that needs no cohort to be non-empty
    expected = dividends.owen_values(whole, unions)
    for index in range(len(unions)):
        reduced = players.union_game(unions, index)
        part = players.histogram_of_players(
            {"target": histogram["target"], "mask0": histogram["mask"], "w0": histogram["w0"]}, reduced.players, 62
        )
        mine = part["target"] == 0
        size = len(reduced.players)
        game = superset_sums(np.bincount(part["mask0"][mine], weights=part["w0"][mine], minlength=1 << size))
        owen = dividends.owen_values(game, reduced.unions, only=len(reduced.unions) - 1)
        np.testing.assert_allclose(owen[size - len(reduced.members) :], expected[reduced.members], atol=1e-9)
        assert not owen[: size - len(reduced.members)].any()  # `only`: the other unions are left at 0


@settings(max_examples=40)
@given(
    seed=st.integers(0, 2**31 - 1),
    copies=st.integers(1, 5),
    width=st.integers(1, 2),
    entries=st.integers(1, 300),
)
def test_reductions_that_share_players_equal_each_reduction_alone(seed, copies, width, entries):
    """`histograms_of_reductions` (a null reference's copies: every reduction the same players but at
    one place, where copy b's `width` features stand) equals `histogram_of_players` of each reduction;
    a player of two features among the shared ones."""
    rng = np.random.default_rng(seed)
    d = 4
    histogram = {
        "target": rng.integers(0, 5, entries),
        "mask0": rng.integers(0, 1 << (d + copies * width), entries),
        "w0": rng.uniform(size=entries),
        "s0": rng.normal(size=entries),
    }

    def copy_bits(copy: int) -> int:
        return sum(1 << (d + copy * width + slot) for slot in range(width))

    reductions = [[0b1, copy_bits(copy), 0b1001, 0b100] for copy in range(copies)]
    together = list(players.histograms_of_reductions(histogram, reductions, 63))
    assert len(together) == copies
    for reduction, found in zip(reductions, together):
        alone = players.histogram_of_players(histogram, reduction, 63)
        assert found.keys() == alone.keys()
        for name in alone:
            np.testing.assert_allclose(found[name], alone[name], atol=1e-12)
