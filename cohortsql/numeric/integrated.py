"""Integrated gradient cohort Shapley (IGCS; Hama, Mase & Owen, "Model free variable importance for
high dimensional data", 2022), exactly, from one small histogram per target (pure numpy, no I/O).

For target t, subject i and player j let S_ij = 1 when i is similar to t on j. The cohort is softened
to s_z(i) = prod_j (1 + z_j (S_ij - 1)) for z in [0, 1]^d, and nu(z) = sum_i w_i s_z(i) y_i / sum_i
w_i s_z(i); IGCS_j(t) = integral over a in [0, 1] of d nu / d z_j at z = a 1. With k_i the number of
players on which i is not similar to t and q = 1 - a, s_{a1}(i) = q^k_i, so with the histogram

    C_k = sum of w_i over i with k_i = k,          Y_k = sum of w_i y_i over them,
    C_jk, Y_jk = the same over those also not similar on j,

nu = N / D with D(q) = sum_k C_k q^k, N(q) = sum_k Y_k q^k, and d/dz_j of D and N are
-sum_k C_jk q^(k-1) and -sum_k Y_jk q^(k-1). D >= C_0 > 0 (t is similar to itself), so the integrand
(dN_j D - N dD_j) / D^2 is smooth on [0, 1] and Gauss-Legendre rules converge fast; panels are split
until two rules agree (`integrate`). The values add up over the players to nu(1) - nu(0), the target's
cohort mean on every player less the overall mean (completeness). The squared variant integrates
2 (nu - ybar) d nu / d z_j, which adds up to (nu(1) - ybar)^2: its mean over targets splits the
variance of the full cohorts' means (`docs/design.md`).

IGCS equals cohort Shapley when nu is multilinear on the cube's corners and approximates it otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

RULE_NODES = 48
"""Nodes of the Gauss-Legendre rule on each panel; the panel's error is read from the rule of twice as many."""
TOLERANCE = 1e-13
"""Two rules must agree to this fraction of the batch's largest value (of each game) on every panel."""
ROUNDING = 64 * float(np.finfo(np.float64).eps)
"""A panel whose two rules agree to this fraction of the largest value is converged whatever its width:
a rule's rounding error, which splitting does not lower."""
MAX_PANELS = 4096
"""A panel is split at most until there are this many (never reached on real data: the integrand is a
ratio of polynomials with a denominator bounded away from 0)."""


@dataclass(frozen=True)
class IntegratedHistogram:
    """One batch of targets' histograms by k, the number of players a subject is not similar on.

    ``ks`` are the k that occur in the batch (increasing); for each target, each k and each game (an
    outcome under a weighting), the sums of the subjects with that k: their weight ``counts`` and
    weighted ``sums`` of y - `shift`, and per player, the same over those not similar on it."""

    ks: np.ndarray
    """(K,) the exponents: the numbers of dissimilar players that occur."""
    counts: np.ndarray
    """C_k: (targets, weightings, K)."""
    sums: np.ndarray
    """Y_k: (targets, games, K), games ordered outcome-major then weighting (`cohortsql.request.measures`)."""
    player_counts: np.ndarray
    """C_jk: (targets, weightings, players, K)."""
    player_sums: np.ndarray
    """Y_jk: (targets, games, players, K)."""
    weighting_of_game: np.ndarray
    """(games,) the weighting (index into ``counts``' second axis) each game's sums are weighted by."""


@dataclass(frozen=True)
class IntegratedValues:
    """IGCS of a batch: each target's values of v (the cohort mean less the overall mean) and of its
    square, per game, and the rule that integrated them."""

    shapley: np.ndarray
    """IGCS_j(t): (targets, games, players); adds up to `full` over the players."""
    shapley_squared: np.ndarray
    """The integrated gradient of (nu - ybar)^2: (targets, games, players); adds up to `full` squared."""
    full: np.ndarray
    """nu(1) - nu(0): the cohort mean on every player less the overall mean, (targets, games)."""
    cohort_mean: np.ndarray
    """nu(1): the cohort mean on every player (of y less the sums' shift), (targets, games)."""
    nodes: int
    """How many points of the path the integrand was evaluated at (both rules, every panel)."""


@cache
def _rule(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [0, 1]."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    return (x + 1) / 2, w / 2


def _powers(q: np.ndarray, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """q^k and q^(k-1) for every k of `ks` and node q, each (K, nodes); q^(k-1) is 0 where k = 0 (no
    subject is dissimilar on a player with no dissimilar player)."""
    exponents = ks.astype(np.float64)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        power = np.power(q[None, :], exponents)
        lower = np.where(exponents > 0, np.power(q[None, :], np.maximum(exponents - 1, 0)), 0.0)
    return power, lower


def _path_weights(histogram: IntegratedHistogram, q: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The rule's sums that each player's values are linear in, (4, targets, games, K).

    With L_k(q) = q^(k-1), the integrand on player j is sum_k L_k (-Y_jk / D + C_jk N / D^2), and its
    squared variant the same times 2 (N / D - ybar): over a rule of nodes q_i and weights w_i, player
    j's integral is sum_k (-Y_jk a_k + C_jk b_k) with a_k = sum_i w_i L_k(q_i) / D(q_i) and b_k =
    sum_i w_i L_k(q_i) N(q_i) / D(q_i)^2 (and a'_k, b'_k with the factor 2 (N / D - ybar)): sums over
    the k alone, K of them, where evaluating every player's integrand at every node took K x players
    of them per node."""
    power, lower = _powers(q, histogram.ks)
    weighting = histogram.weighting_of_game
    denominator = _times(histogram.counts, power)[:, weighting]  # D: (T, G, nodes)
    numerator = _times(histogram.sums, power)  # N: (T, G, nodes)
    overall = histogram.sums.sum(axis=-1) / histogram.counts.sum(axis=-1)[:, weighting]  # nu at q = 1
    twice_deviation = 2.0 * (numerator / denominator - overall[..., None])
    of_sums = weights / denominator  # multiplies -Y_jk L_k
    of_counts = of_sums * numerator / denominator  # multiplies C_jk L_k
    per_node = np.stack([of_sums, of_counts, twice_deviation * of_sums, twice_deviation * of_counts])
    return _times(per_node, lower.T)


def _times(sums: np.ndarray, powers: np.ndarray) -> np.ndarray:
    """sums (..., K) @ powers (K, nodes) as one matrix product (BLAS), not one per leading index."""
    return (sums.reshape(-1, sums.shape[-1]) @ powers).reshape(*sums.shape[:-1], powers.shape[-1])


def integrate(histogram: IntegratedHistogram, *, tolerance: float = TOLERANCE) -> IntegratedValues:
    """IGCS and its squared variant for every target and game of the batch, by adaptive Gauss-Legendre
    quadrature over the path: each panel of [0, 1] is integrated by `RULE_NODES` and twice as many
    nodes, and split in halves until the two agree to `tolerance` of the largest value (of the values
    and of the squared values, separately) times the panel's share of the path; the finer rule's sums
    are kept."""
    player_counts = histogram.player_counts[:, histogram.weighting_of_game]  # C_jk of each game: (T, G, P, K)

    def on_panel(low: float, high: float, nodes: int) -> tuple[np.ndarray, np.ndarray]:
        x, w = _rule(nodes)
        sums, counts, squared_sums, squared_counts = _path_weights(histogram, low + (high - low) * x, (high - low) * w)
        return (
            _by_player(player_counts, counts) - _by_player(histogram.player_sums, sums),
            _by_player(player_counts, squared_counts) - _by_player(histogram.player_sums, squared_sums),
        )

    whole = on_panel(0.0, 1.0, 2 * RULE_NODES)
    scales = _scale(whole[0]), _scale(whole[1])
    values, squared = np.zeros_like(whole[0]), np.zeros_like(whole[1])
    panels, nodes, made = [(0.0, 1.0, whole)], 2 * RULE_NODES, 1
    while panels:
        low, high, fine = panels.pop()
        coarse = on_panel(low, high, RULE_NODES)
        nodes += RULE_NODES
        # the panel's share of the tolerance, never below what rounding leaves of the largest value
        allowed = max(tolerance * (high - low), ROUNDING)
        converged = all(np.abs(fine[part] - coarse[part]).max(initial=0.0) <= allowed * scales[part] for part in (0, 1))
        if converged or made + 2 > MAX_PANELS:
            values += fine[0]
            squared += fine[1]
            continue
        middle = (low + high) / 2
        for piece in ((low, middle), (middle, high)):
            panels.append((*piece, on_panel(*piece, 2 * RULE_NODES)))
            nodes += 2 * RULE_NODES
        made += 2
    if histogram.ks[0] != 0 or np.any(histogram.counts[..., 0] <= 0):
        raise ValueError("a target is missing from its own cohort: similarity is not reflexive")
    weighting = histogram.weighting_of_game
    full_cohort = histogram.sums[..., 0] / histogram.counts[..., 0][:, weighting]
    overall = histogram.sums.sum(axis=-1) / histogram.counts.sum(axis=-1)[:, weighting]
    return IntegratedValues(values, squared, full_cohort - overall, full_cohort, nodes)


def _by_player(per_player: np.ndarray, per_k: np.ndarray) -> np.ndarray:
    """sum_k per_player[t, g, j, k] per_k[t, g, k]: (T, G, P), one batched matrix product."""
    return (per_player @ per_k[..., None])[..., 0]


def _scale(values: np.ndarray) -> float:
    """The largest |value| of a panel's integral, or 1 when all are 0 (then any error is rounding)."""
    largest = float(np.abs(values).max(initial=0.0))
    return largest if largest > 0 else 1.0
