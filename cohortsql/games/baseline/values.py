"""Baseline and all-baseline Shapley in pure numpy (paper, Section 5 and Appendix 4). No SQL, no I/O.

For a target t, a baseline row x_b and a set u of predictors, the hybrid point
z_b(u) = (x_{t,u} : x_{b,-u}) takes t's values on u and b's elsewhere, and the game is
v_b(u) = f(z_b(u)) - f(x_b). Baseline Shapley (BS) has one baseline, all-baseline Shapley (ABS)
every subject; over a set B of baselines

    phi_j = (1/|B|) sum_b sum_{u not containing j} w(|u|) (v_b(u + j) - v_b(u)),

and the squared version phi2_j is the same mean of the Shapley values of the games v_b(u)^2.
Shapley values are linear in the game, so phi = Shapley(mean_b v_b) and phi2 = Shapley(mean_b v_b^2):
one transform per target, whatever |B|.

The realistic part multiplies each term (b, u, j) by 1[z_b(u) realistic] 1[z_b(u + j) realistic],
which is not a game of u alone, so it is summed term by term (`realistic_parts`); the unrealistic
part is the total minus it.

Points are integer codes: each feature's distinct values among the targets and baselines are
numbered, and a hybrid point is the row of its d codes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from cohortsql.numeric.shapley import set_sizes, shapley_values, shapley_weights


def hybrid_codes(target_codes: np.ndarray, baseline_codes: np.ndarray, sets: np.ndarray | None = None) -> np.ndarray:
    """Codes of the hybrid points z_b(u) for every set u of `sets` (sets of features as the integers of
    their bits; default all 2^d), shape (targets, baselines, sets, d).

    `target_codes` is (targets, d), `baseline_codes` (baselines, d); feature j of z_b(u) is the
    target's code when bit j of u is set and the baseline's otherwise."""
    d = target_codes.shape[1]
    chosen = np.arange(1 << d) if sets is None else np.asarray(sets, dtype=np.int64)
    taken = (chosen[:, None] >> np.arange(d) & 1).astype(bool)  # (sets, d): j in u
    return np.where(taken[None, None], target_codes[:, None, None, :], baseline_codes[None, :, None, :])


def player_sets(players: Sequence[Sequence[int]]) -> np.ndarray:
    """For every set U of players (groups of features: lists of feature indices), the set of their
    features as the integer of its bits, in the order of U's own bits (2^m entries)."""
    masks = [sum(1 << feature for feature in members) for members in players]
    sets = np.zeros(1 << len(masks), dtype=np.int64)
    for player, mask in enumerate(masks):
        sets[1 << player : 2 << player] = sets[: 1 << player] | mask
    return sets


def distinct_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a (points, d) code array and, for every point, its row among them.

    Rows are packed into one int64 key when the codes' mixed-radix range fits, else compared as bytes."""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    sizes = codes.max(axis=0) + 1 if len(codes) else np.ones(codes.shape[1], dtype=np.int64)
    if float(np.prod(sizes.astype(np.float64))) < 2.0**62:
        places = np.concatenate(([1], np.cumprod(sizes[:-1]))).astype(np.int64)
        _, first, inverse = np.unique(codes @ places, return_index=True, return_inverse=True)
    else:
        rows = codes.view(np.dtype((np.void, codes.dtype.itemsize * codes.shape[1]))).ravel()
        _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    return codes[first], inverse.reshape(-1)


class BaselineValues(NamedTuple):
    """phi and phi2 of one batch of targets (shape (targets, d) each), and with realism their realistic
    parts and how many hybrid points were realistic per target."""

    shapley: np.ndarray
    shapley_squared: np.ndarray
    realistic: np.ndarray | None
    realistic_squared: np.ndarray | None
    realistic_points: np.ndarray | None


def baseline_games(predictions: np.ndarray) -> np.ndarray:
    """v_b(u) = f(z_b(u)) - f(x_b) from f at every hybrid point, shape (targets, baselines, 2^d).

    z_b(empty set) is the baseline itself, so v_b(empty set) = 0 exactly."""
    return predictions - predictions[..., :1]


def baseline_shapley_values(games: np.ndarray, realistic: np.ndarray | None) -> BaselineValues:
    """phi_j and phi2_j (mean over the baselines of the Shapley values of v_b and v_b^2) for games of
    shape (targets, baselines, 2^d); with `realistic` (same shape, booleans) also their realistic parts."""
    phi = shapley_values(games.mean(axis=1))
    phi2 = shapley_values((games**2).mean(axis=1))
    if realistic is None:
        return BaselineValues(phi, phi2, None, None, None)
    real, real2 = realistic_parts(games, realistic)
    return BaselineValues(phi, phi2, real, real2, realistic.sum(axis=(1, 2)))


def realistic_parts(games: np.ndarray, realistic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The realistic parts of phi and phi2 (paper, Appendix 4):

    (1/|B|) sum_b sum_{u not containing j} w(|u|) 1[z_b(u) real] 1[z_b(u + j) real] (g_b(u + j) - g_b(u))

    for g = v and g = v^2, from games and realism flags of shape (targets, baselines, 2^d).
    With every point realistic this is the weighted-marginal definition of the Shapley value itself."""
    targets, baselines, length = games.shape
    d = length.bit_length() - 1
    weights = shapley_weights(d) if d else np.zeros(0)
    sizes = set_sizes(d)
    sets = np.arange(length)
    parts = np.zeros((2, targets, d))
    squared = games**2
    for j in range(d):
        without = sets[(sets >> j & 1) == 0]
        with_j = without | (1 << j)
        both = realistic[..., with_j] & realistic[..., without]
        for index, game in enumerate((games, squared)):
            change = np.where(both, game[..., with_j] - game[..., without], 0.0)
            parts[index, :, j] = change.sum(axis=1) @ weights[sizes[without]] / baselines
    return parts[0], parts[1]
