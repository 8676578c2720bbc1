"""The integrated path (``method="integrated"``): integrated gradient cohort Shapley in O(n d) per
target, from one GROUP BY target, k histogram per batch of targets (`cohortsql.queries.integrated`),
integrated exactly in numpy (`cohortsql.numeric.integrated`); and the refinement curves of any
attribution's order (the insertion and deletion tests), from one GROUP BY target, rank each.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from cohortsql import queries
from cohortsql.engines.base import Engine, fetch_numpy
from cohortsql.numeric import dissimilar
from cohortsql.numeric.integrated import IntegratedHistogram, IntegratedValues, integrate
from cohortsql.numeric.shapley import importance_order
from cohortsql.queries.measures import MeasureSource
from cohortsql.request.measures import Measures
from cohortsql.request.similarity import SqlPredicate
from cohortsql.run.kernel_subjects import KernelSubjects, kernel_subjects
from cohortsql.run.pace import Pacer
from cohortsql.run.preparation import Prepared, WeightedSubjects, weigh_subjects
from cohortsql.run.targets import TargetSet

MAX_INTEGRATED_SUMS = 100_000
"""The most sums one integrated histogram query carries (each measure once, and once per player):
2,000 players under one weighting are 4,002; bootstrap replicates multiply them."""


def players_of(prepared: Prepared) -> list[tuple[int, ...]]:
    """Each player's features (indices): its group's members, or each feature alone."""
    if prepared.groups is not None:
        return [tuple(members) for members in prepared.groups.members]
    return [(index,) for index in range(prepared.d)]


def integrated_batch_size(prepared: Prepared) -> int:
    """The most targets whose integrated histograms (at most min(d + 1, subject rows) values of k, each
    with every sum in total and per player: as built, made dense and integrated) fit the batch memory
    budget (the integration's own arrays hold one sum per k: `cohortsql.numeric.integrated`)."""
    measures, players = prepared.measures, prepared.players
    sums = (measures.weightings + measures.games) * (1 + players)
    per_target = min(prepared.d + 1, prepared.subject_rows) * sums * 8 * 3
    return max(1, prepared.batch_bytes // per_target)


def integrated_sums(prepared: Prepared) -> int:
    """How many sums a row of the integrated histogram carries."""
    measures = prepared.measures
    return (measures.weightings + measures.games) * (1 + prepared.players)


class IntegratedBatch(NamedTuple):
    """One batch of distinct targets' integrated gradients, and each outcome's refinement path."""

    start: int
    rows: int
    values: IntegratedValues
    """Each target's values per game (`cohortsql.request.measures` order)."""
    weights: np.ndarray
    """W_b of each target's whole cohort and of each player's cohort alone: (rows, weightings, 1 + players),
    column 0 the full cohort (every player similar), then |C_{t,{j}}| for each player j."""
    order: np.ndarray
    """Each outcome's players by decreasing |IGCS| of its own weighting: (rows, outcomes, players)."""
    path_weight: np.ndarray
    """The cohort's weight after the first k + 1 players of `order` are required similar: (rows, outcomes, players)."""
    path_mean: np.ndarray
    """Its mean (of y less the sums' shift) there: (rows, outcomes, players)."""


def integrated_batches(
    engine: Engine, prepared: Prepared, targets: TargetSet, pacer: Pacer
) -> Iterator[IntegratedBatch]:
    """Integrated gradients of every game, one batch of distinct targets at a time (batches from
    `pacer`), and along each outcome's order of its values the refinement path (one more pass: the
    insertion curve, `refinement_curves`)."""
    measures = prepared.measures
    subjects = subjects_of(engine, prepared, targets.distinct)
    players = players_of(prepared)
    custom = [feature.name for feature in prepared.features if isinstance(feature.kind, SqlPredicate)]
    context = "counting dissimilar players" + (f" (check the sql: similarity of {custom})" if custom else "")
    engine.expect_aggregates(integrated_sums(prepared))
    for start, size in pacer.batches():
        batch = targets.numbered(start, size)
        histogram, weights = _histogram(engine, prepared, subjects, start, batch, players, context)
        values = integrate(histogram)
        orders, path_weights, path_means = [], [], []
        for outcome in range(measures.outcomes):
            order = importance_order(values.shapley[:, measures.game(outcome, 0)])
            ranks = np.empty_like(order)
            np.put_along_axis(ranks, order, np.arange(1, order.shape[1] + 1)[None, :], axis=1)
            curves = refinement_curves(engine, prepared, subjects, start, batch, ranks, deletion=False)
            orders.append(order)
            path_weights.append(curves.insertion_weight[:, 1:])
            path_means.append(curves.insertion[:, outcome, 1:])
        yield IntegratedBatch(
            start, size, values, weights, np.stack(orders, 1), np.stack(path_weights, 1), np.stack(path_means, 1)
        )


class Subjects(NamedTuple):
    """The subjects of a call's histograms: the weighted relation the SQL reads, and where the
    compiled kernels build them here instead, the subjects as they read them (`KernelSubjects`)."""

    weighted: WeightedSubjects
    kernel: KernelSubjects | None


def subjects_of(engine: Engine, prepared: Prepared, targets: pa.Table) -> Subjects:
    """The subjects of every histogram of a call whose targets are `targets` (each distinct one)."""
    weighted = weigh_subjects(engine, prepared)
    return Subjects(weighted, kernel_subjects(engine, prepared, weighted, targets))


def _histogram(
    engine: Engine,
    prepared: Prepared,
    subjects: Subjects,
    start: int,
    batch: pa.Table,
    players: Sequence[Sequence[int]],
    context: str,
) -> tuple[IntegratedHistogram, np.ndarray]:
    """The batch's (target, k) histogram (`integrated_histogram`): built here from the streamed subjects
    (`dissimilar`) where the engine allows it, else by the engine's SQL (``sql/integrated_histogram.sql``).
    `start`: the batch's first row among the targets `subjects` were made for."""
    if subjects.kernel is not None:
        passes = _kernel_passes(prepared, subjects.kernel, start, batch, players, context, ranks=None)
        return _histogram_of_cells(passes, batch.num_rows, len(players), prepared.measures)
    with engine.temporary(engine.upload(batch, "targets")) as uploaded:
        sql = queries.integrated.integrated_histogram(_sql_inputs(engine, prepared, subjects.weighted), uploaded)
        columns = fetch_numpy(engine, sql, context=context)
    return integrated_histogram(columns, batch.num_rows, len(players), prepared.measures)


def _sql_inputs(engine: Engine, prepared: Prepared, weighted: WeightedSubjects) -> queries.integrated.HistogramInputs:
    """What the histograms' SQL reads besides the targets."""
    source: MeasureSource = "collapsed" if prepared.compressed else "weighted"
    return queries.integrated.HistogramInputs(
        weighted.relation, prepared.features, players_of(prepared), prepared.measures, engine.dialect, source
    )


def _kernel_passes(
    prepared: Prepared,
    subjects: KernelSubjects,
    start: int,
    batch: pa.Table,
    players: Sequence[Sequence[int]],
    context: str,
    *,
    ranks: np.ndarray | None,
) -> Iterator[tuple[int, np.ndarray]]:
    """The dense cells of the batch's targets (`dissimilar.DissimilarHistogram.totals`: (targets, sums,
    players + 2, 1 + players) by k, or with `ranks` (targets, sums, players + 2, 1) by smallest
    dissimilar rank, whose sums are W_0 and each outcome's first sum), built from the subjects
    (streamed, or kept from an earlier pass) by the compiled kernel, a pass of targets at a time that fits
    its memory; each pass with the position of its first target in the batch."""
    measures = prepared.measures
    every = subjects.measure_names
    names = (
        every
        if ranks is None
        else [measures.weight_name(0), *(measures.sum_name(k, 0) for k in range(measures.outcomes))]
    )
    chosen = [every.index(name) for name in names]
    player_of = np.zeros(prepared.d, dtype=np.int64)
    for player, members in enumerate(players):
        player_of[list(members)] = player
    # the dense cells of a pass within the batch budget (a quarter of an engine's memory limit, if less)
    step = (
        dissimilar.targets_per_pass(len(players), len(names), prepared.batch_bytes) if ranks is None else batch.num_rows
    )
    for first in range(0, batch.num_rows, step):
        part = batch.slice(first, step)
        part_ranks = None if ranks is None else ranks[first : first + part.num_rows]
        histogram = dissimilar.DissimilarHistogram(
            subjects.targets(start + first, part.num_rows), subjects.tests, player_of, len(names), part_ranks
        )
        for features, values in subjects.batches(context):
            histogram.add(features, values if len(chosen) == len(every) else values[:, chosen])
        yield first, histogram.totals


def _histogram_of_cells(
    passes: Iterator[tuple[int, np.ndarray]], rows: int, players: int, measures: Measures
) -> tuple[IntegratedHistogram, np.ndarray]:
    """`integrated_histogram` of a batch of `rows` targets from the kernel's dense cells (`_kernel_passes`),
    kept at the k some subject reached (the cells are allocated lazily: at d = 10,000 a target's are
    1.6 GB, of which a few hundred k are written)."""
    parts = []
    for first, totals in passes:
        reached = np.flatnonzero((totals[:, 0, :, 0] > 0).any(axis=0))  # (weights are > 0)
        parts.append((first, reached, totals[:, :, reached]))
    ks = np.unique(np.concatenate([reached for _, reached, _ in parts]))
    cells = np.zeros((rows, parts[0][2].shape[1], len(ks), players + 1))
    for first, reached, part in parts:
        cells[first : first + len(part), :, np.searchsorted(ks, reached)] = part
    by_player = np.moveaxis(cells[..., 1:], -1, -2)  # (targets, sums, players, K)
    weightings = measures.weightings
    return _with_weights(
        ks,
        cells[:, :weightings, :, 0],
        cells[:, weightings:, :, 0],
        np.ascontiguousarray(by_player[:, :weightings]),
        np.ascontiguousarray(by_player[:, weightings:]),
        measures,
    )


def integrated_histogram(
    columns: dict[str, np.ndarray], rows: int, players: int, measures: Measures
) -> tuple[IntegratedHistogram, np.ndarray]:
    """The (target, k) rows of a batch (columns of the SQL's result) as dense arrays over the k that occur
    (`IntegratedHistogram`), and each target's weights of its full cohort and of each player's cohort alone."""
    target = np.asarray(columns["target"], dtype=np.int64)
    k = np.asarray(columns["k"], dtype=np.int64)
    ks, position = np.unique(k, return_inverse=True)

    def dense(names: Sequence[str]) -> np.ndarray:  # (rows, len(names), K)
        out = np.zeros((rows, len(names), len(ks)))
        for index, name in enumerate(names):
            np.add.at(out[:, index], (target, position), np.asarray(columns[name], dtype=np.float64))
        return out

    def per_player(names: Sequence[str]) -> np.ndarray:  # (rows, len(names), players, K)
        return np.stack([dense([queries.integrated.player_name(name, j) for name in names]) for j in range(players)], 2)

    weight_names, sum_names = measures.weight_names, measures.sum_names
    return _with_weights(
        ks, dense(weight_names), dense(sum_names), per_player(weight_names), per_player(sum_names), measures
    )


def _with_weights(
    ks: np.ndarray,
    counts: np.ndarray,
    sums: np.ndarray,
    player_counts: np.ndarray,
    player_sums: np.ndarray,
    measures: Measures,
) -> tuple[IntegratedHistogram, np.ndarray]:
    """The histogram of these dense arrays (`IntegratedHistogram`'s), and each target's weights of its
    full cohort and of each player's cohort alone: (targets, weightings, 1 + players)."""
    totals = counts.sum(axis=-1)  # W_b of every subject
    similar_alone = totals[..., None] - player_counts.sum(axis=-1)  # (rows, weightings, players)
    full = counts[..., 0] if ks.size and ks[0] == 0 else np.zeros(counts.shape[:2])
    weights = np.concatenate([full[..., None], similar_alone], axis=-1)
    histogram = IntegratedHistogram(ks, counts, sums, player_counts, player_sums, measures.weighting_of_game)
    return histogram, weights


class Curves(NamedTuple):
    """The refinement curves of a batch of targets along each target's order of players: the cohort's
    weight and the centred means of every outcome after the first m players are required similar
    (insertion: m = 0 is every subject, m = players the full cohort) or after the first m are no
    longer required (deletion: m = 0 is the full cohort)."""

    insertion_weight: np.ndarray
    """(rows, players + 1)."""
    insertion: np.ndarray
    """(rows, outcomes, players + 1): cohort means of y minus the pilot value."""
    deletion_weight: np.ndarray
    deletion: np.ndarray


def refinement_curves(
    engine: Engine,
    prepared: Prepared,
    subjects: Subjects,
    start: int,
    batch: pa.Table,
    ranks: np.ndarray,
    *,
    deletion: bool = True,
) -> Curves:
    """The insertion (and `deletion`) curves of the `batch` of targets (from row `start` of the targets
    `subjects` were made for), each along its players' `ranks` ((rows, players), 1 for the first): one
    GROUP BY target, smallest dissimilar rank (and one by largest), O(n d) per target, exact."""
    players = players_of(prepared)
    count, outcomes = len(players), prepared.measures.outcomes
    rows = batch.num_rows
    names = [prepared.measures.weight_name(0), *(prepared.measures.sum_name(k, 0) for k in range(outcomes))]
    curves = []
    for largest in (False, True)[: 2 if deletion else 1]:
        if subjects.kernel is not None:  # the largest rank is the smallest of the reversed ranks, reversed
            ((_, totals),) = _kernel_passes(  # one pass: every target of the batch
                prepared,
                subjects.kernel,
                start,
                batch,
                players,
                "following the players' order",
                ranks=count + 1 - ranks if largest else ranks,
            )
            dense = np.moveaxis(totals[..., 0], 1, 0)  # (sums, rows, count + 2)
            if largest:  # cell r of the reversed ranks is cell count + 1 - r
                dense = dense[..., ::-1]
        else:
            with engine.temporary(engine.upload(_with_ranks(batch, ranks), "ranked_targets")) as uploaded:
                sql = queries.integrated.rank_histogram(
                    _sql_inputs(engine, prepared, subjects.weighted), uploaded, largest=largest
                )
                columns = fetch_numpy(engine, sql, context="following the players' order")
            dense = np.zeros((len(names), rows, count + 2))
            target = np.asarray(columns["target"], dtype=np.int64)
            rank = np.asarray(columns["rank"], dtype=np.int64)
            for index, name in enumerate(names):
                np.add.at(dense[index], (target, rank), np.asarray(columns[name], dtype=np.float64))
        if largest:  # in the cohort after m players are dropped: largest dissimilar rank <= m
            cumulative = np.cumsum(dense[..., : count + 1], axis=-1)
        else:  # in the cohort of the first m players: smallest dissimilar rank > m
            cumulative = np.cumsum(dense[..., ::-1], axis=-1)[..., ::-1][..., 1:]
        weight = cumulative[0]
        curves.append((weight, np.moveaxis(cumulative[1:] / weight, 0, 1)))
    if not deletion:
        curves.append((np.zeros((rows, 0)), np.zeros((rows, outcomes, 0))))
    (inserted_weight, inserted), (deleted_weight, deleted) = curves
    return Curves(inserted_weight, inserted, deleted_weight, deleted)


def _with_ranks(batch: pa.Table, ranks: np.ndarray) -> pa.Table:
    """The `batch` of targets with each player's rank as a column (`queries.integrated.rank_column`),
    built at once: a column appended at a time copied the schema d times (a second at d = 1,024)."""
    names = [queries.integrated.rank_column(player) for player in range(ranks.shape[1])]
    columns = [pa.array(ranks[:, player], pa.int32()) for player in range(ranks.shape[1])]
    return pa.Table.from_arrays([*batch.columns, *columns], names=[*batch.column_names, *names])
