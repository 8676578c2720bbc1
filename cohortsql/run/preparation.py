"""The preparation every call shares: register the data, check it, compute the whole-table statistics
once, define the subjects.

One pass over the data computes every whole-table statistic; the subjects relation then holds what
the similarity tests compare. Targets are selected separately (`select_targets`), and the target
rows as they are in the data are read only by computations that report them (`read_target_data`), or
with targets chosen by id, in the same query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from cohortsql import queries
from cohortsql._typing import GroupValues
from cohortsql.engines.base import Engine, fetch_record
from cohortsql.engines.id_counts import repeated_ids
from cohortsql.engines.inputs import POSITION_COLUMN, Input
from cohortsql.errors import CohortError
from cohortsql.request.features import ResolvedFeature, plan_features, resolve_feature
from cohortsql.request.groups import FeatureGroups, plan_groups
from cohortsql.request.measures import Measures
from cohortsql.request.options import Grouping
from cohortsql.request.similarity import SimilarityArgument, SqlPredicate
from cohortsql.request.user_sql import check_expression
from cohortsql.run.data_checks import (
    check_condition,
    check_finite,
    check_not_empty,
    check_powers_keep_their_digits,
    check_squares_fit,
    check_table,
    positive_rows,
)
from cohortsql.run.feature_statistics import (
    count_distinct_values,
    count_nonfinite_values,
    known_quantiles,
    measure_tails,
)
from cohortsql.run.ids_in_memory import ids_counted_here
from cohortsql.run.streamed_statistics import plain_features, streamed_statistics
from cohortsql.run.table_statistics import TableStatistics

BATCH_MEMORY_BYTES = 256 * 2**20
"""Budget for the numpy arrays of one batch of targets; with an engine memory limit, a quarter of it
when that is less."""

ENGINE_MEMORY_BYTES = 2**30
"""What one query may hold in the engine when no memory limit says (see `cohortsql.run.replicates.ENGINE_SUM_BYTES`)."""

COMPRESS_BELOW = 0.8
"""Identical subjects are collapsed before the join when the distinct predictor rows are at most this
fraction of the rows (estimated with approx_count_distinct); otherwise collapsing costs more than it saves."""


@dataclass(frozen=True)
class Prepared:
    """The data on the engine, the resolved features, whole-table statistics and the subjects relations."""

    input: Input
    subject_data: str
    """The subjects' rows as they are in the data (every column): the input's relation, or with a `weight`
    column its rows of positive weight (a row of weight 0 is dropped everywhere)."""
    id: str | None
    """The caller's id column (None: ids are row positions)."""
    id_sql: str
    """SQL of each row's id in the data: the id column, or the position column."""
    outcomes: tuple[str, ...]
    """The explained columns y_k (none for uniqueness Shapley)."""
    powers: tuple[int, ...]
    """The powers of each y_k - pilot_k stored and summed (`cohortsql.games.base.Game.powers`): the
    explained values are every column's powers in turn, and `statistics`, `pilots` and `measures`
    count those values."""
    weight: str | None
    """The case-weight column (None: every row weighs 1)."""
    features: tuple[ResolvedFeature, ...]
    statistics: TableStatistics
    pilots: tuple[float, ...]
    """Each y_k is stored as y_k - pilot_k, so its sums keep their digits (see ``sql/pilot.sql``); a
    higher power of it has pilot 0."""
    subjects: str
    """The subjects relation (see ``sql/subjects.sql``)."""
    subjects_with_data: str | None
    """The subjects' SELECT with the data's own columns beside them, so that targets chosen by id are read
    with their data in one query (`cohortsql.run.targets.select_targets`), less the predictors that are
    a data column as it is (`queries.subjects.is_plain`: the reader copies them; read twice, 1,024 binary
    features took 0.075 s a target's row, 0.042-0.046 s read once); None for a snapshot, whose subjects
    are stored as they were."""
    target_predicate: str | None
    compressed: bool
    """Whether identical predictor rows are collapsed before the join (see `COMPRESS_BELOW`)."""
    batch_bytes: int
    """Budget for one batch's numpy arrays: targets per batch are derived from it and d."""
    engine_bytes: int
    """What one query may hold in the engine: its memory limit, else `ENGINE_MEMORY_BYTES`."""
    measures: Measures
    """What the histogram sums: outcomes, case weights, bootstrap replicates."""
    groups: FeatureGroups | None = None
    """The players when features are explained in groups (``groups=``), else None: each feature alone."""

    @property
    def centred_means(self) -> np.ndarray:
        """ybar_k - pilot_k for each outcome: the weighted means of the stored values."""
        return np.array(self.statistics.centred_means, dtype=np.float64)

    @property
    def means(self) -> np.ndarray:
        """ybar_k, the (weighted) mean of each explained column."""
        return np.asarray(self.pilots, dtype=np.float64) + self.centred_means

    @property
    def variances(self) -> np.ndarray:
        """The (weighted) population variance of each explained column."""
        return np.array(self.statistics.variances, dtype=np.float64)

    @property
    def subject_count(self) -> int:
        """How many rows are subjects (rows of positive weight)."""
        return self.statistics.subjects

    @property
    def total_weight(self) -> float:
        """The subjects' total case weight (their number when unweighted)."""
        return self.statistics.total_weight

    @property
    def d(self) -> int:
        return len(self.features)

    @property
    def feature_names(self) -> tuple[str, ...]:
        return tuple(feature.name for feature in self.features)

    @property
    def players(self) -> int:
        """How many players the games have: the groups with ``groups=``, else the features (d)."""
        return self.d if self.groups is None else len(self.groups.names)

    @property
    def player_names(self) -> tuple[str, ...]:
        """The players' names: the groups' (a feature alone keeps its own), else the features'."""
        return self.feature_names if self.groups is None else self.groups.names

    @property
    def subject_rows(self) -> int:
        """Rows each target is compared with: distinct predictor rows (estimated) when collapsed, else n."""
        rows = self.statistics.distinct_rows
        return min(self.subject_count, rows) if self.compressed and rows is not None else self.subject_count

    @property
    def custom(self) -> bool:
        """Whether any feature has a ``sql:`` kind (which may read any column of a row)."""
        return any(isinstance(feature.kind, SqlPredicate) for feature in self.features)


def prepare(
    engine: Engine,
    data: Any,
    *,
    outcomes: Sequence[str],
    similarity: SimilarityArgument,
    id: str | None,
    target_predicate: str | None,
    max_features: int,
    powers: tuple[int, ...] = (1,),
    weight: str | None = None,
    replicates: int = 0,
    seed: int = 0,
    groups: Mapping[str, Sequence[str]] | None = None,
    group_values: GroupValues = Grouping.group_values,
    snapshot: bool = False,
    rows_identified: bool = True,
) -> Prepared:
    """Register `data`, check the request and its statistics, and define the subjects relations.

    Without an `id` column, rows are identified by their positions, which an engine must guarantee
    (Spark refuses an input it cannot order); a computation that reads no row by itself (counts by group,
    `cohortsql.fairness`) passes ``rows_identified=False`` and every subject's id is 0.

    With a `weight` column, rows of weight zero are left out everywhere (as if dropped) and every
    statistic is weighted; `replicates` Bayesian-bootstrap weightings are drawn with `seed`; `groups`
    (checked before any row is read) makes each group one player (`cohortsql.request.groups`). With
    `snapshot`, the subjects are stored as they are now (`Engine.create`), for a result read later.
    Each explained column is stored as the `powers` of y_k - pilot_k its games read."""
    dialect = engine.dialect
    if target_predicate is not None:
        target_predicate = check_expression(target_predicate, "targets")
    source = engine.register_input(data, positions=id is None and rows_identified)
    if target_predicate is not None:
        check_condition(engine, source.relation, target_predicate)
    try:
        features = plan_features(source.schema, similarity, outcomes, id, weight)
    except CohortError:
        check_not_empty(engine, source.relation)  # a CSV of a header alone has text columns: say why
        raise
    players = plan_groups(groups, [feature.name for feature in features], group_values)
    if len(features) > max_features:
        raise CohortError(
            f"this computation handles at most {max_features} features; got {len(features)}: drop or merge features"
            " (cohort Shapley and its effects explain thousands with method='integrated': integrated gradient"
            " cohort Shapley, O(n d) per target)"
        )
    id_sql = dialect.quote(id) if id is not None else dialect.quote(POSITION_COLUMN) if rows_identified else "0"
    relation = source.relation if weight is None else positive_rows(engine, source.relation, weight, id_sql, id)
    known = known_quantiles(engine, relation, features, weight)
    integers = [pa.types.is_integer(source.schema.field(outcome).type) for outcome in outcomes]
    read = [_pilot(engine, relation, outcome, exact) for outcome, exact in zip(outcomes, integers)]
    own_pilots = [pilot for pilot, _ in read]
    if not dialect.sums_overflow_to_infinity:  # before any sum, which would stop the query
        check_squares_fit(outcomes, [largest for _, largest in read])
    explained = [outcome for outcome in outcomes for _ in powers]
    pilots = tuple(pilot if power == 1 else 0.0 for pilot in own_pilots for power in powers)
    centred_firsts = [
        queries.statistics.centred(outcome, pilot, dialect) for outcome, pilot in zip(outcomes, own_pilots)
    ]
    centred_values = [queries.statistics.powered(first, power) for first in centred_firsts for power in powers]
    # sql: predicates may read any column of a row: rows can only be merged when none is used.
    mergeable = not any(isinstance(feature.kind, SqlPredicate) for feature in features)
    in_place = engine.memory_budget is None and engine.counts_distinct_beside_aggregates
    # repeated ids counted in this process (the data is in its memory: `ids_in_memory`), among the
    # statistics, or by a grouped query of their own
    ids_here = (
        ids_counted_here(source.in_memory, id, engine.memory_budget)
        # with weights, the subjects are the rows of positive weight, which the engine selects; the
        # distinct rows' estimate joins the statistics
        if id is not None and weight is None and engine.counts_distinct_beside_aggregates
        else None
    )
    ids_apart = id is not None and not in_place and ids_here is None
    streamed = plain_features(engine, features)
    aggregates = queries.statistics.statistics_aggregates(
        features,
        explained,
        id_sql,
        centred_values,
        weight,
        dialect,
        check_ids=id is not None,
        duplicates_in_place=in_place and ids_here is None,
        distinct_rows=mergeable and not ids_apart,
        known=known,
        counted_apart=frozenset(feature.index for feature in streamed),
    )
    # how small each y - pilot gets, in the same pass: its squares must keep their digits
    aggregates |= {
        f"largest:{index}": queries.statistics.largest_magnitude(first) for index, first in enumerate(centred_firsts)
    }
    if dialect.sums_overflow_to_infinity:  # the largest |y| read beside sums that cannot stop the query
        aggregates |= {
            f"largest_value:{index}": queries.statistics.largest_finite(outcome, dialect)
            for index, outcome in enumerate(outcomes)
        }
    row = fetch_record(
        engine, queries.statistics.table_statistics(relation, aggregates, dialect), context="computing table statistics"
    )
    if dialect.sums_overflow_to_infinity:
        largest = [row[f"largest_value:{index}"] for index in range(len(outcomes))]
        check_squares_fit(outcomes, [None if value is None else float(value) for value in largest])
    if streamed:
        row |= streamed_statistics(engine, relation, streamed, source.in_memory if weight is None else None)
    if ids_here is not None:
        row["duplicate_ids"] = repeated_ids(ids_here)
    if ids_apart:  # which then estimates the distinct rows too
        hashed = features if mergeable else ()
        context = "checking that ids are unique"
        row |= engine.count_duplicate_ids(
            queries.statistics.ids_and_row_hashes(relation, id_sql, dialect, hashed),
            rows=row["subjects"],
            context=context,
        ) or fetch_record(engine, queries.statistics.duplicate_ids(relation, id_sql, dialect, hashed), context=context)
    check_table(row, explained, id)
    statistics = TableStatistics.parse(row, len(explained), len(features), weighted=weight is not None)
    check_finite(statistics, row, outcomes, weight, powers)
    check_powers_keep_their_digits(row, outcomes, powers)
    count_nonfinite_values(engine, relation, features, statistics)
    count_distinct_values(engine, relation, features, statistics)
    n = statistics.subjects
    measure_tails(engine, relation, features, statistics, weight)
    resolved = tuple(resolve_feature(feature, statistics.features[feature.index], n) for feature in features)
    compress = mergeable and statistics.distinct_rows is not None and statistics.distinct_rows <= COMPRESS_BELOW * n
    measures = Measures(len(explained), weighted=weight is not None, replicates=replicates, seed=seed)
    values = queries.subjects.explained_values(centred_values, weight, dialect)

    def subjects_select(keep_data_columns: bool, plain_from_data: bool = False) -> str:
        return queries.subjects.subjects(
            relation,
            resolved,
            values,
            id_sql,
            target_predicate,
            keep_data_columns,
            dialect,
            plain_from_data=plain_from_data,
        )

    subjects = engine.create(
        subjects_select(not mergeable),  # sql: predicates may read any of the data's columns
        "subjects",
        # Read once per batch of targets when not collapsed: store it unless the input is cheap to scan.
        materialize=not compress and not source.rescans_are_cheap,
        context="reading the data" + (f" with targets {target_predicate!r}" if target_predicate else ""),
        snapshot=snapshot,
    )
    return Prepared(
        input=source,
        subject_data=relation,
        id=id,
        id_sql=id_sql,
        outcomes=tuple(outcomes),
        powers=tuple(powers),
        weight=weight,
        features=resolved,
        statistics=statistics,
        pilots=pilots,
        subjects=subjects,
        subjects_with_data=None if snapshot else subjects_select(True, plain_from_data=True),
        target_predicate=target_predicate,
        compressed=compress,
        batch_bytes=_batch_bytes(engine),
        engine_bytes=engine.memory_budget or ENGINE_MEMORY_BYTES,
        measures=measures,
        groups=players,
    )


@dataclass(frozen=True)
class WeightedSubjects:
    """The histogram's input: subject rows with their measures (see ``sql/weighted_subjects.sql``),
    identical predictor rows collapsed into one when that pays, and the games' overall means."""

    relation: str
    game_means: np.ndarray
    """The centred overall mean S_bk(all) / W_b(all) of every game, in the order of `Measures`."""
    weight_totals: np.ndarray
    """W_b(all): the total weight of every subject under each weighting (n when unweighted)."""
    draw_groups: bool = False
    """Whether the relation has a row per group of four replicates (`cohortsql.run.replicates`)
    instead of a column per replicate."""


def weigh_subjects(engine: Engine, prepared: Prepared) -> WeightedSubjects:
    """Define the relation of subjects with their measures (bootstrap draws computed once: an md5 each)."""
    measures = prepared.measures
    relation = engine.create(
        queries.measures.collapsed_subjects(prepared.subjects, prepared.features, measures, engine.dialect)
        if prepared.compressed
        else queries.measures.weighted_subjects(prepared.subjects, measures, engine.dialect),
        "weighted_subjects",
        materialize=prepared.compressed or measures.replicates > 0,
        context="collapsing identical subjects" if prepared.compressed else "weighing the subjects",
    )
    if not measures.replicates:
        return WeightedSubjects(relation, prepared.centred_means, np.array([prepared.total_weight]))
    totals = fetch_record(
        engine,
        queries.measures.measure_totals(relation, measures, "collapsed" if prepared.compressed else "weighted"),
        context="summing the bootstrap replicates",
    )
    means, weights = game_means(measures, {name: float(value) for name, value in totals.items()})
    return WeightedSubjects(relation, means, weights)


def game_means(measures: Measures, totals: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """Every game's overall mean S_bk(all) / W_b(all) and every weighting's W_b(all), from the totals
    of the measures' columns."""
    weights = np.array([totals[name] for name in measures.weight_names], dtype=np.float64)
    sums = np.array([totals[name] for name in measures.sum_names], dtype=np.float64)
    return sums / weights[measures.weighting_of_game], weights


def _pilot(engine: Engine, source: str, prediction: str, exact: bool) -> tuple[float | int, float | None]:
    """A pilot value of an explained column (an int for an integer column, `exact`; else a float) and,
    on an engine whose overflowing sums stop the query (`Dialect.sums_overflow_to_infinity`), the
    column's largest finite |y| (None without a finite value, or where the statistics read it)."""
    apart = not engine.dialect.sums_overflow_to_infinity
    rows = engine.fetch_one_row(
        queries.statistics.pilot(source, prediction, engine.dialect, exact=exact, largest=apart),
        context="reading the data",
    ).to_pylist()
    if not rows or rows[0]["pilot"] is None:
        return (0 if exact else 0.0), None
    largest = rows[0].get("largest")
    return (int(rows[0]["pilot"]) if exact else float(rows[0]["pilot"])), None if largest is None else float(largest)


def _batch_bytes(engine: Engine) -> int:
    limit = engine.memory_budget
    return BATCH_MEMORY_BYTES if limit is None else min(BATCH_MEMORY_BYTES, limit // 4)


# -- targets -------------------------------------------------------------------------------
