"""The steps every computation shares: read the data, check it, define the subjects, pick targets.

One pass over the data computes every whole-table statistic; the subjects relation then holds what
the similarity tests compare. Targets are selected separately (`select_targets`), and the target
rows as they are in the data are read only by computations that report them (`read_target_data`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql.queries import compile
from cohortsql.engines.base import POSITION_COLUMN, Engine, Input, fetch_record
from cohortsql.errors import CohortError
from cohortsql.spec.measures import Measures
from cohortsql.spec.features import (
    Feature,
    ResolvedFeature,
    SimilarityArgument,
    plan_features,
    resolve_feature,
    statistic_value,
)
from cohortsql.spec.similarity import QuantileWindow, SqlPredicate
from cohortsql.sql.text import check_expression

BATCH_MEMORY_BYTES = 256 * 2**20
"""Budget for the numpy arrays of one batch of targets; with an engine memory limit, a quarter of it
when that is less."""

COMPRESS_BELOW = 0.8
"""Identical subjects are collapsed before the join when the distinct predictor rows are at most this
fraction of the rows (estimated with approx_count_distinct); otherwise collapsing costs more than it saves."""

Targets = None | str | int | float | Sequence[Any] | np.ndarray | pl.Series | pa.Array
"""None (every row), a SQL predicate, a sample size (int) or fraction (float), or a list of ids."""


@dataclass(frozen=True)
class Prepared:
    """The data on the engine, the resolved features, whole-table statistics and the subjects relations."""

    input: Input
    id: str | None
    """The caller's id column (None: ids are row positions)."""
    id_sql: str
    """SQL of each row's id in the data: the id column, or the position column."""
    outcomes: tuple[str, ...]
    """The explained columns y_k (none for uniqueness Shapley)."""
    weight: str | None
    """The case-weight column (None: every row weighs 1)."""
    features: tuple[ResolvedFeature, ...]
    statistics: dict[str, Any]
    pilots: tuple[float, ...]
    """Each y_k is stored as y_k - pilot_k, so its sums keep their digits (see ``sql/pilot.sql``)."""
    subjects: str
    """The subjects relation (see ``sql/subjects.sql``)."""
    target_predicate: str | None
    compressed: bool
    """Whether identical predictor rows are collapsed before the join (see `COMPRESS_BELOW`)."""
    batch_bytes: int
    """Budget for one batch's numpy arrays: targets per batch are derived from it and d."""
    measures: Measures
    """What the histogram sums: outcomes, case weights, bootstrap replicates."""

    @property
    def centred_means(self) -> np.ndarray:
        """ybar_k - pilot_k for each outcome: the weighted means of the stored values."""
        return np.array([self.statistics[f"mean:{index}"] for index in range(len(self.outcomes))], dtype=np.float64)

    @property
    def means(self) -> np.ndarray:
        """ybar_k, the (weighted) mean of each explained column."""
        return np.asarray(self.pilots, dtype=np.float64) + self.centred_means

    @property
    def variances(self) -> np.ndarray:
        """The (weighted) population variance of each explained column."""
        return np.array([self.statistics[f"variance:{index}"] for index in range(len(self.outcomes))], dtype=np.float64)

    @property
    def subject_count(self) -> int:
        """How many rows are subjects (rows of positive weight)."""
        return int(self.statistics["subjects"])

    @property
    def total_weight(self) -> float:
        """The subjects' total case weight (their number when unweighted)."""
        return float(self.statistics["total_weight"] if self.weight is not None else self.statistics["subjects"])

    @property
    def d(self) -> int:
        return len(self.features)

    @property
    def subject_rows(self) -> int:
        """Rows each target is compared with: distinct predictor rows (estimated) when collapsed, else n."""
        return min(self.subject_count, int(self.statistics["distinct_rows"])) if self.compressed else self.subject_count

    @property
    def custom(self) -> bool:
        """Whether any feature has a ``sql:`` kind (which may read any column of a row)."""
        return any(isinstance(feature.kind, SqlPredicate) for feature in self.features)


@dataclass(frozen=True)
class TargetSet:
    """The targets: their subject rows in id order, and the distinct ones computed once."""

    table: pa.Table
    """The targets' rows of the subjects relation, in id order."""
    distinct: pa.Table
    """One row per distinct target (targets with identical predictors share every cohort)."""
    group: np.ndarray
    """For each row of `table`, its row in `distinct`."""
    weights: np.ndarray
    """Each target's weight under every weighting (its case weight, or 1, then its bootstrap
    replicate weights), shape (targets, weightings)."""
    multiplicity: np.ndarray
    """For each distinct target, the total weight of the targets it stands for under every weighting
    (unweighted: how many they are), shape (distinct targets, weightings)."""
    population: int | None
    """n when the targets are every row or a random sample of them, else None."""
    seed: int | None
    """The seed of a random sample of targets."""

    @property
    def count(self) -> int:
        return self.table.num_rows

    def numbered(self, start: int = 0, length: int | None = None) -> pa.Table:
        """A slice of the distinct targets with ``__cohort_batch`` = 0, 1, ... for SQL that needs their order."""
        batch = self.distinct.slice(start, length)
        return batch.append_column("__cohort_batch", pa.array(np.arange(batch.num_rows, dtype=np.int32)))


def prepare(
    engine: Engine,
    data: Any,
    *,
    outcomes: Sequence[str],
    similarity: SimilarityArgument,
    id: str | None,
    target_predicate: str | None,
    max_features: int,
    weight: str | None = None,
    replicates: int = 0,
    seed: int = 0,
) -> Prepared:
    """Register `data`, check the request and its statistics, and define the subjects relations.

    With a `weight` column, rows of weight zero are left out everywhere (as if dropped) and every
    statistic is weighted; `replicates` Bayesian-bootstrap weightings are drawn with `seed`."""
    dialect = engine.dialect
    if target_predicate is not None:
        target_predicate = check_expression(target_predicate, "targets")
    source = engine.register_input(data, positions=id is None)
    features = plan_features(source.schema, similarity, outcomes, id, weight)
    if len(features) > max_features:
        raise CohortError(
            f"this computation handles at most {max_features} features; got {len(features)}: drop or merge features"
        )
    id_sql = dialect.quote(POSITION_COLUMN if id is None else id)
    relation = source.relation if weight is None else _positive_rows(engine, source.relation, weight, id_sql, id)
    if engine.memory_budget is not None or weight is not None:
        dialect = dialect.with_known_quantiles(_sorted_quantiles(engine, relation, features, weight))
    pilots = tuple(_pilot(engine, relation, outcome) for outcome in outcomes)
    pilot_sql = [dialect.number(pilot) for pilot in pilots]
    # sql: predicates may read any column of a row: rows can only be merged when none is used.
    mergeable = not any(isinstance(feature.kind, SqlPredicate) for feature in features)
    aggregates = compile.statistics_aggregates(
        features, outcomes, id_sql, pilot_sql, weight, dialect, check_ids=id is not None, distinct_rows=mergeable
    )
    statistics = fetch_record(
        engine, compile.table_statistics(relation, aggregates, dialect), context="computing table statistics"
    )
    _check_table(statistics, outcomes, id)
    statistics.update(_moments(statistics, len(outcomes), weighted=weight is not None))
    n = int(statistics["subjects"])
    resolved = tuple(
        resolve_feature(feature, _feature_statistics(statistics, feature.index), n) for feature in features
    )
    compress = mergeable and statistics["distinct_rows"] <= COMPRESS_BELOW * n
    measures = Measures(len(outcomes), weighted=weight is not None, replicates=replicates, seed=seed)
    subjects = engine.create(
        compile.subjects(
            relation, resolved, outcomes, pilot_sql, weight, id_sql, target_predicate, not mergeable, dialect
        ),
        "subjects",
        # Read once per batch of targets when not collapsed: store it unless the input is cheap to scan.
        materialize=not compress and not source.rescans_are_cheap,
        context="reading the data" + (f" with targets {target_predicate!r}" if target_predicate else ""),
    )
    return Prepared(
        input=source,
        id=id,
        id_sql=id_sql,
        outcomes=tuple(outcomes),
        weight=weight,
        features=resolved,
        statistics=statistics,
        pilots=pilots,
        subjects=subjects,
        target_predicate=target_predicate,
        compressed=compress,
        batch_bytes=_batch_bytes(engine),
        measures=measures,
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


def weigh_subjects(engine: Engine, prepared: Prepared) -> WeightedSubjects:
    """Define the relation of subjects with their measures (bootstrap draws computed once: an md5 each)."""
    measures = prepared.measures
    relation = engine.create(
        compile.collapsed_subjects(prepared.subjects, prepared.features, measures, engine.dialect)
        if prepared.compressed
        else compile.weighted_subjects(prepared.subjects, measures, engine.dialect),
        "weighted_subjects",
        materialize=prepared.compressed or measures.replicates > 0,
        context="collapsing identical subjects" if prepared.compressed else "weighing the subjects",
    )
    if not measures.replicates:
        return WeightedSubjects(relation, prepared.centred_means, np.array([prepared.total_weight]))
    totals = fetch_record(
        engine,
        compile.measure_totals(relation, measures, "collapsed" if prepared.compressed else "weighted"),
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


def _positive_rows(engine: Engine, source: str, weight: str, id_sql: str, id: str | None) -> str:
    """Check the case-weight column and return the relation of the rows of positive weight."""
    checks = fetch_record(
        engine,
        compile.weight_checks(source, weight, id_sql, engine.dialect),
        context=f"checking weight column {weight!r}",
    )
    if checks["bad_weights"]:
        where = "row" if id is None else f"{id} ="
        raise CohortError(
            f"weight column {weight!r} has {checks['bad_weights']} negative, NULL, NaN or infinite values"
            f" (the first at {where} {checks['first_bad_weight']!r}); weights must be finite and >= 0"
        )
    if not checks["positive_rows"]:
        total = checks["total_weight"]
        raise CohortError(
            f"weight column {weight!r} sums to {0 if total is None else total}: at least one row needs a positive weight"
        )
    return engine.create(
        compile.positive_weights(source, weight, engine.dialect),
        "weighted_rows",
        materialize=False,
        context="weighing rows",
    )


def _moments(statistics: dict[str, Any], outcomes: int, *, weighted: bool) -> dict[str, float]:
    """Each outcome's centred mean and population variance, weighted when the rows are."""
    moments: dict[str, float] = {}
    for index in range(outcomes):
        if not weighted:
            moments[f"mean:{index}"] = float(statistics[f"mean:{index}"])
            moments[f"variance:{index}"] = float(statistics[f"variance:{index}"])
            continue
        total = float(statistics["total_weight"])
        mean = float(statistics[f"weighted_sum:{index}"]) / total
        moments[f"mean:{index}"] = mean
        moments[f"variance:{index}"] = max(0.0, float(statistics[f"weighted_squares:{index}"]) / total - mean * mean)
    return moments


def _sorted_quantiles(
    engine: Engine, source: str, features: tuple[Feature, ...], weight: str | None
) -> dict[tuple[str, float], float | None]:
    """The quantiles that quantile windows need, from order statistics (a sort spills; an exact
    quantile aggregate holds every value in memory and fails under a small memory limit). With case
    weights, a weight counts as that many repetitions of the row."""
    known: dict[tuple[str, float], float | None] = {}
    for feature in features:
        if not isinstance(feature.kind, QuantileWindow):
            continue
        value = statistic_value(feature.values, engine.dialect.quote(feature.name), engine.dialect)
        probabilities = (feature.kind.p, 1 - feature.kind.p)
        rows = engine.fetch_arrow(
            compile.order_statistics(source, value, probabilities, engine.dialect)
            if weight is None
            else compile.weighted_order_statistics(source, value, weight, probabilities, engine.dialect),
            context=f"sorting feature {feature.name!r} for its quantiles",
        ).to_pylist()
        for probability in probabilities:
            known[(value, probability)] = (
                interpolated_quantile(rows, probability) if weight is None else weighted_quantile(rows, probability)
            )
    return known


def interpolated_quantile(rows: list[dict[str, Any]], probability: float) -> float | None:
    """The linear-interpolated quantile (numpy's default, DuckDB's quantile_cont, Spark's percentile)
    from rows of ``order_index``, ``value`` and ``n`` holding the order statistics it needs."""
    if not rows:
        return None
    values = {row["order_index"]: float(row["value"]) for row in rows}
    position = (rows[0]["n"] - 1) * probability
    low = math.floor(position)
    lower = values[low]
    upper = values.get(low + 1, lower)
    return lower + (upper - lower) * (position - low)


def weighted_quantile(rows: list[dict[str, Any]], probability: float) -> float | None:
    """The linear-interpolated quantile of the table with every row repeated `weight` times, from rows
    of ``value``, ``before``, ``upto`` (the positions it holds) and ``total`` (see ``sql/weighted_order_statistics.sql``)."""
    if not rows:
        return None
    position = (rows[0]["total"] - 1) * probability
    low = math.floor(position)

    def at(place: float) -> float | None:
        return next((float(row["value"]) for row in rows if row["before"] <= place < row["upto"]), None)

    lower = at(low)
    if lower is None:
        raise RuntimeError(f"no row holds position {low} of the weighted order statistics")
    upper = at(low + 1)
    upper = lower if upper is None else upper
    return lower + (upper - lower) * (position - low)


def _pilot(engine: Engine, source: str, prediction: str) -> float:
    rows = engine.fetch_arrow(compile.pilot(source, prediction, engine.dialect), context="reading the data")
    values = [value for value in rows.column("pilot").to_pylist() if value is not None]
    return float(values[0]) if values else 0.0


def _batch_bytes(engine: Engine) -> int:
    limit = engine.memory_budget
    return BATCH_MEMORY_BYTES if limit is None else min(BATCH_MEMORY_BYTES, limit // 4)


def _check_table(statistics: dict[str, Any], outcomes: Sequence[str], id: str | None) -> None:
    if statistics["subjects"] == 0:
        raise CohortError("the data has no rows; cohort Shapley needs at least one subject")
    for index, outcome in enumerate(outcomes):
        if statistics[f"bad_predictions:{index}"]:
            where = "row" if id is None else f"{id} ="
            raise CohortError(
                f"prediction column {outcome!r} has {statistics[f'bad_predictions:{index}']} NULL, NaN or infinite"
                f" values (the first at {where} {statistics[f'first_bad_prediction:{index}']!r}); drop or fill them"
            )
    if id is None:
        return
    if statistics["missing_ids"]:
        raise CohortError(f"id column {id!r} has {statistics['missing_ids']} NULL values; ids must identify rows")
    duplicates = statistics["subjects"] - statistics["distinct_ids"]
    if duplicates:
        raise CohortError(f"id column {id!r} has {duplicates} duplicate values; ids must identify rows")


def _feature_statistics(statistics: dict[str, Any], index: int) -> dict[str, Any]:
    prefix = compile.statistic_alias(index, "")
    return {key[len(prefix) :]: value for key, value in statistics.items() if key.startswith(prefix)}


# -- targets -------------------------------------------------------------------------------


def is_sample(targets: object) -> bool:
    """Whether `targets` asks for a random sample: a count (int) or a fraction (float)."""
    return isinstance(targets, (int, float, np.integer, np.floating)) and not isinstance(targets, bool)


def select_targets(
    engine: Engine, prepared: Prepared, targets: Targets, seed: int | None, sample: int | float | None = None
) -> TargetSet:
    """The target rows: every row, the rows of the predicate, a random sample of either, or the rows
    with the given ids. `targets` as a count or fraction is a sample of every row (`sample` alone)."""
    subjects = prepared.subjects
    condition = compile.target_condition(prepared.target_predicate is not None, None)
    population = None
    if is_sample(targets):
        if sample is not None:
            raise CohortError("give the sample size once: targets=<count or fraction> or sample=, not both")
        targets, sample = None, targets
    if sample is not None:
        if not (targets is None or isinstance(targets, str)):
            raise CohortError("sample= draws from every row or from a targets predicate, not from a list of ids")
        if seed is None:
            seed = int(np.random.default_rng().integers(2**31))
        population = prepared.subject_count if targets is None else _count(engine, subjects, condition)
        if population == 0:
            raise CohortError(f"targets {prepared.target_predicate!r} selects no rows; loosen the predicate")
        size = _sample_size(sample, population)
        sql = compile.sampled_targets(subjects, condition, size, seed, prepared.measures, engine.dialect)
        table = engine.fetch_arrow(sql, context="selecting a sample of targets")
    elif targets is None or isinstance(targets, str):
        table = engine.fetch_arrow(
            compile.target_rows(subjects, condition, prepared.measures, engine.dialect), context="selecting targets"
        )
        if table.num_rows == 0:
            raise CohortError(f"targets {prepared.target_predicate!r} selects no rows; loosen the predicate")
        population = prepared.subject_count if targets is None else None
        seed = None
    else:
        table = _targets_by_id(engine, prepared, targets)
        seed = None
    weights = np.column_stack(
        [table.column(f"__cohort_{name}").to_numpy() for name in prepared.measures.weight_names]
    ).astype(np.float64)
    distinct, group = _distinct_targets(table, prepared.features, merge=not prepared.custom)
    multiplicity = np.zeros((distinct.num_rows, weights.shape[1]))
    np.add.at(multiplicity, group, weights)
    return TargetSet(table, distinct, group, weights, multiplicity, population, seed)


def _count(engine: Engine, subjects: str, condition: str) -> int:
    return int(fetch_record(engine, compile.row_count(subjects, condition), context="counting targets")["n"])


def _sample_size(sample: object, n: int) -> int:
    if isinstance(sample, bool) or not is_sample(sample):
        raise CohortError(f"sample must be a count (a whole number) or a fraction of the rows, got {sample!r}")
    if isinstance(sample, (int, np.integer)):
        if not 1 <= sample <= n:
            raise CohortError(f"a sample of {sample} targets must be between 1 and the {n} rows it is drawn from")
        return int(sample)
    assert isinstance(sample, (float, np.floating))
    if not 0 < sample <= 1:
        raise CohortError(f"a sample fraction of {sample} must be in (0, 1]")
    return max(1, math.ceil(float(sample) * n))


def _targets_by_id(engine: Engine, prepared: Prepared, targets: Any) -> pa.Table:
    if not isinstance(targets, (Sequence, np.ndarray, pl.Series, pa.Array)):
        raise CohortError(
            "targets must be None, a SQL predicate, a sample size or fraction, or a list of id values;"
            f" got {type(targets).__name__}"
        )
    return rows_by_id(engine, prepared, targets, role="target", within_targets=True)


def rows_by_id(engine: Engine, prepared: Prepared, ids: Any, *, role: str, within_targets: bool) -> pa.Table:
    """The subject rows with the given ids, in id order; a `CohortError` names the `role` ids not
    found. `within_targets`: only among the rows of the caller's targets predicate."""
    requested = requested_ids(ids, id_type(prepared), prepared.id)
    column = "row positions" if prepared.id is None else f"id column {prepared.id!r}"
    with id_membership(engine, "__cohort_id", requested) as membership:
        condition = compile.target_condition(within_targets and prepared.target_predicate is not None, membership)
        table = engine.fetch_arrow(
            compile.target_rows(prepared.subjects, condition, prepared.measures, engine.dialect),
            context=f"matching {role} ids to the {column}",
        )
    found = pl.Series(table.column("__cohort_id"))
    missing = pl.Series(requested).filter(~pl.Series(requested).is_in(found.implode())).unique(maintain_order=True)
    if len(missing):
        shown = ", ".join(repr(value) for value in missing.head(5).to_list())
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        dropped = " (rows of weight 0 are left out)" if prepared.weight is not None else ""
        raise CohortError(f"{role} ids not found in the {column}{dropped}: {shown}{more}")
    return table


def id_type(prepared: Prepared) -> pa.DataType:
    """The Arrow type of the ids: the id column's, or int64 for row positions."""
    if prepared.id is None:
        return pa.int64()
    return prepared.input.schema.field(prepared.id).type


def requested_ids(values: Any, dtype: pa.DataType, id: str | None) -> pa.Array:
    """Target ids as an Arrow array of the id column's type (text from the command line is parsed)."""
    if isinstance(values, pl.Series):
        listed = values.to_list()
    elif isinstance(values, pa.Array):
        listed = values.to_pylist()
    else:
        listed = list(values)
    if not listed:
        raise CohortError("targets is an empty list; pass None to explain every row")
    if any(value is None for value in listed):
        raise CohortError("target ids include None; ids identify rows and are never missing")
    try:
        array = pa.array(listed)
    except OverflowError:
        raise CohortError(f"target ids {listed[:5]!r} hold a number too large for any id column") from None
    except (pa.ArrowException, TypeError, ValueError):
        raise CohortError(f"target ids must all be of one type, got {listed[:5]!r}") from None
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    try:
        return array.cast(dtype)
    except (pa.ArrowException, TypeError, ValueError) as error:
        column = "the row positions (integers)" if id is None else f"id column {id!r} ({dtype})"
        raise CohortError(f"target ids {listed[:5]!r} are not values of {column}: {error}") from None


LITERAL_IDS = 5_000
"""Up to this many ids are written into the query (an IN list the engine pushes into its scan: 8 ms
against 38 ms for a semi-join on 2,000,000 rows, measured on DuckDB); more are uploaded as a table."""


@contextmanager
def id_membership(engine: Engine, column: str, ids: pa.Array) -> Iterator[str]:
    """SQL testing that `column` is one of `ids`, for the duration of a with-block."""
    if len(ids) <= LITERAL_IDS:
        yield compile.id_membership(column, ids.to_pylist(), None, engine.dialect)
        return
    uploaded = engine.upload(pa.table({"id": ids}), "ids")
    try:
        yield compile.id_membership(column, None, uploaded, engine.dialect)
    finally:
        engine.drop(uploaded)


def read_target_data(engine: Engine, prepared: Prepared, targets: TargetSet) -> pl.DataFrame:
    """The target rows as they are in the data (every column), in id order, read by id."""
    return read_rows(engine, prepared, targets.table)


def read_rows(engine: Engine, prepared: Prepared, rows: pa.Table) -> pl.DataFrame:
    """The data rows (every column, as they are) of `rows` (subject rows in id order), read by id."""
    ids = rows.column("__cohort_id").combine_chunks()
    every_row = not prepared.measures.weighted and len(ids) == prepared.subject_count
    # Every row of the data (ids are distinct): no list of ids to write and parse (5 ms for Boston's 506).
    with nullcontext("TRUE") if every_row else id_membership(engine, prepared.id_sql, ids) as membership:
        read = engine.fetch_arrow(
            compile.target_data(
                prepared.input.relation, prepared.input.schema.names, prepared.id_sql, membership, engine.dialect
            ),
            context="reading the target rows",
        )
    if not read.column("__cohort_id").equals(rows.column("__cohort_id")):
        raise RuntimeError("the rows read back do not match the requested ids (ids out of order)")
    frame = pl.from_arrow(read.drop_columns(["__cohort_id"]))
    assert isinstance(frame, pl.DataFrame)
    return frame


def _distinct_targets(
    target_table: pa.Table, features: tuple[ResolvedFeature, ...], merge: bool
) -> tuple[pa.Table, np.ndarray]:
    """Targets with identical prepared predictors, computed once and fanned out afterwards: the first
    of each, and each target's group."""
    rows = target_table.num_rows
    if not merge:
        return target_table, np.arange(rows)
    columns = [feature.column for feature in features]
    prepared = pl.from_arrow(target_table.select(columns))
    assert isinstance(prepared, pl.DataFrame)
    groups = (
        prepared.with_row_index("__cohort_position")
        .group_by(columns, maintain_order=True)
        .agg(pl.col("__cohort_position"))
    )
    first = groups["__cohort_position"].list.first().to_numpy()
    members = groups.select("__cohort_position").with_row_index("__cohort_group").explode("__cohort_position")
    target_group = np.empty(rows, dtype=np.int64)
    target_group[members["__cohort_position"].to_numpy()] = members["__cohort_group"].to_numpy()
    return target_table.take(first), target_group


def every_row(engine: Engine, prepared: Prepared, sample: int | None, seed: int) -> pa.Table:
    """Every subject row (whatever the targets predicate), in id order, or `sample` of them drawn at
    random with `seed` the way targets are sampled."""
    condition = compile.target_condition(False, None)
    if sample is None:
        sql = compile.target_rows(prepared.subjects, condition, prepared.measures, engine.dialect)
    else:
        sql = compile.sampled_targets(prepared.subjects, condition, sample, seed, prepared.measures, engine.dialect)
    return engine.fetch_arrow(sql, context="reading the baseline rows")
