"""Players made of several features, on the similarity masks themselves (docs/design.md §5). Pure numpy.

A player P is a set of features; a subject is similar to the target on P when it is similar on every
member (the conjunction of their similarities). So a histogram over masks of features becomes a
histogram over masks of players by one bit test per player, and every cohort game of the players
(v_CS, v_CS2, v_var, v_U) follows from it as from a histogram of single features: the cohort of a set
of players is the cohort of the union of their members.

Owen values need, for the features of one union B_k, only the sets made of whole other unions plus
some of B_k's members; the histogram over the players (each other union whole, each member of B_k
alone) gives exactly those sets, 2^(m - 1 + |B_k|) of them instead of 2^d.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from cohortsql.numeric import dividends


def player_masks(
    words: Sequence[np.ndarray], players: Sequence[int], word_bits: int, *, skip_empty: bool = False
) -> list[np.ndarray]:
    """Masks over players from masks over features: bit p is set when every feature of `players[p]`
    (a set of features as the integer of its bits) is set. `words` hold the feature masks `word_bits`
    bits each (word w holds features w * word_bits ...); the result too, one word per `word_bits` players.
    With `skip_empty`, a player of no feature stands for no bit (not for a bit always set)."""
    low_bits = (1 << word_bits) - 1
    result = [np.zeros(len(words[0]), dtype=np.int64) for _ in range(max(1, -(-len(players) // word_bits)))]
    for index, player in enumerate(players):
        if skip_empty and not player:
            continue
        present = np.ones(len(words[0]), dtype=bool)
        for word, mask in enumerate(words):
            part = (player >> (word * word_bits)) & low_bits
            if part:
                present &= (mask & np.int64(part)) == part
        result[index // word_bits] |= present.astype(np.int64) << np.int64(index % word_bits)
    return result


def histogram_of_players(
    histogram: Mapping[str, np.ndarray], players: Sequence[int], word_bits: int
) -> dict[str, np.ndarray]:
    """A mask histogram (``target``, feature masks ``mask0``.., sums) as the histogram over `players`:
    the masks become player masks (`player_masks`) and entries that now share a target and mask are
    added up (every other column is a sum)."""
    masks = player_masks(_mask_words(histogram), players, word_bits)
    return _summed(histogram, masks, len(players))


def histograms_of_reductions(
    histogram: Mapping[str, np.ndarray], reductions: Sequence[Sequence[int]], word_bits: int
) -> Iterator[dict[str, np.ndarray]]:
    """`histogram_of_players` of each set of players of `reductions` in turn, the players that every
    reduction has at the same place made once (a null reference's copies differ in one player: its other
    players' bits are found once per histogram, not once per copy)."""
    words = _mask_words(histogram)
    size = len(reductions[0]) if reductions else 0
    shared = {
        place
        for place in range(size)
        if all(len(players) == size and players[place] == reductions[0][place] for players in reductions)
    }
    if size > word_bits or not shared:
        for players in reductions:
            yield _summed(histogram, player_masks(words, players, word_bits), len(players))
        return
    common = [reductions[0][place] if place in shared else 0 for place in range(size)]
    base = player_masks(words, common, word_bits, skip_empty=True)
    for players in reductions:
        own = [0 if place in shared else players[place] for place in range(size)]
        yield _summed(histogram, [base[0] | player_masks(words, own, word_bits, skip_empty=True)[0]], size)


def summed_duplicates(histogram: Mapping[str, np.ndarray], d: int) -> dict[str, np.ndarray]:
    """A mask histogram (``target``, masks ``mask0``.. of `d` bits, sums) with the entries that share
    a target and mask added up: the histogram of the union of partial histograms (a UNION ALL)."""
    return _summed(histogram, _mask_words(histogram), d)


def _mask_words(histogram: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    return [histogram[name] for name in sorted((key for key in histogram if key.startswith("mask")), key=_word)]


def _summed(histogram: Mapping[str, np.ndarray], masks: Sequence[np.ndarray], bits: int) -> dict[str, np.ndarray]:
    """The histogram's sums added up over entries of the same target and `masks` (of `bits` bits)."""
    sums = [name for name in histogram if name != "target" and not name.startswith("mask")]
    target = np.asarray(histogram["target"], dtype=np.int64)
    slots = (int(target.max(initial=0)) + 1) << bits
    if len(masks) == 1 and slots <= DENSE_KEYS:
        # every (target, mask) a slot of one array: counted, not sorted (a wide histogram re-keyed for each of
        # a null reference's copies: 4,000,000 entries in 20 ms, against 0.4 s for a unique)
        key = (target << bits) | masks[0]
        present = np.flatnonzero(np.bincount(key, minlength=slots))
        position = np.zeros(slots, dtype=np.int64)
        position[present] = np.arange(len(present))
        entry = position[key]
        merged = {
            name: np.bincount(entry, weights=np.asarray(histogram[name], dtype=np.float64), minlength=len(present))
            for name in sums
        }
        return {"target": present >> bits, "mask0": present & ((1 << bits) - 1), **merged}
    if len(masks) == 1 and slots < 1 << 62:
        # one integer key per entry: a 1-D unique is several times faster than one over rows
        distinct, inverse = np.unique((target << bits) | masks[0], return_inverse=True)
        keys = [distinct >> bits, distinct & ((1 << bits) - 1)]
    else:
        rows, inverse = np.unique(np.column_stack([target, *masks]), axis=0, return_inverse=True)
        keys = [rows[:, column].copy() for column in range(rows.shape[1])]
    inverse = inverse.reshape(-1)
    merged = {
        name: np.bincount(inverse, weights=np.asarray(histogram[name], dtype=np.float64), minlength=len(keys[0]))
        for name in sums
    }
    return {"target": keys[0], **{f"mask{index}": mask for index, mask in enumerate(keys[1:])}, **merged}


DENSE_KEYS = 1 << 25
"""Up to this many (target, mask) slots, entries are added up by counting into one array of slots."""


def _word(name: str) -> int:
    return int(name.removeprefix("mask"))


class UnionGame(NamedTuple):
    """The players whose game gives the Owen values of one union's members, and that union's place."""

    players: list[int]
    """Every other union whole, then each member of the union alone (sets of features as bits)."""
    unions: list[list[int]]
    """The union structure over those players: each other union alone, the members together (last)."""
    members: list[int]
    """The union's features, in the order of the last players."""


def union_game(unions: Sequence[Sequence[int]], union: int) -> UnionGame:
    """The reduced game of `union` (an index into `unions`, which partition the features): Owen values
    of its members there equal those in the game of every feature."""
    others = [sum(1 << feature for feature in members) for index, members in enumerate(unions) if index != union]
    members = list(unions[union])
    players = others + [1 << feature for feature in members]
    structure = [[index] for index in range(len(others))] + [list(range(len(others), len(players)))]
    return UnionGame(players, structure, members)


def members_owen(game: np.ndarray, reduced: UnionGame) -> np.ndarray:
    """The Owen values of the union's members (the features of `reduced.members`, in that order) from
    dense games over its reduced players, (..., 2^players) -> (..., members)."""
    owen = dividends.owen_values(game, reduced.unions, only=len(reduced.unions) - 1)
    return owen[..., len(reduced.players) - len(reduced.members) :]
