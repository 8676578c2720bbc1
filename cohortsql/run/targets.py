"""Choosing the targets and reading their rows: every row, a predicate's rows, a seeded random sample
of either (the same on every engine), or the rows with given ids (read in the id column's type);
identical targets are computed once and fanned out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from cohortsql import queries
from cohortsql._typing import Targets
from cohortsql.engines.base import FEW_ROWS, Engine, fetch_numpy, fetch_record
from cohortsql.engines.inputs import POSITION_COLUMN
from cohortsql.errors import CohortError
from cohortsql.request.arguments import RowMask, drawn_seed
from cohortsql.request.features import ResolvedFeature
from cohortsql.run.data_rows import data_frame
from cohortsql.run.preparation import Prepared
from cohortsql.run.replicates import draw_groups
from cohortsql.run.target_ids import (
    id_membership,
    id_type,
    listed_ids,
    read_rows,
    requested_ids,
)


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
    data: pl.DataFrame | None = None
    """The targets' rows as they are in the data (every column, the rows of `table`), when they were read
    with them (targets chosen by id); else None, and `read_target_data` reads them."""
    asked: tuple[Any, ...] | None = None
    """Targets chosen by id: the ids in the order the call listed them (`table` is in id order)."""
    included: int = 0
    """How many targets were explained beside a random sample by ``include=`` (not drawn in it): their
    weights are 0 under every weighting, so that they count in no average over targets."""

    @property
    def count(self) -> int:
        return self.table.num_rows

    def first(self, count: int) -> TargetSet:
        """The first `count` distinct targets, each standing for itself alone (a dry run's pilot)."""
        rows = np.unique(self.group, return_index=True)[1][:count]  # each distinct target's first row
        return TargetSet(
            table=self.distinct.slice(0, len(rows)),
            distinct=self.distinct.slice(0, len(rows)),
            group=np.arange(len(rows)),
            weights=self.weights[rows],
            multiplicity=self.weights[rows],
            population=None,
            seed=self.seed,
        )

    def numbered(self, start: int = 0, length: int | None = None) -> pa.Table:
        """A slice of the distinct targets with ``__cohort_batch`` = 0, 1, ... for SQL that needs their order."""
        batch = self.distinct.slice(start, length)
        return batch.append_column("__cohort_batch", pa.array(np.arange(batch.num_rows, dtype=np.int32)))


def is_sample(targets: object) -> bool:
    """Whether `targets` asks for a random sample: a count (int) or a fraction (float)."""
    return isinstance(targets, (int, float, np.integer, np.floating)) and not isinstance(targets, bool)


def select_targets(
    engine: Engine,
    prepared: Prepared,
    targets: Targets | RowMask,
    seed: int | None,
    sample: int | float | None = None,
    include: Sequence[Any] | None = None,
) -> TargetSet:
    """The target rows: every row, the rows of the predicate, a random sample of either (with the
    `include` ids beside it), or the rows with the given ids. `targets` as a count or fraction is a
    sample of every row (`sample` alone)."""
    subjects = prepared.subjects
    condition = queries.targets.target_condition(prepared.target_predicate is not None, None)
    population = None
    targets, sample = _sample_request(_unmasked(engine, prepared, targets), sample, include)
    data, asked, included = None, None, 0
    if sample is not None:
        seed = drawn_seed(seed)
        population = prepared.subject_count if targets is None else _count(engine, subjects, condition)
        if population == 0:
            raise CohortError(f"targets {prepared.target_predicate!r} selects no rows; loosen the predicate")
        size = _sample_size(sample, population)
        sql = queries.targets.sampled_targets(subjects, condition, size, seed, prepared.measures, engine.dialect)
        table, weights = read_targets(
            engine, prepared, sql, context="selecting a sample of targets", few=size <= FEW_ROWS
        )
        if include is not None:
            table, weights, included = _with_included(engine, prepared, table, include)
    elif targets is None or isinstance(targets, str):
        sql = queries.targets.target_rows(subjects, condition, prepared.measures)
        table, weights = read_targets(engine, prepared, sql, context="selecting targets")
        if table.num_rows == 0:
            raise CohortError(f"targets {prepared.target_predicate!r} selects no rows; loosen the predicate")
        population = prepared.subject_count if targets is None else None
        seed = None
    else:
        table, weights, data = _targets_by_id(engine, prepared, targets, with_data=True)
        asked = tuple(requested_ids(targets, id_type(prepared), prepared.id).to_pylist())
        seed = None
    distinct, group, multiplicity = _distinct(table, weights, prepared)
    return TargetSet(table, distinct, group, weights, multiplicity, population, seed, data, asked, included)


def regrouped(targets: TargetSet, prepared: Prepared, data: pl.DataFrame) -> TargetSet:
    """The same targets for another reading of their rows (`prepared`'s features: a permuted copy in a
    feature's place, the null reference), identical targets found again; `data`, their rows as they are
    in the data."""
    distinct, group, multiplicity = _distinct(targets.table, targets.weights, prepared)
    return replace(targets, distinct=distinct, group=group, multiplicity=multiplicity, data=data)


def _distinct(table: pa.Table, weights: np.ndarray, prepared: Prepared) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The distinct targets of `table` (`_distinct_targets`), each one's group, and their multiplicity
    under every weighting."""
    distinct, group = _distinct_targets(table, prepared.features, merge=not prepared.custom)
    if distinct.num_rows == table.num_rows and np.array_equal(group, np.arange(len(group))):
        return distinct, group, weights  # every target its own: the same weights, not a copy (B columns each)
    multiplicity = np.zeros((distinct.num_rows, weights.shape[1]))
    np.add.at(multiplicity, group, weights)
    return distinct, group, multiplicity


def _with_included(
    engine: Engine, prepared: Prepared, sampled: pa.Table, include: Sequence[Any]
) -> tuple[pa.Table, np.ndarray, int]:
    """The sampled targets and the `include` ids beside them (from any row, whatever the targets
    predicate), read in one query so that they come in the engine's id order, with their weights; an
    included target the sample did not draw weighs 0 under every weighting. Also: how many those are."""
    drawn = sampled.column("__cohort_id").combine_chunks()
    asked = requested_ids(include, id_type(prepared), prepared.id, "include")
    every = pa.concat_arrays([drawn, asked.cast(drawn.type)]).unique()
    table, weights = rows_by_id(engine, prepared, every, role="include", within_targets=False)
    outside = ~np.asarray(pc.is_in(table.column("__cohort_id"), value_set=drawn).to_numpy(zero_copy_only=False))
    weights[outside] = 0.0
    return table, weights, int(outside.sum())


def target_relation(
    engine: Engine,
    prepared: Prepared,
    targets: Targets | RowMask,
    seed: int | None,
    sample: int | float | None = None,
) -> tuple[str, int]:
    """The targets `select_targets` would choose, as a relation of the engine (every subject column,
    ``__cohort_batch`` its id) and their number, with nothing read back but that number: for tables
    of more targets than one machine holds. Ids given in a list are checked against the data first."""
    subjects = prepared.subjects
    condition = queries.targets.target_condition(prepared.target_predicate is not None, None)
    targets, sample = _sample_request(_unmasked(engine, prepared, targets), sample)
    if sample is not None:
        population = prepared.subject_count if targets is None else _count(engine, subjects, condition)
        count = _sample_size(sample, population) if population else 0
        select = queries.targets.sampled_targets(
            subjects, condition, count, drawn_seed(seed), prepared.measures, engine.dialect
        )
    elif targets is None or isinstance(targets, str):
        count = prepared.subject_count if targets is None else _count(engine, subjects, condition)
        select = queries.targets.target_rows(subjects, condition, prepared.measures)
    else:
        table, _, _ = _targets_by_id(engine, prepared, targets, with_data=False)  # refuses ids the data lack
        count = table.num_rows
        ids = table.column("__cohort_id").combine_chunks()
        with id_membership(engine, "__cohort_id", ids, lasting=True) as membership:
            condition = queries.targets.target_condition(prepared.target_predicate is not None, membership)
        select = queries.targets.target_rows(subjects, condition, prepared.measures)
    if count == 0:
        raise CohortError(f"targets {prepared.target_predicate!r} selects no rows; loosen the predicate")
    relation = engine.create(
        queries.targets.numbered_targets(select), "targets", materialize=False, context="selecting targets"
    )
    return relation, count


def _sample_request(
    targets: Targets, sample: int | float | None, include: Sequence[Any] | None = None
) -> tuple[Targets, int | float | None]:
    """(targets, sample) with a count or fraction given as `targets` moved to the sample, checked: a
    sample is drawn from every row or from a predicate's rows, and its size is given once; `include`
    adds ids to a sample, and only to one."""
    if is_sample(targets):
        if sample is not None:
            raise CohortError("give the sample size once: targets=<count or fraction> or sample=, not both")
        targets, sample = None, targets
    if sample is not None and not (targets is None or isinstance(targets, str)):
        raise CohortError(
            "sample= draws from every row or from a targets predicate, not from a list of ids; to explain chosen"
            " ids beside a sample, give them as include="
        )
    if include is not None and sample is None:
        raise CohortError(
            "include= adds ids to a random sample (sample=); without one, list every id to explain in targets="
        )
    return targets, sample


def _unmasked(engine: Engine, prepared: Prepared, targets: Targets | RowMask) -> Targets:
    """`targets` with a boolean mask replaced by the ids of the rows it selects: their positions, where
    the ids are row positions (one value per row of the data, checked); with an id column a mask is
    refused in words (its positions would not name rows), unless that column is itself boolean."""
    if not isinstance(targets, RowMask):
        return targets
    if prepared.id is not None:
        if pa.types.is_boolean(id_type(prepared)):
            return targets.selected.tolist()
        raise CohortError(
            f"targets is a boolean mask ({targets}), but with id={prepared.id!r} targets are ids: pass the ids"
            f" of the rows where it holds (frame.filter(mask)[{prepared.id!r}]), a SQL predicate, or call"
            " df.cohort.<method>(targets=mask), which reads the mask against the frame"
        )
    rows = _count(engine, prepared.input.relation, "TRUE")
    if len(targets.selected) != rows:
        raise CohortError(
            f"targets is a boolean mask of {len(targets.selected)} values, but the data has {rows} rows:"
            " a mask needs one True or False per row"
        )
    if not targets.selected.any():
        raise CohortError("targets is a boolean mask that selects no rows (every value is False)")
    return np.flatnonzero(targets.selected).tolist()


def _count(engine: Engine, subjects: str, condition: str) -> int:
    return int(fetch_record(engine, queries.targets.row_count(subjects, condition), context="counting targets")["n"])


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


def read_targets(
    engine: Engine, prepared: Prepared, sql: str, *, context: str, few: bool = False
) -> tuple[pa.Table, np.ndarray]:
    """The target rows of query `sql` (in id order) and each one's weight under every weighting,
    (targets, 1 + B): its own, then times its draw of each bootstrap replicate, read in long form
    (``sql/target_draws.sql``) so that no query grows with B. `few`: at most `FEW_ROWS` rows."""
    table = (engine.fetch_few_rows if few else engine.fetch_arrow)(sql, context=context)
    own = table.column(f"__cohort_{prepared.measures.weight_name(0)}").to_numpy().astype(np.float64)
    measures = prepared.measures
    if not measures.replicates or table.num_rows == 0:
        return table, own[:, None]
    with draw_groups(engine, measures) as groups:
        drawn = fetch_numpy(
            engine,
            queries.measures.target_draws(f"({sql}) AS chosen", groups, measures, engine.dialect),
            context="drawing the targets' bootstrap weights",
        )
    weights = np.empty((table.num_rows, measures.weightings))
    weights[:, 0] = own
    position = drawn["position"].astype(np.int64)
    for part in range(queries.measures.DRAWS_PER_HASH):
        replicate = queries.measures.DRAWS_PER_HASH * drawn["draw_group"].astype(np.int64) + part + 1
        kept = replicate <= measures.replicates
        weights[position[kept], replicate[kept]] = own[position[kept]] * drawn[f"e{part}"][kept]
    return table, weights


def _targets_by_id(
    engine: Engine, prepared: Prepared, targets: Any, *, with_data: bool
) -> tuple[pa.Table, np.ndarray, pl.DataFrame | None]:
    """The subject rows of the target ids and their weights (`rows_by_id`), and `with_data` their rows as
    they are in the data, read by the same query (`Prepared.subjects_with_data`): one scan of the data
    where reading them apart was a second (on Spark a job of its own, about 0.2 s on 1,000,000 cached
    rows); None when not read."""
    if isinstance(targets, pl.Expr):
        raise CohortError(
            f"targets: a polars expression ({targets}) chooses rows on a polars frame's df.cohort methods, which"
            " evaluate it; here, write it as a SQL predicate (e.g. \"group = 'b'\") or pass a list of ids"
        )
    if not isinstance(targets, (Sequence, np.ndarray, pl.Series, pa.Array)):
        raise CohortError(
            "targets must be None, a SQL predicate, a sample size or fraction, or a list of id values;"
            f" got {type(targets).__name__}"
        )
    source = prepared.subjects_with_data if with_data else None
    if source is None:
        return (*rows_by_id(engine, prepared, targets, role="target", within_targets=True), None)
    table, weights = rows_by_id(
        engine, prepared, targets, role="target", within_targets=True, subjects=f"({source}) AS subjects_with_data"
    )
    table = with_plain_predictors(table, prepared.features)
    names = prepared.input.schema.names
    data = data_frame(table, prepared.input.schema)
    if not prepared.custom:  # the subjects keep the data's columns only for sql: predicates
        dropped = {*names, *([POSITION_COLUMN] if prepared.input.positions else [])}
        # a select of the rest: pyarrow's drop_columns takes 0.6 s for 1,025 names (quadratic)
        table = table.select([name for name in table.column_names if name not in dropped])
    return table, weights, data


def with_plain_predictors(table: pa.Table, features: Sequence[ResolvedFeature]) -> pa.Table:
    """The rows of `Prepared.subjects_with_data` with every predictor: those that are a data column as it
    is (`queries.subjects.is_plain`) copied from it, in the subjects' order of the predictors (after
    ``__cohort_target``)."""
    columns = dict(zip(table.column_names, table.columns))
    predictors = {
        feature.column: columns[feature.column if feature.column in columns else feature.name] for feature in features
    }
    before = table.column_names[: table.column_names.index("__cohort_target") + 1]
    rest = [name for name in table.column_names[len(before) :] if name not in predictors]
    names = [*before, *predictors, *rest]
    return pa.Table.from_arrays(
        [predictors[name] if name in predictors else columns[name] for name in names], names=names
    )


def rows_by_id(
    engine: Engine, prepared: Prepared, ids: Any, *, role: str, within_targets: bool, subjects: str | None = None
) -> tuple[pa.Table, np.ndarray]:
    """The subject rows with the given ids, in id order, and their weights (see `read_targets`); a
    `CohortError` names the `role` ids not found. `within_targets`: only among the rows of the
    caller's targets predicate; `subjects`: read from this relation of subject rows (by default the
    subjects)."""
    requested = requested_ids(ids, id_type(prepared), prepared.id, role)
    column = "row positions" if prepared.id is None else f"id column {prepared.id!r}"
    with id_membership(engine, "__cohort_id", requested) as membership:
        condition = queries.targets.target_condition(
            within_targets and prepared.target_predicate is not None, membership
        )
        table, weights = read_targets(
            engine,
            prepared,
            queries.targets.target_rows(
                subjects or prepared.subjects, condition, prepared.measures, listed_ids(requested)
            ),
            context=f"matching {role} ids to the {column}",
            few=len(requested) <= FEW_ROWS,
        )
    found = pl.Series(table.column("__cohort_id"))
    missing = pl.Series(requested).filter(~pl.Series(requested).is_in(found.implode())).unique(maintain_order=True)
    if len(missing):
        shown = ", ".join(repr(value) for value in missing.head(5).to_list())
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        dropped = " (rows of weight 0 are left out)" if prepared.weight is not None else ""
        raise CohortError(f"{role} ids not found in the {column}{dropped}: {shown}{more}")
    return table, weights


def read_target_data(engine: Engine, prepared: Prepared, targets: TargetSet) -> pl.DataFrame:
    """The target rows as they are in the data (every column), in id order: read with the targets, or now by id."""
    if targets.data is not None:
        return targets.data
    return read_rows(engine, prepared, targets.table)


def _distinct_targets(
    target_table: pa.Table, features: tuple[ResolvedFeature, ...], merge: bool
) -> tuple[pa.Table, np.ndarray]:
    """Targets with identical prepared predictors, computed once and fanned out afterwards: the first
    of each, and each target's group."""
    rows = target_table.num_rows
    if not merge or rows <= 1:  # one target is its own group (grouping 1,024 columns took 17-22 ms)
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
    condition = queries.targets.target_condition(False, None)
    if sample is None:
        sql = queries.targets.target_rows(prepared.subjects, condition, prepared.measures)
    else:
        sql = queries.targets.sampled_targets(
            prepared.subjects, condition, sample, seed, prepared.measures, engine.dialect
        )
    return engine.fetch_arrow(sql, context="reading the baseline rows")
