"""The public entry points of cohortsql: local cohort Shapley values and global Shapley effects."""

from __future__ import annotations

import os
from typing import Any

import duckdb
import numpy as np
import polars as pl

from cohortsql import compile, shapley
from cohortsql.engine import DuckDBEngine
from cohortsql.errors import CohortError
from cohortsql.grouping_sets import grouping_sets_batches, variance_game
from cohortsql.pairwise import pairwise_batches, permutation_batches
from cohortsql.plan import SimilarityArgument
from cohortsql.prepare import Prepared, Targets, prepare
from cohortsql.progress import track
from cohortsql.result import CohortShapleyResult, ShapleyEffects

MAX_EXACT_FEATURES = 24
"""Exact cohort Shapley keeps 2^d values per target; beyond this d it needs more memory than it is worth."""

MAX_FEATURES = 128
"""The permutation method handles up to this many features."""

AUTO_EXACT_FEATURES = 16
"""``method="auto"`` is exact up to this d (at most 65,536 cohorts per target), permutation above."""

METHODS = ("exact", "permutation", "auto")

PATHS = ("auto", "pairwise", "grouping_sets")
"""How exact cohorts are found: ``pairwise`` (any kinds; a join of targets with subjects) or
``grouping_sets`` (only exact and bins; no join). ``auto`` takes grouping sets when every kind is an
equivalence and there are at least 2^(d-1) targets, where it does less work than the join."""


def cohort_shapley(
    data: Any,
    *,
    prediction: str,
    similarity: SimilarityArgument,
    id: str | None = None,
    targets: Targets = None,
    method: str = "exact",
    seed: int | None = None,
    tolerance: float | None = None,
    max_permutations: int = 200,
    path: str = "auto",
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    connection: duckdb.DuckDBPyConnection | None = None,
) -> CohortShapleyResult:
    """Cohort Shapley values of every feature for every target (Mase, Owen & Seiler).

    For target t and predictor set u, the cohort C_{t,u} is every subject similar to t on all of
    u; v_CS(t, u) = ybar_{t,u} - ybar and v_CS2(t, u) = v_CS(t, u)^2. The result holds
    phi_j = sum_{u subset of -j} w(|u|) (v(u + j) - v(u)), w(s) = s! (d - s - 1)! / d!, for both
    games (DESIGN §2).

    Args:
        data: a path (parquet, csv, json, globs), a pyarrow Table, a polars DataFrame or
            LazyFrame, a pandas DataFrame, a DuckDB relation, or the name of a table on `connection`.
        prediction: the column to explain (a model's prediction or an observed response).
        similarity: feature -> similarity kind (object or text such as ``"range:0.1"``), or a
            list of feature names that get default kinds; its order is the feature order.
        id: the column that identifies rows; None uses the 0-based row position.
        targets: None for every row, a list of id values, a SQL predicate over the data's columns,
            or a random sample of rows: a count (int) or a fraction (float), drawn with `seed`.
        method: ``"exact"`` (d <= 24), ``"permutation"`` (Monte Carlo over random orders of the
            predictors, d <= 128, with standard errors) or ``"auto"`` (exact up to d = 16).
        seed: seeds the random sample of targets and the permutations.
        tolerance: permutation method: stop a target once every standard error is at most this.
        max_permutations: permutation method: the budget per target (antithetic pairs count twice).
        path: one of `PATHS` (exact method).
        memory_limit: DuckDB's memory limit while computing, e.g. ``"1GB"``; beyond it DuckDB spills.
        temp_directory: where DuckDB spills.
        progress: report progress on stderr; None reports on long runs when stderr is a terminal.
        connection: a DuckDB connection to run on (needed to read its tables by name).
    """
    _check_choice("method", method, METHODS)
    if max_permutations < 2:
        raise CohortError(f"max_permutations must be at least 2 (one antithetic pair), got {max_permutations}")
    with DuckDBEngine(connection, memory_limit=memory_limit, temp_directory=temp_directory) as engine:
        prepared = prepare(
            engine,
            data,
            prediction=prediction,
            similarity=similarity,
            id=id,
            targets=targets,
            seed=seed,
            max_features=MAX_FEATURES,
        )
        if _choose_method(method, prepared.d) == "permutation":
            batches = permutation_batches(
                engine, prepared, seed=seed, max_permutations=max_permutations, tolerance=tolerance
            )
            tracked = track(batches, total=prepared.distinct_targets.num_rows, size=len, enabled=progress)
            return _permutation_result(prepared, [estimate for batch in tracked for estimate in batch])
        chosen_path = _choose_path(path, prepared, prepared.target_table.num_rows)
        values = _exact_values(engine, prepared, chosen_path, progress)
    return _exact_result(prepared, values, chosen_path)


def variance_shapley(
    data: Any,
    *,
    prediction: str,
    similarity: SimilarityArgument,
    id: str | None = None,
    targets: Targets = None,
    seed: int | None = None,
    path: str = "auto",
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    connection: duckdb.DuckDBPyConnection | None = None,
) -> ShapleyEffects:
    """Shapley effects: the exact Shapley values of v_var(u) = (1/n) sum_t (ybar_{t,u} - ybar)^2.

    They split the variance explained by the cohorts on all d predictors, v_var(1:d), over the
    predictors; ``share`` divides by the variance of the explained column. With every row as a
    target this is exact. With a sample of targets (`targets` a count or a fraction, drawn with
    `seed`) v_var is the sample mean over the sampled targets and every effect gets a standard error.
    Arguments are those of `cohort_shapley`.
    """
    with DuckDBEngine(connection, memory_limit=memory_limit, temp_directory=temp_directory) as engine:
        prepared = prepare(
            engine,
            data,
            prediction=prediction,
            similarity=similarity,
            id=id,
            targets=targets,
            seed=seed,
            max_features=MAX_EXACT_FEATURES,
        )
        count = prepared.target_table.num_rows
        chosen = _choose_path(path, prepared, count)
        if chosen == "grouping_sets" and targets is None:
            game, squared = variance_game(engine, prepared), None
        else:
            values = _exact_values(engine, prepared, chosen, progress)
            game, squared = values.squared_games / count, values.shapley_squared
    return ShapleyEffects.from_game(
        features=tuple(feature.name for feature in prepared.features),
        game=game,
        variance=float(prepared.statistics["variance"]),
        subjects=int(prepared.statistics["subjects"]),
        targets=count,
        squared_values=squared,
        population=prepared.population,
        path=chosen,
    )


DIALECTS = ("duckdb", "spark", "bigquery", "snowflake", "postgres")


def histogram_sql(
    data: Any,
    *,
    prediction: str,
    similarity: SimilarityArgument,
    id: str | None = None,
    targets: Targets = None,
    table: str | None = None,
    dialect: str = "duckdb",
    seed: int | None = None,
    connection: duckdb.DuckDBPyConnection | None = None,
) -> str:
    """The heavy step (DESIGN §2 step 1) as one SQL query, to run in a warehouse where the data live.

    cohortsql reads `data` once to compute the whole-table statistics the similarity kinds need
    (they enter the query as literals) and to check the request. The query reads `table` (your own
    SQL text: a table name, or any table expression; default: how DuckDB reads `data`) and returns
    one row per (target id, similarity mask) with ``subjects`` and ``sum_y``: the histogram that
    `cohortsql.shapley.cohort_shapley` turns into cohort Shapley values. Other dialects than DuckDB's
    are transpiled with sqlglot (``pip install 'cohortsql[sql]'``).
    """
    _check_choice("dialect", dialect, DIALECTS)
    with DuckDBEngine(connection) as engine:
        prepared = prepare(
            engine,
            data,
            prediction=prediction,
            similarity=similarity,
            id=id,
            targets=targets,
            seed=seed,
            max_features=MAX_FEATURES,
        )
        chosen_ids = (
            None
            if targets is None or isinstance(targets, str)
            else prepared.target_table.column("__cohort_id").to_pylist()
        )
        sql = compile.standalone_histogram(
            prepared.source if table is None else table,
            prepared.features,
            prediction,
            id,
            targets if isinstance(targets, str) else None,
            chosen_ids,
        )
    if dialect == "duckdb":
        return sql
    try:
        import sqlglot
    except ImportError:
        raise CohortError(f"dialect {dialect!r} needs sqlglot: pip install 'cohortsql[sql]'") from None
    comments = "\n".join(line for line in sql.splitlines() if line.startswith("--"))
    body = "\n".join(line for line in sql.splitlines() if not line.startswith("--"))
    return comments + "\n" + sqlglot.transpile(body, read="duckdb", write=dialect, pretty=True)[0]


def _exact_values(engine: DuckDBEngine, prepared: Prepared, path: str, progress: bool | None) -> shapley.CohortShapley:
    """Exact values of every target, batch by batch on the chosen path, fanned out to duplicate targets."""
    batches = (grouping_sets_batches if path == "grouping_sets" else pairwise_batches)(engine, prepared)
    tracked = track(
        batches, total=prepared.distinct_targets.num_rows, size=lambda batch: len(batch.shapley), enabled=progress
    )
    return shapley.fan_out(shapley.concatenate(list(tracked)), prepared.target_group)


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise CohortError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


def _choose_method(method: str, d: int) -> str:
    if method == "auto":
        return "exact" if d <= AUTO_EXACT_FEATURES else "permutation"
    if method == "exact" and d > MAX_EXACT_FEATURES:
        raise CohortError(
            f"exact cohort Shapley handles at most {MAX_EXACT_FEATURES} features (2^d cohorts per target);"
            f" got {d}: use method='permutation' (or 'auto'), or drop features"
        )
    return method


def _choose_path(path: str, prepared: Prepared, targets: int) -> str:
    _check_choice("path", path, PATHS)
    windows = [str(feature.name) for feature in prepared.features if not feature.kind.equivalence]
    if path == "grouping_sets" and windows:
        raise CohortError(
            f"path='grouping_sets' needs exact or bins similarity for every feature; {windows} are not"
            " equivalences (use path='pairwise' or 'auto')"
        )
    if path == "auto":
        return "grouping_sets" if not windows and targets >= 1 << (prepared.d - 1) else "pairwise"
    return path


def _common_fields(prepared: Prepared) -> dict[str, Any]:
    statistics = prepared.statistics
    return dict(
        ids=pl.Series("id", prepared.target_table.column("__cohort_id")),
        features=tuple(feature.name for feature in prepared.features),
        similarity={feature.name: str(feature.kind) for feature in prepared.features},
        kinds={feature.name: feature.kind for feature in prepared.features},
        feature_statistics={feature.name: dict(feature.statistics) for feature in prepared.features},
        mean=prepared.mean,
        variance=float(statistics["variance"]),
        subjects=int(statistics["subjects"]),
        prediction=prepared.target_table.column("__cohort_y").to_numpy(),
        targets=prepared.target_data,
        population=prepared.population,
    )


def _exact_result(prepared: Prepared, values: shapley.CohortShapley, path: str) -> CohortShapleyResult:
    return CohortShapleyResult(
        **_common_fields(prepared),
        cohort_size=values.cohort_size,
        cohort_mean=values.cohort_mean,
        shapley=values.shapley,
        shapley_squared=values.shapley_squared,
        path_order=values.path_order,
        path_size=values.path_size,
        path_mean=values.path_mean,
        method="exact",
        path=path,
    )


def _permutation_result(prepared: Prepared, estimates: list) -> CohortShapleyResult:
    group = prepared.target_group
    stacked = {
        name: np.array([getattr(estimate, name) for estimate in estimates])[group] for name in estimates[0]._fields
    }
    return CohortShapleyResult(
        **_common_fields(prepared),
        cohort_size=stacked["cohort_size"],
        cohort_mean=stacked["cohort_mean"],
        shapley=stacked["shapley"],
        shapley_squared=stacked["shapley_squared"],
        shapley_se=stacked["shapley_se"],
        shapley_squared_se=stacked["shapley_squared_se"],
        permutations=stacked["permutations"],
        path_order=stacked["path_order"],
        path_size=stacked["path_size"],
        path_mean=stacked["path_mean"],
        method="permutation",
        path="pairwise",
    )
