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
import polars as pl
import pyarrow as pa

from cohortsql import queries
from cohortsql.engines.base import Engine, fetch_numpy
from cohortsql.games.cohort import (
    GAME_ENTRY_BYTES,
    LatticeTerms,
    OwenBatch,
    exact_values,
    lattice_terms,
    owen_values,
    permutation_values,
    target_generators,
)
from cohortsql.games.uniqueness import uniqueness_owen, uniqueness_values
from cohortsql.numeric import permutation, shapley
from cohortsql.numeric.players import histogram_of_players
from cohortsql.run.pace import Pacer
from cohortsql.run.preparation import Prepared, WeightedSubjects, weigh_subjects
from cohortsql.run.replicates import one_row_per_key, weigh_replicates
from cohortsql.run.targets import TargetSet
from cohortsql.spec.similarity import SqlPredicate


def _histograms(
    engine: Engine,
    prepared: Prepared,
    weighted: WeightedSubjects,
    targets: TargetSet,
    pacer: Pacer,
    *,
    of_players: bool = True,
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(first target, number of targets, histogram columns) for consecutive batches of distinct targets
    (with `weighted` rows per group of replicates, their sums turned into a column per weighting); in a
    grouped run, masks over the players (`of_players`) or over the features."""
    custom = [feature.name for feature in prepared.features if isinstance(feature.kind, SqlPredicate)]
    context = "computing similarity masks" + (f" (check the sql: similarity of {custom})" if custom else "")
    engine.expect_aggregates(queries.histogram.histogram_sums(prepared.measures, draw_groups=weighted.draw_groups))
    for start, size in pacer.batches():
        batch = targets.numbered(start, size)
        uploaded = engine.upload(batch, "targets")
        try:
            sql = queries.histogram.mask_histogram(
                weighted.relation,
                uploaded,
                prepared.features,
                prepared.measures,
                engine.dialect,
                collapsed=prepared.compressed,
                draw_groups=weighted.draw_groups,
            )
            if weighted.draw_groups:
                histogram = _one_column_per_weighting(engine.fetch_arrow(sql, context=context), prepared)
            else:
                histogram = fetch_numpy(engine, sql, context=context)
        finally:
            engine.drop(uploaded)
        if of_players and prepared.groups is not None:
            histogram = histogram_of_players(histogram, prepared.groups.masks, queries.histogram.MASK_WORD_BITS)
        yield start, batch.num_rows, histogram


def _one_column_per_weighting(table: pa.Table, prepared: Prepared) -> dict[str, np.ndarray]:
    """A histogram with a row per target, mask and group of replicates as one with a row per target
    and mask and a column per weighting."""
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    keys = [name for name in frame.columns if name == "target" or name.startswith("mask")]
    distinct, columns = one_row_per_key(frame, keys, prepared.measures)
    return {**{name: distinct[name].to_numpy() for name in keys}, **columns}


def pairwise_batches(
    engine: Engine, prepared: Prepared, targets: TargetSet, pacer: Pacer, *, long_replicates: bool
) -> Iterator[shapley.CohortShapley]:
    """Exact cohort Shapley values of every game, one batch of distinct targets at a time (batches from
    `pacer`); with `long_replicates`, the subjects come in a row per group of replicates, not a
    column per replicate (`cohortsql.run.strategy.long_replicates`)."""
    measures = prepared.measures
    weighted = weigh_replicates(engine, prepared) if long_replicates else weigh_subjects(engine, prepared)
    for start, rows, histogram in _histograms(engine, prepared, weighted, targets, pacer):
        weights = targets.multiplicity[start : start + rows][:, measures.weighting_of_game]
        yield exact_values(
            histogram,
            rows,
            prepared.players,
            measures,
            weighted.game_means,
            weights,
            targets.distinct.num_rows,
            memory_bytes=min(GAME_ENTRY_BYTES, prepared.batch_bytes // 4),
        )


def uniqueness_batches(
    engine: Engine, prepared: Prepared, targets: TargetSet, pacer: Pacer
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Uniqueness Shapley values (phi, total, cohort size), one batch of distinct targets at a time."""
    weighted = weigh_subjects(engine, prepared)
    for _, rows, histogram in _histograms(engine, prepared, weighted, targets, pacer):
        yield uniqueness_values(histogram, rows, prepared.players, prepared.measures, weighted.weight_totals)


def uniqueness_owen_batches(
    engine: Engine, prepared: Prepared, targets: TargetSet, pacer: Pacer
) -> Iterator[np.ndarray]:
    """Every feature's Owen value of the uniqueness game under the run's groups, one batch of distinct
    targets at a time, from mask histograms over the features (batches from `pacer`)."""
    assert prepared.groups is not None
    weighted = weigh_subjects(engine, prepared)
    total = float(weighted.weight_totals[0])
    for _, rows, histogram in _histograms(engine, prepared, weighted, targets, pacer, of_players=False):
        yield uniqueness_owen(histogram, rows, prepared.groups.members, prepared.measures, total)


def lattice_batches(
    engine: Engine, prepared: Prepared, targets: TargetSet, pacer: Pacer, *, interactions: bool, anchored: int
) -> Iterator[LatticeTerms]:
    """Interaction values and anchored terms of every explained column's cohort game
    (`cohortsql.games.cohort.lattice_terms`), one batch of distinct targets at a time (batches from `pacer`)."""
    weighted = weigh_subjects(engine, prepared)
    for _, rows, histogram in _histograms(engine, prepared, weighted, targets, pacer):
        yield lattice_terms(
            histogram,
            rows,
            prepared.players,
            prepared.measures,
            weighted.game_means,
            interactions=interactions,
            anchored=anchored,
        )


def owen_batches(engine: Engine, prepared: Prepared, targets: TargetSet, pacer: Pacer) -> Iterator[OwenBatch]:
    """Owen values of every feature under the run's groups, one batch of distinct targets at a time,
    from mask histograms over the features (batches from `pacer`)."""
    assert prepared.groups is not None
    measures = prepared.measures
    weighted = weigh_subjects(engine, prepared)
    for start, rows, histogram in _histograms(engine, prepared, weighted, targets, pacer, of_players=False):
        weights = targets.multiplicity[start : start + rows][:, measures.weighting_of_game]
        yield owen_values(histogram, rows, prepared.groups.members, measures, weighted.game_means, weights)


def permutation_batches(
    engine: Engine,
    prepared: Prepared,
    targets: TargetSet,
    pacer: Pacer,
    *,
    seed: int | None,
    max_permutations: int,
    tolerance: float | None,
    interactions: bool = False,
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
                prepared.players,
                float(weighted.game_means[measures.game(outcome, 0)]),
                generators[outcome][start : start + rows],
                max_permutations=max_permutations,
                tolerance=tolerance,
                sum_column=measures.sum_name(outcome, 0),
                interactions=interactions,
            )
            for outcome in range(measures.outcomes)
        ]
