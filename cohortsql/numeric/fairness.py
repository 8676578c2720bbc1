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

from collections.abc import Iterator
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
    return metrics_of(extremes(rates))


Extremes = dict[str, tuple[np.ndarray, np.ndarray]]
"""Each rate's smallest and largest value over a set of groups (NaN where no group has it): what the
metrics between groups read, and what two sets of groups combine into (`merged`)."""


def extremes(rates: dict[str, np.ndarray]) -> Extremes:
    """Each rate's (low, high) over the groups (axis 0), NaN where no group has the rate."""
    found = {}
    for name, values in rates.items():
        present = ~np.isnan(values)
        some = present.any(axis=0)
        high = np.where(some, np.nanmax(np.where(present, values, -np.inf), axis=0), np.nan)
        low = np.where(some, np.nanmin(np.where(present, values, np.inf), axis=0), np.nan)
        found[name] = (low, high)
    return found


def merged(first: Extremes | None, second: Extremes) -> Extremes:
    """The extremes over the groups of both (NaN-aware)."""
    if first is None:
        return second
    return {name: (np.fmin(first[name][0], low), np.fmax(first[name][1], high)) for name, (low, high) in second.items()}


def metrics_of(found: Extremes) -> dict[str, np.ndarray]:
    """The metrics between groups from each rate's extremes."""
    low, high = found["selection_rate"]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(high > 0, low / np.where(high > 0, high, 1.0), np.nan)
    metrics = {"demographic_parity_difference": high - low, "demographic_parity_ratio": ratio}
    if "true_positive_rate" in found:
        positive, negative = found["true_positive_rate"], found["false_positive_rate"]
        metrics["equalized_odds_difference"] = np.fmax(positive[1] - positive[0], negative[1] - negative[0])
    return metrics


REPLICATE_ENTRIES = 1 << 22
"""Cells x replicates drawn at once (32 MB of doubles, as many again for each rate): a bootstrap of
100,000 replicates over 1,000 groups is drawn a few groups at a time, never all at once (2.96 GiB)."""


def replicate_rates(cells: Cells, replicates: int, seed: int) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """Consecutive chunks of the groups (their numbers) and their rates under `replicates` Bayesian-bootstrap
    reweightings of the rows, (groups of the chunk, B): each group's cells drawn from a generator of its
    own, seeded with (`seed`, group), so that the draws do not depend on how the groups are chunked, and
    each chunk holds at most `REPLICATE_ENTRIES` cell draws (or one group's)."""
    order = np.argsort(cells.group, kind="stable")
    bounds = np.searchsorted(cells.group[order], np.arange(cells.groups + 1))
    first = 0
    while first < cells.groups:
        last = first + 1
        while last < cells.groups and (bounds[last + 1] - bounds[first]) * replicates <= REPLICATE_ENTRIES:
            last += 1
        rows = order[bounds[first] : bounds[last]]
        part = Cells(
            group=cells.group[rows] - first,
            decision=cells.decision[rows],
            observed=None if cells.observed is None else cells.observed[rows],
            weight=cells.weight[rows],
            weight_squared=cells.weight_squared[rows],
            groups=last - first,
        )
        drawn = np.concatenate(
            [
                replicate_weights(_group_cells(part, group), replicates, seed, group + first)
                for group in range(last - first)
            ]
        )
        yield np.arange(first, last), group_rates(part, drawn)
        first = last


def _group_cells(cells: Cells, group: int) -> Cells:
    """The cells of one group (of cells ordered by group)."""
    rows = cells.group == group
    return Cells(
        group=cells.group[rows],
        decision=cells.decision[rows],
        observed=None if cells.observed is None else cells.observed[rows],
        weight=cells.weight[rows],
        weight_squared=cells.weight_squared[rows],
        groups=cells.groups,
    )


def replicate_weights(cells: Cells, replicates: int, seed: int, group: int) -> np.ndarray:
    """Each cell's weight under `replicates` Bayesian-bootstrap reweightings of its rows, (cells, B):
    Gamma draws of the cell's weight's mean and variance (see the module's docstring), from the
    generator of (`seed`, `group`)."""
    draws = np.random.default_rng([seed, group])
    shape = cells.weight**2 / cells.weight_squared
    scale = cells.weight_squared / cells.weight
    return draws.gamma(shape[:, None], scale[:, None], size=(len(cells.weight), replicates))
