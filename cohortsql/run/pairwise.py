"""The pairwise path (any similarity kinds): SQL mask histograms, then numpy.

docs/design.md §2: for a batch of targets, the engine joins the targets with every distinct subject row,
computes the d-bit similarity mask and aggregates GROUP BY target, mask. The exact method scatters
each target's histogram into 2^d cells and superset-sums it into every cohort's size and sum; the
permutation method walks random chains of cohorts over the distinct masks. Batches bound memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import numpy as np
import polars as pl
import pyarrow as pa
from threadpoolctl import threadpool_limits

from cohortsql import queries
from cohortsql.engines.base import Engine, PairInputs, fetch_numpy
from cohortsql.games.base import Cohorts, DenseBatch, Game
from cohortsql.games.cohort import (
    GAME_ENTRY_BYTES,
    exact_values,
    permutation_values,
    target_generators,
    targets_masks,
)
from cohortsql.numeric import pair_masks, permutation, shapley
from cohortsql.numeric.pair_tests import EQUAL, PairTest
from cohortsql.numeric.players import histogram_of_players, histograms_of_reductions
from cohortsql.queries.histogram import MASK_WORD_BITS
from cohortsql.request.similarity import SqlPredicate
from cohortsql.run.pace import Pacer
from cohortsql.run.preparation import Prepared, WeightedSubjects, weigh_subjects
from cohortsql.run.replicates import long_replicates, one_row_per_key, weigh_replicates
from cohortsql.run.session import GamePass
from cohortsql.run.targets import TargetSet


def weighed_for_histograms(engine: Engine, prepared: Prepared) -> WeightedSubjects:
    """The subjects of the exact histograms, with a column per weighting, or in a row per group of
    four replicates where that many columns do not fit one query (`long_replicates`)."""
    return weigh_replicates(engine, prepared) if long_replicates(prepared) else weigh_subjects(engine, prepared)


def _histograms(
    engine: Engine,
    prepared: Prepared,
    weighted: WeightedSubjects,
    targets: TargetSet,
    pacer: Pacer,
    *,
    of_players: bool = True,
) -> Iterator[tuple[int, int, dict[str, np.ndarray]]]:
    """(first target, number of targets, histogram columns) for consecutive batches of distinct targets
    (with `weighted` rows per group of replicates, their sums turned into a column per weighting); in a
    grouped run, masks over the players (`of_players`) or over the features."""
    custom = [feature.name for feature in prepared.features if isinstance(feature.kind, SqlPredicate)]
    context = "computing similarity masks" + (f" (check the sql: similarity of {custom})" if custom else "")
    engine.expect_aggregates(queries.histogram.histogram_sums(prepared.measures, draw_groups=weighted.draw_groups))
    tests = None if weighted.draw_groups else pair_tests(prepared)
    inputs = queries.histogram.pair_inputs(
        weighted.relation, prepared.features, prepared.measures, engine.dialect, collapsed=prepared.compressed
    )
    columns = [feature.column for feature in prepared.features]
    sums = [*prepared.measures.weight_names, *prepared.measures.sum_names]
    # The run's pairs, not the batch's: every batch on one path, so that the pilot times the path the run takes.
    pairs = targets.distinct.num_rows * prepared.subject_rows
    outside_sql = None if tests is None else PairInputs(inputs, tests, columns, sums, pairs)
    for start, size in pacer.batches():
        batch = targets.numbered(start, size)
        histogram = None if outside_sql is None else engine.pair_histogram(outside_sql, batch, context=context)
        if histogram is None:
            histogram = _sql_histogram(engine, prepared, weighted, batch, context)
        if of_players and prepared.groups is not None:
            histogram = histogram_of_players(histogram, prepared.groups.masks, queries.histogram.MASK_WORD_BITS)
        yield start, batch.num_rows, histogram


def _sql_histogram(
    engine: Engine, prepared: Prepared, weighted: WeightedSubjects, batch: pa.Table, context: str
) -> dict[str, np.ndarray]:
    """The mask histogram of a batch of targets as the engine's SQL aggregate (``sql/mask_histogram.sql``)."""
    with engine.temporary(engine.upload(batch, "targets")) as uploaded:
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
            return _one_column_per_weighting(engine.fetch_arrow(sql, context=context), prepared)
        return fetch_numpy(engine, sql, context=context)


def pair_tests(prepared: Prepared, *, masks: bool = True) -> list[PairTest] | None:
    """Every feature's similarity test in numbers (`cohortsql.numeric.pair_masks`), for an engine that
    builds a histogram outside SQL: None when a kind has no numeric twin (``sql:``), a column is
    compared in a type numpy does not hold exactly (decimals), or (for the mask histogram, `masks`) the
    dense histogram of one target would not fit (`cohortsql.numeric.pair_masks.CELL_BYTES`)."""
    sums = prepared.measures.weightings + prepared.measures.games
    if masks and not pair_masks.fits(prepared.d, sums):
        return None
    tests = []
    for feature in prepared.features:
        test = feature.kind.pair_test(feature.parameters)
        if test is None:
            return None
        if feature.representation in ("bigint", "days", "micros") or (
            feature.representation == "native" and feature.values in ("integer", "boolean")
        ):
            test = replace(test, integer=True)
        elif feature.representation == "native" and feature.values == "text" and test.code == EQUAL:
            test = replace(test, text=True)
        elif feature.representation not in ("double", "float"):
            return None  # decimals (exact arithmetic) and anything else: SQL's alone
        tests.append(test)
    return tests


def _one_column_per_weighting(table: pa.Table, prepared: Prepared) -> dict[str, np.ndarray]:
    """A histogram with a row per target, mask and group of replicates as one with a row per target
    and mask and a column per weighting."""
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    keys = [name for name in frame.columns if name == "target" or name.startswith("mask")]
    distinct, columns = one_row_per_key(frame, keys, prepared.measures)
    return {**{name: distinct[name].to_numpy() for name in keys}, **columns}


def pairwise_batches(
    engine: Engine, prepared: Prepared, targets: TargetSet, pacer: Pacer
) -> Iterator[shapley.CohortShapley]:
    """Exact cohort Shapley values of every game, one batch of distinct targets at a time (batches from
    `pacer`), from the subjects of `weighed_for_histograms`."""
    measures = prepared.measures
    weighted = weighed_for_histograms(engine, prepared)
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


def dense_games(
    run: GamePass, *, reductions: Sequence[Sequence[int]] | None = None, replicates: bool = False
) -> Iterator[DenseBatch]:
    """The exact driver of the pairwise path for any `games` (`cohortsql.games.base.Game`): each batch
    of distinct targets' mask histogram, scattered into dense arrays a cache-sized chunk of targets at
    a time and superset-summed into every cohort's weight (and the means of the explained values a
    game reads), then valued by each game. With `reductions` (each a list of players as sets of
    features, e.g. every union's reduced game for Owen values), the games of each reduction of one
    histogram in turn; with `replicates`, those of every bootstrap weighting in turn."""
    engine, prepared, games = run.session.engine, run.session.prepared, run.games
    measures = prepared.measures
    weighted = weighed_for_histograms(engine, prepared)
    reads = any(game.powers for game in games)
    weightings = range(measures.weightings if replicates else 1)
    columns = [
        [measures.weight_name(weighting)]
        + ([measures.sum_name(outcome, weighting) for outcome in range(measures.outcomes)] if reads else [])
        for weighting in weightings
    ]
    for start, rows, histogram in _histograms(
        engine, prepared, weighted, run.targets, run.pacer, of_players=reductions is None
    ):
        sizes = [prepared.players] if reductions is None else [len(players) for players in reductions]
        parts = [histogram] if reductions is None else histograms_of_reductions(histogram, reductions, MASK_WORD_BITS)
        for reduction, (size, part) in enumerate(zip(sizes, parts)):
            for weighting, names in zip(weightings, columns):  # one weighting's cells at a time: bounded memory
                sums = [np.asarray(part[column], dtype=np.float64) for column in names]
                with threadpool_limits(limits=1, user_api="blas"):
                    for low, high, dense in shapley.dense_chunks(part["target"], part["mask0"], sums, rows, size):
                        cohorts = Cohorts.of_sums(shapley.superset_sums(dense), prepared.powers)
                        values = [game.values(cohorts) for game in games]
                        yield DenseBatch(start + low, high - low, reduction, cohorts, values, weighting)


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


def game_permutations(
    engine: Engine,
    prepared: Prepared,
    targets: TargetSet,
    pacer: Pacer,
    game: Game,
    *,
    seed: int | None,
    max_permutations: int,
    tolerance: float | None,
) -> Iterator[list[permutation.GameEstimate]]:
    """Monte Carlo estimates of any `game`, one batch of distinct targets at a time: each target's
    chains of cohorts summed from its mask histogram (the weight and the explained values the game
    reads) and valued by the game (`cohortsql.numeric.permutation.estimate_game`)."""
    measures = prepared.measures
    generators = target_generators(targets.distinct.num_rows, seed)
    weighted = weigh_subjects(engine, prepared)
    columns = [measures.weight_name(0)]
    if game.powers:
        columns += [measures.sum_name(outcome, 0) for outcome in range(measures.outcomes)]

    def chain_values(sums: np.ndarray) -> np.ndarray:
        return game.values(Cohorts.of_sums(sums, prepared.powers))

    for start, rows, histogram in _histograms(engine, prepared, weighted, targets, pacer):
        yield [
            permutation.estimate_game(
                bits,
                sums,
                chain_values,
                generators[start + target],
                max_permutations=max_permutations,
                tolerance=tolerance,
            )
            for target, bits, sums in targets_masks(histogram, rows, prepared.players, columns)
        ]
