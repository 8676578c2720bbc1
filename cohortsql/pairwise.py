"""The pairwise path (any similarity kinds): SQL mask histograms, then numpy.

DESIGN §2: for a batch of targets, DuckDB joins the targets with every distinct subject row,
computes the d-bit similarity mask and aggregates GROUP BY target, mask. The exact method scatters
each target's histogram into 2^d cells and superset-sums it into every cohort's size and sum; the
permutation method walks random chains of cohorts over the distinct masks. Batches bound memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from cohortsql import compile, permutation, shapley
from cohortsql.engine import DuckDBEngine
from cohortsql.prepare import Prepared
from cohortsql.similarity import SqlPredicate

HISTOGRAM_ROW_BYTES = 64
"""Memory one histogram row takes in numpy for the permutation method (target, mask words, count and
sum, sorted copies and unpacked bits); a batch has at most one row per target and subject row."""


def _histograms(engine: DuckDBEngine, prepared: Prepared, batch_size: int) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(first target, number of targets, histogram columns) for consecutive batches of distinct targets."""
    custom = [feature.name for feature in prepared.features if isinstance(feature.kind, SqlPredicate)]
    context = "computing similarity masks" + (f" (check the sql: similarity of {custom})" if custom else "")
    for start in range(0, prepared.distinct_targets.num_rows, batch_size):
        batch = prepared.numbered_targets(start, batch_size)
        name = engine.temporary_name("targets")
        with engine.registered(name, batch):
            histogram = engine.fetch_numpy(
                compile.mask_histogram(prepared.weighted_subjects, name, prepared.features), context=context
            )
        yield start, batch.num_rows, histogram


def pairwise_batches(engine: DuckDBEngine, prepared: Prepared) -> Iterator[shapley.CohortShapley]:
    """Exact cohort Shapley values, one batch of distinct targets at a time."""
    d = prepared.d
    for start, rows, histogram in _histograms(engine, prepared, shapley.targets_per_batch(d, prepared.batch_bytes)):
        counts, sums = shapley.scatter_histograms(
            histogram["target"], histogram["mask0"], histogram["subjects"], histogram["sum_y"], rows, d
        )
        weights = prepared.multiplicity[start : start + rows]
        yield shapley.cohort_shapley(counts, sums, prepared.mean, weights)


def permutation_batches(
    engine: DuckDBEngine,
    prepared: Prepared,
    *,
    seed: int | None,
    max_permutations: int,
    tolerance: float | None,
) -> Iterator[list[permutation.PermutationEstimate]]:
    """Monte Carlo estimates, one batch of distinct targets at a time; target i uses the i-th
    child of `seed`, so estimates do not depend on how targets are batched."""
    d = prepared.d
    (subject_rows,) = engine.fetch_rows(compile.row_count(prepared.weighted_subjects), context="counting subjects")[0]
    generators = [
        np.random.default_rng(child) for child in np.random.SeedSequence(seed).spawn(prepared.distinct_targets.num_rows)
    ]
    batch_size = max(1, prepared.batch_bytes // HISTOGRAM_ROW_BYTES // max(1, subject_rows))
    for start, rows, histogram in _histograms(engine, prepared, batch_size):
        order = np.argsort(histogram["target"], kind="stable")
        words = [histogram[f"mask{index}"][order] for index in range(math.ceil(d / compile.MASK_WORD_BITS))]
        bits = permutation.unpack_masks(words, d, compile.MASK_WORD_BITS)
        counts, sums = histogram["subjects"][order].astype(np.float64), histogram["sum_y"][order]
        bounds = np.searchsorted(histogram["target"][order], np.arange(rows + 1))
        yield [
            permutation.estimate(
                bits[:, low:high],
                counts[low:high],
                sums[low:high],
                prepared.mean,
                generators[start + target],
                max_permutations=max_permutations,
                tolerance=tolerance,
            )
            for target, (low, high) in enumerate(zip(bounds[:-1], bounds[1:]))
        ]
