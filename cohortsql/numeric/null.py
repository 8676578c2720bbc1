"""The null reference's figures from its draws (pure numpy): each player's observed share beside the
shares of B permuted copies of it. The copies' mean share is the floor an unrelated column reaches
through the sampling noise of small cohorts; the upper quantile bounds it; the permutation p-value is
(1 + #{copies whose share >= the observed one}) / (1 + B) (Phipson & Smyth, "Permutation p-values should
never be zero", 2010), so that p can reach 1 / (1 + B) and never 0."""

from __future__ import annotations

import numpy as np

TIE_TOLERANCE = 1e-12
"""A copy's share within this fraction of the largest share of the comparison counts as equal to the
observed one (a tie counts against the player): rounding never makes a share clear its null."""


def p_values(observed: np.ndarray, copies: np.ndarray) -> np.ndarray:
    """The permutation p-value of each player: `observed` (players,) against `copies` (players, B)."""
    scale = np.maximum(np.abs(observed), np.abs(copies).max(axis=-1, initial=0.0))
    at_least = copies >= (observed - TIE_TOLERANCE * scale)[:, None]
    return (1.0 + at_least.sum(axis=-1)) / (1.0 + copies.shape[-1])


def upper_quantiles(copies: np.ndarray, confidence: float) -> np.ndarray:
    """Each player's `confidence` quantile of its copies' shares (linear interpolation), (players,)."""
    return np.quantile(copies, confidence, axis=-1)


def smallest_p_value(copies: int) -> float:
    """The smallest p-value B copies can give: 1 / (1 + B)."""
    return 1.0 / (1.0 + copies)
