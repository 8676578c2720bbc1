"""The pairwise path (any similarity kinds): SQL mask histograms, then numpy.

docs/design.md §2: for a batch of targets, the engine joins the targets with every distinct subject row,
computes the d-bit similarity mask and aggregates GROUP BY target, mask. The exact method scatters
each target's histogram into 2^d cells and superset-sums it into every cohort's size and sum; the
permutation method walks random chains of cohorts over the distinct masks. Batches bound memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from cohortsql import queries
from cohortsql.engines.base import Engine, fetch_numpy
from cohortsql.games.cohort import exact_values, permutation_values, target_generators
from cohortsql.games.uniqueness import uniqueness_values
from cohortsql.numeric import permutation, shapley
from cohortsql.run.pace import Pacer
from cohortsql.run.preparation import Prepared, WeightedSubjects, weigh_subjects
from cohortsql.run.targets import TargetSet
from cohortsql.spec.similarity import SqlPredicate


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
                queries.histogram.mask_histogram(
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
