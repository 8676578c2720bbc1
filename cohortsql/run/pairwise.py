"""The pairwise path (any similarity kinds): SQL mask histograms, then numpy.

DESIGN §2: for a batch of targets, the engine joins the targets with every distinct subject row,
computes the d-bit similarity mask and aggregates GROUP BY target, mask. The exact method scatters
each target's histogram into 2^d cells and superset-sums it into every cohort's size and sum; the
permutation method walks random chains of cohorts over the distinct masks. Batches bound memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from threadpoolctl import threadpool_limits

from cohortsql.queries import compile
from cohortsql.numeric import kernels
from cohortsql.numeric import permutation
from cohortsql.numeric import shapley
from cohortsql.engines.base import Engine, fetch_numpy
from cohortsql.spec.measures import Measures
from cohortsql.run.pace import Pacer
from cohortsql.run.session import Prepared, TargetSet, WeightedSubjects, weigh_subjects
from cohortsql.spec.similarity import SqlPredicate

ENGINE_GROUP_BYTES = 96
"""What the engine holds per histogram group while it aggregates and hands the result over as Arrow,
beyond the numpy arrays (measured on DuckDB 2.0: 41 targets x 100,000 masks at d = 20 peaked 700 MB
above the process's 355 MB, about 170 bytes per group, 64 of them the numpy arrays)."""

HISTOGRAM_ROW_BYTES = 64
"""Memory one histogram row takes in numpy for the permutation method (target, mask words, count and
sum, sorted copies and unpacked bits); a batch has at most one row per target and subject row."""


def _histograms(
    engine: Engine, prepared: Prepared, weighted: WeightedSubjects, targets: TargetSet, pacer: Pacer
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(first target, number of targets, histogram columns) for consecutive batches of distinct targets."""
    custom = [feature.name for feature in prepared.features if isinstance(feature.kind, SqlPredicate)]
    context = "computing similarity masks" + (f" (check the sql: similarity of {custom})" if custom else "")
    for start, size in pacer.batches():
        batch = targets.numbered(start, size)
        uploaded = engine.upload(batch, "targets")
        try:
            histogram = fetch_numpy(
                engine,
                compile.mask_histogram(
                    weighted.relation,
                    uploaded,
                    prepared.features,
                    prepared.measures,
                    engine.dialect,
                    collapsed=prepared.compressed,
                ),
                context=context,
            )
        finally:
            engine.drop(uploaded)
        yield start, batch.num_rows, histogram


def game_entries(
    histogram: dict[str, np.ndarray], measures: Measures
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The histogram's rows as entries of every game: (game row, mask, weight, sum), game row =
    target * games + game, each game with its outcome's sum and its weighting's weight."""
    games = measures.games
    target, mask = histogram["target"], histogram["mask0"]
    weights = np.stack([histogram[name] for name in measures.weight_names]).astype(np.float64)
    if games == 1:
        return target, mask, weights[0], histogram[measures.sum_name(0, 0)]
    sums = np.stack([histogram[name] for name in measures.sum_names])
    rows = (target[None, :] * games + np.arange(games)[:, None]).reshape(-1)
    return rows, np.tile(mask, games), weights[measures.weighting_of_game].reshape(-1), sums.reshape(-1)


def exact_values(
    histogram: dict[str, np.ndarray],
    rows: int,
    d: int,
    measures: Measures,
    means: np.ndarray,
    weights: np.ndarray,
    run_targets: int | None = None,
) -> shapley.CohortShapley:
    """Exact values of every game of a batch of `rows` targets from their mask histogram (``target``
    numbers them 0..rows-1): game row r is target r // games, game r % games (`cohortsql.spec.measures`).

    `means` is each game's centred overall mean and `weights[t, g]` what target t counts for in game
    g's squared games. The compiled kernel runs where it pays over the whole run (`run_targets`
    targets, default this batch's; `cohortsql.numeric.kernels`), else numpy with one BLAS thread (the small matrix products of the transforms ran 3.5-5x slower with BLAS threads
    fighting for busy cores).

    Several games per target (weights, outcomes, replicates) multiply the histogram's entries by
    the number of games, so those are formed `GAME_ENTRIES` at a time, a run of targets after another."""
    games = measures.games
    compiled = kernels.worth_compiling((run_targets or rows) * games, d)
    if games == 1:
        return _exact_part(histogram, rows, d, measures, means, weights, compiled)
    order = np.argsort(histogram["target"], kind="stable")
    ordered = {name: column[order] for name, column in histogram.items()}
    bounds = np.searchsorted(ordered["target"], np.arange(rows + 1))
    step = max(1, GAME_ENTRIES // (games * max(1, int(np.diff(bounds).max(initial=1)))))
    parts = []
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        part = {name: column[bounds[start] : bounds[stop]] for name, column in ordered.items()}
        part["target"] = part["target"] - start
        parts.append(_exact_part(part, stop - start, d, measures, means, weights[start:stop], compiled))
    return shapley.concatenate(parts)


GAME_ENTRIES = 1 << 22
"""Histogram entries of every game formed at once (four arrays of them: 128 MiB)."""


def _exact_part(
    histogram: dict[str, np.ndarray],
    rows: int,
    d: int,
    measures: Measures,
    means: np.ndarray,
    weights: np.ndarray,
    compiled: bool,
) -> shapley.CohortShapley:
    games = measures.games
    entries = game_entries(histogram, measures)
    row_means = np.tile(np.asarray(means, dtype=np.float64), rows)
    row_weights = np.asarray(weights, dtype=np.float64).reshape(-1)
    if compiled:
        return kernels.exact_values(*entries, rows * games, d, row_means, row_weights, games)
    with threadpool_limits(limits=1, user_api="blas"):
        return shapley.cohort_shapley_of_histograms(*entries, rows * games, d, row_means, row_weights, games)


def uniqueness_values(
    histogram: dict[str, np.ndarray], rows: int, d: int, measures: Measures, totals: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Uniqueness Shapley values of a batch of targets from their mask histogram: phi (rows, d),
    -log(|C_{t,1:d}| / n) (rows,) and |C_{t,1:d}| (rows,), under the data's own weighting."""
    target, mask, weight = histogram["target"], histogram["mask0"], histogram[measures.weight_name(0)]
    parts = []
    with threadpool_limits(limits=1, user_api="blas"):
        for start, stop, (counts,) in shapley.dense_chunks(target, mask, [weight.astype(np.float64)], rows, d):
            sizes = shapley.superset_sums(counts)
            phi, value = shapley.uniqueness_values(sizes, np.full(stop - start, totals[0]))
            parts.append((phi, value, sizes[:, -1]))
    phi, value, size = (np.concatenate(arrays) for arrays in zip(*parts))
    return phi, value, size


def permutation_values(
    histogram: dict[str, np.ndarray],
    rows: int,
    d: int,
    centred_mean: float,
    generators: list[np.random.Generator],
    *,
    max_permutations: int,
    tolerance: float | None,
    sum_column: str = "s0_0",
) -> list[permutation.PermutationEstimate]:
    """Monte Carlo estimates of a batch of `rows` targets from their mask histogram, target i with
    generator i; the outcome is the histogram's `sum_column` (weights are ``w0``)."""
    order = np.argsort(histogram["target"], kind="stable")
    words = [histogram[f"mask{index}"][order] for index in range(math.ceil(d / compile.MASK_WORD_BITS))]
    bits = permutation.unpack_masks(words, d, compile.MASK_WORD_BITS)
    counts, sums = histogram["w0"][order].astype(np.float64), histogram[sum_column][order]
    bounds = np.searchsorted(histogram["target"][order], np.arange(rows + 1))
    return [
        permutation.estimate(
            bits[:, low:high],
            counts[low:high],
            sums[low:high],
            centred_mean,
            generators[target],
            max_permutations=max_permutations,
            tolerance=tolerance,
        )
        for target, (low, high) in enumerate(zip(bounds[:-1], bounds[1:]))
    ]


def target_generators(count: int, seed: int | None) -> list[np.random.Generator]:
    """One random generator per distinct target, children of `seed`: estimates do not depend on batching."""
    return [np.random.default_rng(child) for child in np.random.SeedSequence(seed).spawn(count)]


def pairwise_batches(
    engine: Engine, prepared: Prepared, targets: TargetSet, pacer: Pacer
) -> Iterator[shapley.CohortShapley]:
    """Exact cohort Shapley values of every game, one batch of distinct targets at a time (batches from `pacer`)."""
    measures = prepared.measures
    weighted = weigh_subjects(engine, prepared)
    for start, rows, histogram in _histograms(engine, prepared, weighted, targets, pacer):
        weights = targets.multiplicity[start : start + rows][:, measures.weighting_of_game]
        yield exact_values(
            histogram, rows, prepared.d, measures, weighted.game_means, weights, targets.distinct.num_rows
        )


def uniqueness_batches(
    engine: Engine, prepared: Prepared, targets: TargetSet, pacer: Pacer
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Uniqueness Shapley values (phi, total, cohort size), one batch of distinct targets at a time."""
    weighted = weigh_subjects(engine, prepared)
    for _, rows, histogram in _histograms(engine, prepared, weighted, targets, pacer):
        yield uniqueness_values(histogram, rows, prepared.d, prepared.measures, weighted.weight_totals)


def exact_batch_size(prepared: Prepared, path: str) -> int:
    """The most targets whose arrays fit the batch memory budget: on the pairwise path their histogram
    entries for every game (at most min(subject rows, 2^d) per target; the dense 2^d arrays are built
    a cache-sized chunk at a time), on the lattice path their 2^d sizes and values of every game."""
    measures, d = prepared.measures, prepared.d
    games, weightings = max(1, measures.games), measures.weightings
    if path == "grouping_sets":
        per_target = 8 * ((weightings + 2 * games) << d)
    else:
        # The histogram's columns, twice (as fetched and sorted), and the engine's own copy while it
        # aggregates; the games' entries are formed a run at a time.
        columns = math.ceil(d / compile.MASK_WORD_BITS) + 1 + weightings + games
        per_target = min(prepared.subject_rows, 1 << d) * (2 * 8 * columns + ENGINE_GROUP_BYTES)
    return max(1, prepared.batch_bytes // per_target)


def permutation_batch_size(prepared: Prepared) -> int:
    """The most targets whose histograms (at most one row per subject row each) fit the budget."""
    return max(1, prepared.batch_bytes // HISTOGRAM_ROW_BYTES // max(1, prepared.subject_rows))


def permutation_batches(
    engine: Engine,
    prepared: Prepared,
    targets: TargetSet,
    pacer: Pacer,
    *,
    seed: int | None,
    max_permutations: int,
    tolerance: float | None,
) -> Iterator[list[list[permutation.PermutationEstimate]]]:
    """Monte Carlo estimates, one batch of distinct targets at a time (batches from `pacer`): per
    outcome, one estimate per target. Every outcome draws the same permutations (fresh generators from
    `seed`), so each equals its own single-outcome run and differences between outcomes are paired."""
    measures = prepared.measures
    generators = [target_generators(targets.distinct.num_rows, seed) for _ in range(measures.outcomes)]
    weighted = weigh_subjects(engine, prepared)
    for start, rows, histogram in _histograms(engine, prepared, weighted, targets, pacer):
        yield [
            permutation_values(
                histogram,
                rows,
                prepared.d,
                float(weighted.game_means[measures.game(outcome, 0)]),
                generators[outcome][start : start + rows],
                max_permutations=max_permutations,
                tolerance=tolerance,
                sum_column=measures.sum_name(outcome, 0),
            )
            for outcome in range(measures.outcomes)
        ]
