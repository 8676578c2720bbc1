"""The public entry points of cohortsql."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql import compile, shapley
from cohortsql.engine import DuckDBEngine
from cohortsql.errors import CohortError
from cohortsql.plan import RESERVED_PREFIX, ResolvedFeature, SimilarityArgument, plan_features, resolve_feature
from cohortsql.result import CohortShapleyResult
from cohortsql.similarity import SqlPredicate
from cohortsql.sqltext import quote_identifier

MAX_EXACT_FEATURES = 24
"""Exact cohort Shapley keeps 2^d values per target; beyond this d it needs more memory than it is worth."""

BATCH_MEMORY_BYTES = 256 * 2**20
"""Budget for the numpy arrays of one batch of targets (DESIGN §2 steps 2 and 3)."""

_ARRAYS_PER_TARGET = 6
"""float64 arrays of length 2^d held per target while a batch is assembled."""

METHODS = ("exact",)

Targets = None | str | Sequence[Any]


def cohort_shapley(
    data: Any,
    *,
    prediction: str,
    similarity: SimilarityArgument,
    id: str | None = None,
    targets: Targets = None,
    method: str = "exact",
    connection: duckdb.DuckDBPyConnection | None = None,
) -> CohortShapleyResult:
    """Cohort Shapley values of every feature for every target (Mase, Owen & Seiler).

    For target t and predictor set u, the cohort C_{t,u} is every subject similar to t on all of
    u; v_CS(t, u) = ybar_{t,u} - ybar and v_CS2(t, u) = v_CS(t, u)^2. The result holds
    phi_j = sum_{u subset of -j} w(|u|) (v(u + j) - v(u)), w(s) = s! (d - s - 1)! / d!, for both
    games, computed exactly from a SQL histogram of similarity masks (DESIGN §2).

    Args:
        data: a path (parquet, csv, json, globs), a pyarrow Table, a polars DataFrame or
            LazyFrame, a pandas DataFrame, a DuckDB relation, or the name of a table on `connection`.
        prediction: the column to explain (a model's prediction or an observed response).
        similarity: feature -> similarity kind (object or text such as ``"range:0.1"``), or a
            list of feature names that get default kinds; its order is the feature order.
        id: the column that identifies rows; None uses the 0-based row position.
        targets: None for every row, a list of id values, or a SQL predicate over the data's columns.
        method: ``"exact"``.
        connection: a DuckDB connection to run on (needed to read its tables by name).
    """
    if method not in METHODS:
        raise CohortError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    with DuckDBEngine(connection) as engine:
        source = engine.register_input(data)
        features = plan_features(engine.column_types(source), similarity, prediction, id)
        if len(features) > MAX_EXACT_FEATURES:
            raise CohortError(
                f"exact cohort Shapley handles at most {MAX_EXACT_FEATURES} features (2^d cohorts per"
                f" target); got {len(features)}: drop or merge features"
            )
        target_predicate = targets if isinstance(targets, str) else None
        subjects = engine.temporary_name("subjects")
        engine.create_table(
            subjects,
            compile.prepare_subjects(source, subjects, features, prediction, id, target_predicate),
            context="reading the data" + (f" with targets {target_predicate!r}" if target_predicate else ""),
        )
        statistics = engine.fetch_record(
            compile.table_statistics(subjects, features, has_id=id is not None),
            context="computing table statistics",
        )
        _check_table(statistics, prediction, id)
        resolved = tuple(
            resolve_feature(feature, _feature_statistics(statistics, index))
            for index, feature in enumerate(features)
        )
        target_table = _select_targets(engine, subjects, targets, id)
        values = _exact_values(engine, subjects, resolved, target_table, statistics["mean"])
    return CohortShapleyResult(
        ids=pl.Series("id", target_table.column("__cohort_id")),
        features=tuple(feature.name for feature in resolved),
        similarity={feature.name: str(feature.kind) for feature in resolved},
        mean=float(statistics["mean"]),
        variance=float(statistics["variance"]),
        targets=_data_columns(target_table),
        subjects=int(statistics["subjects"]),
        prediction=target_table.column("__cohort_y").to_numpy(),
        cohort_size=values.cohort_size,
        cohort_mean=values.cohort_mean,
        shapley=values.shapley,
        shapley_squared=values.shapley_squared,
        population=int(statistics["subjects"]) if targets is None else None,
        method=method,
    )


def _data_columns(target_table: pa.Table) -> pl.DataFrame:
    """The target rows as they are in the data, without the subjects table's own columns."""
    names = [name for name in target_table.column_names if not name.startswith(RESERVED_PREFIX)]
    return pl.from_arrow(target_table.select(names))


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


def _select_targets(engine: DuckDBEngine, subjects: str, targets: Targets, id: str | None) -> pa.Table:
    """The target rows of the subjects table, in table order."""
    if targets is None or isinstance(targets, str):
        condition = "TRUE" if targets is None else "__cohort_target"
        table = engine.fetch_arrow(compile.target_rows(subjects, condition), context="selecting targets")
        if table.num_rows == 0:
            raise CohortError(f"targets {targets!r} selects no rows; loosen the predicate")
        return table
    if not isinstance(targets, (Sequence, np.ndarray, pl.Series, pa.Array)):
        raise CohortError(
            f"targets must be None, a list of id values or a SQL predicate, got {type(targets).__name__}"
        )
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


def _exact_values(
    engine: DuckDBEngine,
    subjects: str,
    features: tuple[ResolvedFeature, ...],
    target_table: pa.Table,
    mean: float,
) -> shapley.CohortShapley:
    """Exact cohort Shapley values for every target row, in batches that bound memory."""
    d = len(features)
    batch_size = max(1, BATCH_MEMORY_BYTES // (_ARRAYS_PER_TARGET * 8 << d))
    custom = [feature.name for feature in features if isinstance(feature.kind, SqlPredicate)]
    context = "computing similarity masks" + (f" (check the sql: similarity of {custom})" if custom else "")
    batches = []
    for start in range(0, target_table.num_rows, batch_size):
        batch = target_table.slice(start, batch_size)
        batch = batch.append_column("__cohort_batch", pa.array(np.arange(batch.num_rows, dtype=np.int32)))
        name = engine.temporary_name("targets")
        with engine.registered(name, batch):
            histogram = engine.fetch_numpy(compile.mask_histogram(subjects, name, features), context=context)
        counts, sums = shapley.scatter_histograms(
            histogram["target"], histogram["mask"], histogram["subjects"], histogram["sum_y"], batch.num_rows, d
        )
        batches.append(shapley.cohort_shapley(counts, sums, mean))
    return shapley.concatenate(batches)
