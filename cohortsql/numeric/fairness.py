"""Group fairness metrics of decisions, in fairlearn's vocabulary (pure numpy, no I/O).

The rows arrive as cells: one per group, decision (1: selected) and observed outcome (1: positive),
with the cell's total case weight W and its sum of squared weights S. Per group g:

- selection rate P(decision = 1 | g), fairlearn's ``selection_rate``;
- true positive rate P(decision = 1 | outcome = 1, g) and false positive rate
  P(decision = 1 | outcome = 0, g), fairlearn's ``true_positive_rate`` and ``false_positive_rate``;

and between the groups (fairlearn's ``method="between_groups"``): the demographic-parity difference
max_g - min_g of the selection rates and their ratio min_g / max_g, and the equalized-odds difference,
the larger of the differences of the true and of the false positive rates. A group with no row of an
outcome has no rate for it (NaN), and the comparisons between groups leave it out.

Intervals come from Rubin's Bayesian bootstrap, as everywhere in cohortsql: a replicate weighs row i
by w_i E_i with E_i ~ Exp(1). A cell's replicate weight is then a sum of independent draws, drawn at
once: for unweighted rows exactly Gamma(n_cell, 1) (a sum of n Exp(1)); with case weights a Gamma of
the same mean W and variance S as the sum of w_i E_i (shape W^2 / S, scale S / W), which is exact
when the cell's weights are equal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Cells:
    """Rows counted by group, decision and observed outcome."""

    group: np.ndarray
    """Each cell's group (an index into the groups)."""
    decision: np.ndarray
    """1 where the cell's rows were selected, else 0."""
    observed: np.ndarray | None
    """1 where the cell's rows had the positive outcome, else 0; None without an outcome."""
    weight: np.ndarray
    """The cell's total case weight (its row count when unweighted)."""
    weight_squared: np.ndarray
    """The cell's sum of squared case weights (its row count when unweighted)."""
    groups: int


def group_rates(cells: Cells, weight: np.ndarray) -> dict[str, np.ndarray]:
    """Each group's selection rate, and with outcomes its true and false positive rates, under the
    cells' `weight` (cells,) or one column per replicate (cells, B); NaN where a group has no row of
    the outcome a rate conditions on."""

    def total(mask: np.ndarray) -> np.ndarray:
        shape = (cells.groups, *weight.shape[1:])
        summed = np.zeros(shape)
        np.add.at(summed, cells.group, weight * mask.reshape(-1, *[1] * (weight.ndim - 1)))
        return summed

    def ratio(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)

    chosen = cells.decision == 1
    every = np.ones_like(chosen)
    rates = {"selection_rate": ratio(total(chosen), total(every))}
    if cells.observed is not None:
        positive = cells.observed == 1
        rates["true_positive_rate"] = ratio(total(chosen & positive), total(positive))
        rates["false_positive_rate"] = ratio(total(chosen & ~positive), total(~positive))
    return rates


def between_groups(rates: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The metrics between groups (axis 0) of `group_rates`: demographic-parity difference and ratio,
    and with outcomes the equalized-odds difference; groups without a rate are left out."""

    def spread(values: np.ndarray) -> np.ndarray:
        return difference(values)[0]

    def difference(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        present = ~np.isnan(values)
        high = np.where(present.any(axis=0), np.nanmax(np.where(present, values, -np.inf), axis=0), np.nan)
        low = np.where(present.any(axis=0), np.nanmin(np.where(present, values, np.inf), axis=0), np.nan)
        return high - low, low, high

    selection, low, high = difference(rates["selection_rate"])
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(high > 0, low / np.where(high > 0, high, 1.0), np.nan)
    metrics = {"demographic_parity_difference": selection, "demographic_parity_ratio": ratio}
    if "true_positive_rate" in rates:
        metrics["equalized_odds_difference"] = np.fmax(
            spread(rates["true_positive_rate"]), spread(rates["false_positive_rate"])
        )
    return metrics


def replicate_weights(cells: Cells, replicates: int, seed: int) -> np.ndarray:
    """Each cell's weight under `replicates` Bayesian-bootstrap reweightings of its rows, (cells, B):
    Gamma draws of the cell's weight's mean and variance (see the module's docstring)."""
    draws = np.random.default_rng(seed)
    shape = cells.weight**2 / cells.weight_squared
    scale = cells.weight_squared / cells.weight
    return draws.gamma(shape[:, None], scale[:, None], size=(len(cells.weight), replicates))
