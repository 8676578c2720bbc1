"""Monte Carlo cohort Shapley for many predictors: random permutations over the mask histogram.

Pure numpy, no I/O (docs/design.md §2, the permutation method). For one target, SQL gives the distinct similarity masks
with their subject counts and sums of y. A permutation pi of the predictors defines a chain of
cohorts C_0 (every subject) > C_1 > ... > C_d, where C_i keeps the subjects similar to the target
on the first i predictors of pi. A mask group is in C_i when its prefix length L (how many leading
predictors of pi it contains) is at least i. The increment of v along the chain,
v(C_i) - v(C_{i-1}), is an unbiased estimate of phi_{pi(i)}; the increments of one permutation add
up to v(1:d) exactly, so every estimate is efficient. Permutations come in antithetic pairs (pi and
its reverse); the standard error of each value is that of the mean over pairs.

Interaction values (shap's convention, `cohortsql.numeric.dividends.interaction_values`) come from
the same permutations. For a pair {i, j}, let S be the players before the first of them in pi: its
size s has probability 2 (d - 1 - s) / (d (d - 1)) and, given s, S is uniform among the s-subsets of
the others. The Shapley interaction index weighs every s alike (1 / (d - 1)) and S uniformly given
s, so d / (2 (d - 1 - s)) (v(S + ij) - v(S + i) - v(S + j) + v(S)) is an unbiased estimate of I_ij
(importance sampling); v(S) and v(S + first) lie on the chain, the other two are one cohort each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from cohortsql.numeric.local_values import LocalValues
from cohortsql.numeric.shapley import importance_order

PAIRS_PER_ROUND = 8
"""Antithetic pairs drawn between two checks of the stopping rule."""

MIN_PAIRS = 8
"""No stop on `tolerance` before this many pairs: a standard error needs a few of them."""


class PermutationEstimate(NamedTuple):
    """Estimated cohort Shapley values of one target with their standard errors."""

    shapley: np.ndarray
    shapley_squared: np.ndarray
    shapley_se: np.ndarray
    shapley_squared_se: np.ndarray
    cohort_size: int
    cohort_mean: float
    path_order: np.ndarray
    """Features by decreasing |estimate|."""
    path_size: np.ndarray
    """Cohort sizes as the features of `path_order` are added one by one."""
    path_mean: np.ndarray
    """Cohort means along the same path."""
    feature_cohort_size: np.ndarray
    """|C_{t,{j}}| for each feature j: the subjects similar to the target on j alone."""
    permutations: int
    interactions: np.ndarray | None = None
    """When asked for: the interaction values of v_CS in shap's convention, (d, d); each row adds up
    to the row's feature's estimate in `shapley`."""
    interactions_se: np.ndarray | None = None
    """Their standard errors, (d, d)."""


def unpack_masks(words: list[np.ndarray], d: int, word_bits: int) -> np.ndarray:
    """Similarity masks split into words of `word_bits` bits -> bits, shape (d, masks)."""
    masks = len(words[0]) if words else 0
    bits = np.empty((d, masks), dtype=bool)
    for feature in range(d):
        word, bit = divmod(feature, word_bits)
        bits[feature] = (words[word] >> bit) & 1
    return bits


def prefix_lengths(bits: np.ndarray, complete: np.ndarray, order: np.ndarray) -> np.ndarray:
    """For each mask, how many leading predictors of `order` it contains (d for complete masks).

    Masks drop out of the chain at their first missing predictor, so the loop only touches the
    masks still in the cohort: cohorts shrink fast, and the cost stays far below masks x d.
    """
    d = len(order)
    lengths = np.full(bits.shape[1], d, dtype=np.int64)
    alive = np.flatnonzero(~complete)
    for position, feature in enumerate(order):
        if alive.size == 0:
            break
        keep = bits[feature, alive]
        lengths[alive[~keep]] = position
        alive = alive[keep]
    return lengths


def chain_cohorts(lengths: np.ndarray, counts: np.ndarray, sums: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """|C_i| and the sum of y over C_i for i = 0 .. d: C_i holds the masks with prefix length >= i."""
    sizes, totals = _chain_sums(lengths, np.stack([counts, sums]), d)
    return sizes, totals


def chain_values(lengths: np.ndarray, counts: np.ndarray, sums: np.ndarray, mean: float, d: int) -> np.ndarray:
    """v(C_i) = ybar_{C_i} - ybar for i = 0 .. d along one permutation's chain (v(C_0) = 0)."""
    sizes, totals = chain_cohorts(lengths, counts, sums, d)
    values = totals / sizes - mean
    values[0] = 0.0
    return values


def _increments(
    bits: np.ndarray,
    complete: np.ndarray,
    counts: np.ndarray,
    sums: np.ndarray,
    mean: float,
    order: np.ndarray,
    interactions: bool = False,
) -> np.ndarray:
    """One permutation's increments of v and of v^2 along its chain, each at its feature's place,
    shape (2, d); with `interactions`, followed by its sample of the interaction values, (2 + d, d)."""
    d = len(order)
    lengths = prefix_lengths(bits, complete, order)
    values = chain_values(lengths, counts, sums, mean, d)
    sample = np.empty((2 + d if interactions else 2, d))
    sample[0, order] = np.diff(values)
    sample[1, order] = np.diff(values**2)
    if interactions:
        sample[2:] = _interaction_sample(bits, lengths, counts, sums, mean, order, values, sample[0])
    return sample


def _interaction_sample(
    bits: np.ndarray,
    lengths: np.ndarray,
    counts: np.ndarray,
    sums: np.ndarray,
    mean: float,
    order: np.ndarray,
    values: np.ndarray,
    increments: np.ndarray,
) -> np.ndarray:
    """One permutation's unbiased sample of the interaction values in shap's convention, (d, d): half
    of each pair's importance-weighted second difference at the players before the first of the pair
    (see the module's docstring), and on the diagonal each feature's increment less its row."""
    d = len(order)
    sample = np.zeros((d, d))
    for position in range(d - 1):
        first, later = order[position], order[position + 1 :]
        alive = lengths >= position  # the masks of the cohort of S, the players before `first`
        member, weight, total = bits[:, alive], counts[alive], sums[alive]
        with_later = member[later]
        with_both = with_later & member[first]
        value_later = (with_later @ total) / (with_later @ weight) - mean
        value_both = (with_both @ total) / (with_both @ weight) - mean
        second = value_both - value_later - values[position + 1] + values[position]
        half = d / (2.0 * (d - 1 - position)) * second / 2.0
        sample[first, later] = half
        sample[later, first] = half
    sample[np.diag_indices(d)] = increments - sample.sum(axis=1)
    return sample


def estimate(
    bits: np.ndarray,
    counts: np.ndarray,
    sums: np.ndarray,
    mean: float,
    rng: np.random.Generator,
    *,
    max_permutations: int,
    tolerance: float | None,
    interactions: bool = False,
) -> PermutationEstimate:
    """Permutation estimate of one target's cohort Shapley values of v_CS and v_CS2 (and with
    `interactions`, of v_CS's interaction values, from the same permutations).

    `bits` (d, masks), `counts` and `sums` describe the target's distinct similarity masks. Stops
    after `max_permutations` permutations, or earlier once every standard error (of both games) is
    at most `tolerance`.
    """
    d = bits.shape[0]
    complete = np.asarray(bits.all(axis=0))
    pairs = 0
    rows = 2 + d if interactions else 2
    mean_pair = np.zeros((rows, d))  # running mean and sum of squared deviations (Welford) of the pair averages
    squares = np.zeros((rows, d))
    max_pairs = max(1, max_permutations // 2)
    while pairs < max_pairs:
        for _ in range(min(PAIRS_PER_ROUND, max_pairs - pairs)):
            order = rng.permutation(d)
            forward = _increments(bits, complete, counts, sums, mean, order, interactions)
            backward = _increments(bits, complete, counts, sums, mean, order[::-1], interactions)
            pair = (forward + backward) / 2
            pairs += 1
            deviation = pair - mean_pair
            mean_pair += deviation / pairs
            squares += deviation * (pair - mean_pair)
        if (
            tolerance is not None
            and pairs >= MIN_PAIRS
            and np.nanmax(_standard_errors(squares[:2], pairs)) <= tolerance
        ):
            break
    errors = _standard_errors(squares, pairs)
    order = importance_order(mean_pair[0])
    path_sizes, path_sums = chain_cohorts(prefix_lengths(bits, complete, order), counts, sums, d)
    return PermutationEstimate(
        shapley=mean_pair[0],
        shapley_squared=mean_pair[1],
        shapley_se=errors[0],
        shapley_squared_se=errors[1],
        cohort_size=int(path_sizes[-1]),
        cohort_mean=float(path_sums[-1] / path_sizes[-1]),
        path_order=order,
        path_size=path_sizes[1:].astype(np.int64),
        path_mean=path_sums[1:] / path_sizes[1:],
        feature_cohort_size=(bits @ counts).astype(np.int64),
        permutations=2 * pairs,
        interactions=mean_pair[2:] if interactions else None,
        interactions_se=errors[2:] if interactions else None,
    )


class GameEstimate(NamedTuple):
    """Estimated Shapley values of any game of one target, with their standard errors."""

    shapley: np.ndarray
    shapley_se: np.ndarray
    permutations: int
    value: float
    """v(1:d): what every permutation's increments add up to."""
    cohort_size: float
    """The weight of the target's cohort on every player."""


ChainValues = Callable[[np.ndarray], np.ndarray]
"""A game's values along chains of cohorts: from the sums (1 + explained values, chains, d + 1) of
each chain's cohorts C_0 (every subject) .. C_d, the values (chains, d + 1) with v(C_0) = 0."""


def estimate_game(
    bits: np.ndarray,
    sums: np.ndarray,
    chain_values: ChainValues,
    rng: np.random.Generator,
    *,
    max_permutations: int,
    tolerance: float | None,
) -> GameEstimate:
    """Permutation estimate of one target's Shapley values of any game of its cohorts' sums.

    `bits` (d, masks) and `sums` (the weight, then each explained value's weighted sum, by mask) describe
    the target's distinct similarity masks; each antithetic pair's chains are summed, valued by
    `chain_values` and their increments averaged, as `estimate` does for the cohort game. Stops after
    `max_permutations` permutations, or once every standard error is at most `tolerance`."""
    d = bits.shape[0]
    complete = np.asarray(bits.all(axis=0))
    max_pairs = max(1, max_permutations // 2)
    samples: list[np.ndarray] = []
    values = np.zeros((1, d + 1))
    while len(samples) < max_pairs:
        orders = [rng.permutation(d) for _ in range(min(PAIRS_PER_ROUND, max_pairs - len(samples)))]
        orders = [order for forward in orders for order in (forward, forward[::-1])]
        chains = np.stack([_chain_sums(prefix_lengths(bits, complete, order), sums, d) for order in orders], axis=1)
        values = chain_values(chains)
        increments = np.empty((len(orders), d))
        for row, order in enumerate(orders):
            increments[row, order] = np.diff(values[row])
        samples.extend((increments[0::2] + increments[1::2]) / 2)
        if tolerance is not None and len(samples) >= MIN_PAIRS and np.nanmax(_errors_of(samples)) <= tolerance:
            break
    whole = float(sums[0, complete].sum())  # C_d: the masks with every player
    return GameEstimate(np.mean(samples, axis=0), _errors_of(samples), 2 * len(samples), values[0, -1], whole)


def _chain_sums(lengths: np.ndarray, sums: np.ndarray, d: int) -> np.ndarray:
    """Every sum over the cohorts C_0 .. C_d of one chain, (sums, d + 1): C_i holds the masks with prefix length >= i."""
    return np.stack([np.bincount(lengths, weights=row, minlength=d + 1)[::-1].cumsum()[::-1] for row in sums])


def _errors_of(samples: list[np.ndarray]) -> np.ndarray:
    """The standard error of the mean of the pairs' `samples`, (d,)."""
    pairs = np.asarray(samples)
    deviations = pairs - pairs.mean(axis=0)
    return _standard_errors(np.square(deviations).sum(axis=0), len(pairs))


def stack(estimates: list[PermutationEstimate], group: np.ndarray) -> LocalValues:
    """The estimates of the distinct targets as arrays with a leading target axis, fanned out to every target."""
    return LocalValues(
        **{
            name: np.array([getattr(estimate, name) for estimate in estimates])[group]
            for name in PermutationEstimate._fields
            if not estimates or getattr(estimates[0], name) is not None
        }
    )


def _standard_errors(squares: np.ndarray, pairs: int) -> np.ndarray:
    """Standard error of a mean of `pairs` values whose squared deviations from their mean sum to `squares`."""
    if pairs < 2:
        return np.full(squares.shape, np.nan)
    return np.sqrt(squares / (pairs - 1) / pairs)
