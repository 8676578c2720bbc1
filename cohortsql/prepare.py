"""The steps every computation shares: read the data, check it, build the subjects table, pick targets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql import compile
from cohortsql.engine import DuckDBEngine
from cohortsql.errors import CohortError
from cohortsql.plan import ResolvedFeature, SimilarityArgument, plan_features, resolve_feature
from cohortsql.similarity import SqlPredicate
from cohortsql.sqltext import quote_identifier

BATCH_MEMORY_BYTES = 256 * 2**20
"""Budget for the numpy arrays of one batch of targets; with a DuckDB memory_limit, a quarter of it
when that is less."""

COMPRESS_BELOW = 0.8
"""Identical subjects are collapsed before the join when the distinct predictor rows are at most this
fraction of the rows (estimated with approx_count_distinct); otherwise collapsing costs more than it saves."""

Targets = None | str | int | float | Sequence[Any]
"""None (every row), a SQL predicate, a sample size (int) or fraction (float), or a list of ids."""


@dataclass(frozen=True)
class Prepared:
    """The subjects table on the engine, the resolved features, whole-table statistics and the targets."""

    source: str
    """The data as a SQL table expression on the engine."""
    subjects: str
    """Name of the temporary subjects table."""
    weighted_subjects: str
    """Name of the histogram's input: subject rows with ``__cohort_count`` and ``__cohort_sum`` (identical
    predictor rows collapsed into one when that pays, see `COMPRESS_BELOW`)."""
    features: tuple[ResolvedFeature, ...]
    statistics: dict[str, Any]
    target_table: pa.Table
    """The target rows of the subjects table, in table order."""
    target_data: pl.DataFrame
    """The target rows as they are in the data (every column), in table order."""
    population: int | None
    """n when the targets are every row or a random sample of them, else None."""
    distinct_targets: pa.Table
    """One row per distinct target (targets with identical predictors share every cohort)."""
    target_group: np.ndarray
    """For each row of `target_table`, its row in `distinct_targets`."""
    multiplicity: np.ndarray
    """For each distinct target, how many targets it stands for."""
    batch_bytes: int
    """Budget for one batch's numpy arrays: targets per batch are derived from it and d."""

    @property
    def mean(self) -> float:
        return float(self.statistics["mean"])

    @property
    def d(self) -> int:
        return len(self.features)

    def numbered_targets(self, start: int = 0, length: int | None = None) -> pa.Table:
        """A slice of the distinct targets with ``__cohort_batch`` = 0, 1, ... for SQL that needs their order."""
        batch = self.distinct_targets.slice(start, length)
        return batch.append_column("__cohort_batch", pa.array(np.arange(batch.num_rows, dtype=np.int32)))


def prepare(
    engine: DuckDBEngine,
    data: Any,
    *,
    prediction: str,
    similarity: SimilarityArgument,
    id: str | None,
    targets: Targets,
    seed: int | None,
    max_features: int,
) -> Prepared:
    """Register `data`, check the request, materialise the subjects table and select the targets."""
    source = engine.register_input(data)
    features = plan_features(engine.column_types(source), similarity, prediction, id)
    if len(features) > max_features:
        raise CohortError(
            f"this computation handles at most {max_features} features; got {len(features)}: drop or merge features"
        )
    target_predicate = targets if isinstance(targets, str) else None
    # sql: predicates may read any column of a row: rows can only be merged when none is used.
    mergeable = not any(isinstance(feature.kind, SqlPredicate) for feature in features)
    subjects = engine.temporary_name("subjects")
    engine.create(
        "TABLE",
        subjects,
        compile.prepare_subjects(
            source, subjects, features, prediction, id, target_predicate, keep_data_columns=not mergeable
        ),
        context="reading the data" + (f" with targets {target_predicate!r}" if target_predicate else ""),
    )
    statistics = engine.fetch_record(
        compile.table_statistics(subjects, features, has_id=id is not None), context="computing table statistics"
    )
    _check_table(statistics, prediction, id)
    resolved = tuple(
        resolve_feature(feature, _feature_statistics(statistics, index)) for index, feature in enumerate(features)
    )
    n = int(statistics["subjects"])
    target_table = _select_targets(engine, subjects, targets, id, n, seed)
    population = n if targets is None or _is_sample(targets) else None
    compress = mergeable and statistics["distinct_rows"] <= COMPRESS_BELOW * n
    weighted = engine.temporary_name("weighted_subjects")
    engine.create(
        "TABLE" if compress else "VIEW",
        weighted,
        compile.weighted_subjects(subjects, weighted, resolved, compress=compress),
        context="collapsing identical subjects",
    )
    distinct, group, multiplicity = _distinct_targets(target_table, resolved, mergeable)
    return Prepared(
        source=source,
        subjects=subjects,
        weighted_subjects=weighted,
        features=resolved,
        statistics=statistics,
        target_table=target_table,
        target_data=_target_data(engine, source, target_table),
        population=population,
        distinct_targets=distinct,
        target_group=group,
        multiplicity=multiplicity,
        batch_bytes=_batch_bytes(engine),
    )


def _batch_bytes(engine: DuckDBEngine) -> int:
    limit = engine.memory_limit_bytes
    return BATCH_MEMORY_BYTES if limit is None else min(BATCH_MEMORY_BYTES, limit // 4)


def _target_data(engine: DuckDBEngine, source: str, target_table: pa.Table) -> pl.DataFrame:
    """The target rows as they are in the data, read again from the source by position."""
    positions = engine.temporary_name("target_positions")
    with engine.registered(positions, target_table.select(["__cohort_row"])):
        return pl.from_arrow(
            engine.fetch_arrow(compile.target_data(source, positions), context="reading the target rows")
        )


def _distinct_targets(
    target_table: pa.Table, features: tuple[ResolvedFeature, ...], merge: bool
) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """Targets with identical prepared predictors, computed once and fanned out afterwards."""
    rows = target_table.num_rows
    if not merge:
        return target_table, np.arange(rows), np.ones(rows)
    columns = [feature.column for feature in features]
    groups = (
        pl.from_arrow(target_table.select(columns))
        .with_row_index("__cohort_position")
        .group_by(columns, maintain_order=True)
        .agg(pl.col("__cohort_position"))
    )
    first = groups["__cohort_position"].list.first().to_numpy()
    members = groups.select("__cohort_position").with_row_index("__cohort_group").explode("__cohort_position")
    target_group = np.empty(rows, dtype=np.int64)
    target_group[members["__cohort_position"].to_numpy()] = members["__cohort_group"].to_numpy()
    multiplicity = groups["__cohort_position"].list.len().to_numpy().astype(np.float64)
    return target_table.take(first), target_group, multiplicity


def _check_table(statistics: dict[str, Any], prediction: str, id: str | None) -> None:
    if statistics["subjects"] == 0:
        raise CohortError("the data has no rows; cohort Shapley needs at least one subject")
    if statistics["bad_predictions"]:
        raise CohortError(
            f"prediction column {prediction!r} has {statistics['bad_predictions']} NULL, NaN or infinite"
            f" values (the first at row {statistics['first_bad_prediction_row']}); drop or fill them"
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


def _is_sample(targets: Targets) -> bool:
    return isinstance(targets, (int, float, np.integer, np.floating)) and not isinstance(targets, bool)


def _select_targets(
    engine: DuckDBEngine, subjects: str, targets: Targets, id: str | None, n: int, seed: int | None
) -> pa.Table:
    if targets is None or isinstance(targets, str):
        condition = "TRUE" if targets is None else "__cohort_target"
        table = engine.fetch_arrow(compile.target_rows(subjects, condition), context="selecting targets")
        if table.num_rows == 0:
            raise CohortError(f"targets {targets!r} selects no rows; loosen the predicate")
        return table
    if _is_sample(targets):
        rows = np.sort(np.random.default_rng(seed).choice(n, _sample_size(targets, n), replace=False))
        sample = engine.temporary_name("sample")
        with engine.registered(sample, pa.table({"row": rows})):
            return engine.fetch_arrow(compile.sampled_targets(subjects, sample), context="selecting targets")
    if not isinstance(targets, (Sequence, np.ndarray, pl.Series, pa.Array)):
        raise CohortError(
            "targets must be None, a SQL predicate, a sample size or fraction, or a list of id values;"
            f" got {type(targets).__name__}"
        )
    return _targets_by_id(engine, subjects, targets, id)


def _sample_size(targets: int | float, n: int) -> int:
    if isinstance(targets, (int, np.integer)):
        if not 1 <= targets <= n:
            raise CohortError(f"targets={targets} asks for a sample of targets; it must be between 1 and the {n} rows")
        return int(targets)
    if not 0 < targets <= 1:
        raise CohortError(f"targets={targets} asks for a fraction of the rows; it must be in (0, 1]")
    return max(1, math.ceil(targets * n))


def _targets_by_id(engine: DuckDBEngine, subjects: str, targets: Sequence[Any], id: str | None) -> pa.Table:
    if len(targets) == 0:
        raise CohortError("targets is an empty list; pass None to explain every row")
    try:
        requested_ids = pa.table({"id": pa.array(list(targets))})
    except (pa.ArrowException, TypeError, ValueError):
        raise CohortError(f"target ids must all be of one type, got {list(targets)[:5]!r}") from None
    column = "row positions" if id is None else f"id column {id!r}"
    requested = engine.temporary_name("requested_ids")
    with engine.registered(requested, requested_ids):
        missing = engine.fetch_rows(
            compile.missing_target_ids(subjects, requested), context=f"matching target ids to the {column}"
        )
        if missing:
            shown = ", ".join(repr(value) for (value,) in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise CohortError(f"target ids not found in the {column}: {shown}{more}")
        condition = f"__cohort_id IN (SELECT id FROM {quote_identifier(requested)})"
        return engine.fetch_arrow(compile.target_rows(subjects, condition), context="selecting targets")
