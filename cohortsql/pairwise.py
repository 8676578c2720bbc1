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

from cohortsql import compile, kernels, permutation, shapley
from cohortsql.engines.base import Engine, fetch_numpy, fetch_record
from cohortsql.pace import Pacer
from cohortsql.prepare import Prepared, TargetSet
from cohortsql.similarity import SqlPredicate

HISTOGRAM_ROW_BYTES = 64
"""Memory one histogram row takes in numpy for the permutation method (target, mask words, count and
sum, sorted copies and unpacked bits); a batch has at most one row per target and subject row."""


def _histograms(
    engine: Engine, prepared: Prepared, targets: TargetSet, pacer: Pacer
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
                    prepared.weighted_subjects,
                    uploaded,
                    prepared.features,
                    engine.dialect,
                    collapsed=prepared.compressed,
                ),
                context=context,
            )
        finally:
            engine.drop(uploaded)
        yield start, batch.num_rows, histogram


def exact_values(
    histogram: dict[str, np.ndarray], rows: int, d: int, centred_mean: float, weights: np.ndarray
) -> shapley.CohortShapley:
    """Exact values of a batch of `rows` targets from their mask histogram (``target`` numbers them 0..rows-1):
    the compiled kernel where it pays (`cohortsql.kernels`), else numpy with one BLAS thread (the small
    matrix products of the transforms ran 3.5-5x slower with BLAS threads fighting for busy cores)."""
    columns = (histogram["target"], histogram["mask0"], histogram["subjects"], histogram["sum_y"])
    if kernels.worth_compiling(rows, d):
        return kernels.exact_values(*columns, rows, d, centred_mean, weights)
    with threadpool_limits(limits=1, user_api="blas"):
        counts, sums = shapley.scatter_histograms(*columns, rows, d)
        return shapley.cohort_shapley(counts, sums, centred_mean, weights)


def permutation_values(
    histogram: dict[str, np.ndarray],
    rows: int,
    d: int,
    centred_mean: float,
    generators: list[np.random.Generator],
    *,
    max_permutations: int,
    tolerance: float | None,
) -> list[permutation.PermutationEstimate]:
    """Monte Carlo estimates of a batch of `rows` targets from their mask histogram, target i with generator i."""
    order = np.argsort(histogram["target"], kind="stable")
    words = [histogram[f"mask{index}"][order] for index in range(math.ceil(d / compile.MASK_WORD_BITS))]
    bits = permutation.unpack_masks(words, d, compile.MASK_WORD_BITS)
    counts, sums = histogram["subjects"][order].astype(np.float64), histogram["sum_y"][order]
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
    """Exact cohort Shapley values, one batch of distinct targets at a time (batches from `pacer`)."""
    for start, rows, histogram in _histograms(engine, prepared, targets, pacer):
        weights = targets.multiplicity[start : start + rows]
        yield exact_values(histogram, rows, prepared.d, prepared.centred_mean, weights)


def exact_batch_size(prepared: Prepared) -> int:
    """The most targets whose 2^d cohort values fit the batch memory budget."""
    return shapley.targets_per_batch(prepared.d, prepared.batch_bytes)


def permutation_batch_size(engine: Engine, prepared: Prepared) -> int:
    """The most targets whose histograms (at most one row per subject row each) fit the budget."""
    subject_rows = fetch_record(
        engine, f"SELECT count(*) AS n FROM {prepared.weighted_subjects}", context="counting subjects"
    )["n"]
    return max(1, prepared.batch_bytes // HISTOGRAM_ROW_BYTES // max(1, subject_rows))


def permutation_batches(
    engine: Engine,
    prepared: Prepared,
    targets: TargetSet,
    pacer: Pacer,
    *,
    seed: int | None,
    max_permutations: int,
    tolerance: float | None,
) -> Iterator[list[permutation.PermutationEstimate]]:
    """Monte Carlo estimates, one batch of distinct targets at a time (batches from `pacer`)."""
    generators = target_generators(targets.distinct.num_rows, seed)
    for start, rows, histogram in _histograms(engine, prepared, targets, pacer):
        yield permutation_values(
            histogram,
            rows,
            prepared.d,
            prepared.centred_mean,
            generators[start : start + rows],
            max_permutations=max_permutations,
            tolerance=tolerance,
        )
