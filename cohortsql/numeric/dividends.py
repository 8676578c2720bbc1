"""What the 2^d values of a game hold beyond its Shapley values, through its Harsanyi dividends
(Moebius terms) g_T, in pure numpy (docs/design.md §5). No SQL, no I/O.

Conventions of `cohortsql.numeric.shapley`: a set is the integer of its bits, a game an array whose
last axis has length 2^d (earlier axes batch over targets). Every quantity here is a linear map of
the dividends, which one pass of d vectorised steps gives from the game (the inverse of the superset
sum's mirror, the subset sum v(S) = sum over T in S of g_T):

- the paper's Theorem 1 (the anchored decomposition): phi_j = sum over T containing j of g_T / |T|;
- the Shapley interaction index of a pair (Grabisch & Roubens 1999):
  I_ij = sum over T containing {i, j} of g_T / (|T| - 1);
- the Owen value under unions B_1..B_m (Owen 1977): each dividend is split equally among the unions
  T meets, then equally among T's members in each: Owen_j = sum over T containing j of
  g_T / (m_T |T intersect B(j)|), m_T the number of unions T meets;
- a union as one player: the quotient game v_Q(S) = v(union of the B_k, k in S).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cohortsql.numeric.shapley import bit_halves, game_dimension, set_sizes, shapley_values, superset_sums


def dividends(game: np.ndarray) -> np.ndarray:
    """g_T = sum over S in T of (-1)^(|T| - |S|) v(S), along the last axis; returns a new array.

    The paper's Theorem 1 writes phi_j = sum over u containing j of g_u / |u| with these g (its
    anchored decomposition, anchored at the empty set: v(u) = sum over T in u of g_T)."""
    result = np.array(game, dtype=np.float64, copy=True, order="C")
    for bit in range(game_dimension(result)):
        halves = bit_halves(result, bit)
        halves[:, 1, :] -= halves[:, 0, :]
    return result


def pairs(d: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs i < j of d players, as two index arrays (numpy's upper-triangle order)."""
    first, second = np.triu_indices(d, 1)
    return first, second


def interaction_index(game: np.ndarray) -> np.ndarray:
    """The Shapley interaction index of every pair, shape (..., d, d), symmetric with a zero diagonal.

    I_ij = sum over S not meeting {i, j} of |S|! (d - |S| - 2)! / (d - 1)! times
    v(S + ij) - v(S + i) - v(S + j) + v(S); through the dividends it is the sum over T containing
    {i, j} of g_T / (|T| - 1), which one superset-sum transform gives for every pair at once:
    O(d 2^d) per game, as for phi."""
    game = np.asarray(game, dtype=np.float64)
    d = game_dimension(game)
    sizes = set_sizes(d)
    scaled = dividends(game)
    scaled *= np.where(sizes >= 2, 1.0 / np.maximum(sizes - 1, 1), 0.0)
    above = superset_sums(scaled)
    first, second = pairs(d)
    index = np.zeros((*game.shape[:-1], d, d))
    index[..., first, second] = above[..., (1 << first) | (1 << second)]
    index[..., second, first] = index[..., first, second]
    return index


def interaction_values(game: np.ndarray, shapley: np.ndarray | None = None) -> np.ndarray:
    """Shapley interaction values in shap's convention, shape (..., d, d): Phi_ij = Phi_ji = I_ij / 2
    off the diagonal and Phi_ii = phi_i - sum over j != i of Phi_ij, so that row i sums to phi_i and
    every entry sums to v(1:d) - v({}). `shapley` are the game's Shapley values when already known."""
    phi = shapley_values(game) if shapley is None else shapley
    values = interaction_index(game) / 2
    diagonal = np.arange(values.shape[-1])
    values[..., diagonal, diagonal] = phi - values.sum(axis=-1)
    return values


def union_masks(unions: Sequence[Sequence[int]], d: int) -> np.ndarray:
    """Each union's members as a set (bits), after checking that the unions partition 0..d-1."""
    masks = np.array([sum(1 << member for member in union) for union in unions], dtype=np.int64)
    members = sorted(member for union in unions for member in union)
    if members != list(range(d)) or any(len(union) == 0 for union in unions):
        raise ValueError(f"unions must partition the {d} players into non-empty sets, got {unions!r}")
    return masks


def quotient_game(game: np.ndarray, unions: Sequence[Sequence[int]]) -> np.ndarray:
    """The game of the unions as players: v_Q(S) = v(union of B_k for k in S), shape (..., 2^m)."""
    game = np.asarray(game, dtype=np.float64)
    masks = union_masks(unions, game_dimension(game))
    coalitions = np.arange(1 << len(masks))
    members = ((coalitions[:, None] >> np.arange(len(masks))) & 1) @ masks
    return game[..., members]


def owen_values(game: np.ndarray, unions: Sequence[Sequence[int]], only: int | None = None) -> np.ndarray:
    """Owen values of every player under the union structure `unions` (lists of player indices that
    partition 0..d-1), shape (..., d): the mean marginal contribution over the orders in which each
    union's members come together, as sum over T containing j of g_T / (m_T |T intersect B(j)|).
    With `only` (an index into `unions`), the members of that union alone (the others stay 0): one
    transform instead of one per union.

    The players of one union add up to that union's Shapley value in `quotient_game`; with one union
    of everyone, or every player alone, they are the Shapley values."""
    game = np.asarray(game, dtype=np.float64)
    d = game_dimension(game)
    masks = union_masks(unions, d)
    sets, sizes = np.arange(1 << d, dtype=np.int64), set_sizes(d)
    inside = [sizes[sets & mask].astype(np.float64) for mask in masks]
    met = sum((count > 0).astype(np.float64) for count in inside)
    split = dividends(game)
    values = np.zeros((*game.shape[:-1], d))
    for index, (union, count) in enumerate(zip(unions, inside)):
        if only is not None and index != only:
            continue
        share = np.where(count > 0, 1.0 / np.maximum(met * count, 1.0), 0.0)
        above = superset_sums(split * share)
        members = np.asarray(union, dtype=np.int64)
        values[..., members] = above[..., 1 << members]
    return values


def sets_up_to(d: int, max_order: int) -> np.ndarray:
    """The sets of 1..`max_order` of d players, in order of size then of bits."""
    if max_order < 1:
        raise ValueError(f"max_order must be at least 1, got {max_order}")
    sizes = set_sizes(d)
    chosen = np.flatnonzero((sizes >= 1) & (sizes <= max_order))
    return chosen[np.argsort(sizes[chosen], kind="stable")]


def anchored_terms(game: np.ndarray, max_order: int) -> tuple[np.ndarray, np.ndarray]:
    """The dividends g_T of the sets of 1..`max_order` players (the paper's anchored decomposition,
    v(1:d) - v({}) = the sum of every g_T), as (`sets_up_to`, g_T of shape (..., sets))."""
    game = np.asarray(game, dtype=np.float64)
    chosen = sets_up_to(game_dimension(game), max_order)
    return chosen, dividends(game)[..., chosen]
