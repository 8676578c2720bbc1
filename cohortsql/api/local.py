"""The public entry points of cohortsql: local cohort Shapley values, global Shapley effects, uniqueness
Shapley, estimates, SQL out."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, overload

import numpy as np
import polars as pl

from cohortsql.spec import arguments
from cohortsql.queries import compile
from cohortsql.numeric import permutation
from cohortsql.numeric import bootstrap as bootstrap_module
from cohortsql.sql.dialects import DUCKDB, NATIVE_DIALECTS
from cohortsql._typing import (
    DIALECTS,
    METHODS,
    PATHS,
    VARIANTS,
    CohortPath,
    EngineName,
    Method,
    SqlDialect,
    SqlVariant,
)
from cohortsql.engines import Engine, EngineSettings, open_engine
from cohortsql.engines.base import file_format
from cohortsql.errors import CohortError, check_choice
from cohortsql.run.grouping_sets import grouping_sets_batches, uniqueness_of_cells, variance_game
from cohortsql.results.outcomes import CohortShapleyResults, ShapleyEffectsResults
from cohortsql.run.pace import SECONDS_PER_BATCH, WIDE_BATCH_SECONDS, Pacer, Plan
from cohortsql.run.pairwise import (
    exact_batch_size,
    pairwise_batches,
    permutation_batch_size,
    permutation_batches,
    uniqueness_batches,
)
from cohortsql.spec.features import SimilarityArgument, portable
from cohortsql.run.session import Prepared, Targets, TargetSet, prepare, read_target_data, select_targets
from cohortsql.run.progress import Reporter, Silent, reporter
from cohortsql.results.cohort import (
    CohortShapleyResult,
    ShapleyEffects,
    diagnostics,
    run_settings,
    value_fields,
    warn_about_singletons,
)
from cohortsql.sql.text import check_expression, is_query
from cohortsql.results.uniqueness import UniquenessResult

MAX_EXACT_FEATURES = 24
"""Exact cohort Shapley keeps 2^d values per target; beyond this d it needs more memory than it is worth."""

MAX_FEATURES = 128
"""The permutation method handles up to this many features."""

AUTO_EXACT_FEATURES = 16
"""``method="auto"`` is exact up to this d (at most 65,536 cohorts per target), permutation above."""


@contextmanager
def opened_engine(
    data: Any,
    engine: str | None,
    connection: Any,
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
) -> Iterator[Engine]:
    """The engine for a call, closed (dropping what it created) when the call ends."""
    settings = EngineSettings(
        memory_limit=memory_limit, temp_directory=None if temp_directory is None else str(temp_directory)
    )
    running = open_engine(data, engine=engine, connection=connection, settings=settings)
    try:
        yield running
    finally:
        running.close()


Prediction = str | Sequence[str]
"""One explained column, or several explained over the same cohorts in one pass."""


@overload
def cohort_shapley(
    data: Any,
    *,
    prediction: str,
    similarity: SimilarityArgument,
    id: str | None = None,
    weight: str | None = None,
    targets: Targets = None,
    sample: int | float | None = None,
    method: Method = "exact",
    seed: int | None = None,
    bootstrap: int = 0,
    confidence: float = 0.95,
    tolerance: float | None = None,
    max_permutations: int = 200,
    path: CohortPath = "auto",
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    connection: Any = None,
    engine: EngineName | None = None,
) -> CohortShapleyResult: ...


@overload
def cohort_shapley(
    data: Any,
    *,
    prediction: Sequence[str],
    similarity: SimilarityArgument,
    id: str | None = None,
    weight: str | None = None,
    targets: Targets = None,
    sample: int | float | None = None,
    method: Method = "exact",
    seed: int | None = None,
    bootstrap: int = 0,
    confidence: float = 0.95,
    tolerance: float | None = None,
    max_permutations: int = 200,
    path: CohortPath = "auto",
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    connection: Any = None,
    engine: EngineName | None = None,
) -> CohortShapleyResults: ...


def cohort_shapley(
    data: Any,
    *,
    prediction: Prediction,
    similarity: SimilarityArgument,
    id: str | None = None,
    weight: str | None = None,
    targets: Targets = None,
    sample: int | float | None = None,
    method: Method = "exact",
    seed: int | None = None,
    bootstrap: int = 0,
    confidence: float = 0.95,
    tolerance: float | None = None,
    max_permutations: int = 200,
    path: CohortPath = "auto",
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    connection: Any = None,
    engine: EngineName | None = None,
) -> CohortShapleyResult | CohortShapleyResults:
    """Cohort Shapley values of every feature for every target (Mase, Owen & Seiler).

    For target t and predictor set u, the cohort C_{t,u} is every subject similar to t on all of
    u; v_CS(t, u) = ybar_{t,u} - ybar and v_CS2(t, u) = v_CS(t, u)^2. The result holds
    phi_j = sum_{u subset of -j} w(|u|) (v(u + j) - v(u)), w(s) = s! (d - s - 1)! / d!, for both
    games (DESIGN §2).

    Args:
        data: a path (parquet, csv, json, globs), a SQL query, a pyarrow Table, a polars DataFrame or
            LazyFrame, a pandas DataFrame, a DuckDB relation, a Spark DataFrame, or the name of a
            table on `connection`.
        prediction: the column to explain (a model's prediction or an observed response), or a list
            of columns explained over the same cohorts in one pass (the result is then a
            `CohortShapleyResults`, one result per column, its tables with an ``outcome`` column).
        similarity: feature -> similarity kind (object or text such as ``"range:0.1"``), or a
            list of feature names that get default kinds; its order is the feature order.
        id: the column that identifies rows; None uses the 0-based row position.
        weight: a column of case weights (finite, >= 0): cohort means, the overall mean, averages over
            targets and quantile windows weigh each row by it (an integer weight counts as that many
            copies of the row; a weight of 0 drops it).
        targets: None for every row, a list of id values, or a SQL predicate over the data's columns
            (a count or a fraction here means ``sample=`` of every row).
        sample: a random sample of the targets (every row, or the rows of a predicate): a count (int)
            or a fraction (float), drawn with `seed`, the same on every engine.
        method: ``"exact"`` (d <= 24), ``"permutation"`` (Monte Carlo over random orders of the
            predictors, d <= 128, with standard errors) or ``"auto"`` (exact up to d = 16).
        seed: seeds the random sample of targets, the permutations and the bootstrap replicates.
        bootstrap: B Bayesian-bootstrap replicates (exact method): every subject reweighted by an
            Exp(1) draw per replicate, all computed in the same SQL pass; gives percentile intervals
            of every value (``res.local``), of the effects (``res.global_``) and paired intervals of
            group differences (``res.by``).
        confidence: the intervals' coverage.
        tolerance: permutation method: stop a target once every standard error is at most this.
        max_permutations: permutation method: the budget per target (antithetic pairs count twice).
        path: one of `PATHS` (exact method).
        memory_limit: DuckDB's memory limit while computing, e.g. ``"1GB"``; beyond it DuckDB spills.
        temp_directory: where DuckDB spills.
        progress: report progress on stderr; None reports on long runs when stderr is a terminal.
        connection: a DuckDB connection or a SparkSession to run on (needed to read its tables by name).
        engine: ``"duckdb"`` or ``"spark"``; by default the one the data or connection belongs to, else DuckDB.

    Targets come in id order (row order when ids are row positions).
    """
    outcomes = _outcomes(prediction)
    check_choice("method", method, METHODS)
    check_choice("path", path, PATHS)
    seed = arguments.seed(seed)
    tolerance = arguments.positive_number("tolerance", tolerance)
    max_permutations = arguments.whole_number("max_permutations", max_permutations, minimum=2)
    replicates, confidence, seed = _bootstrap_arguments(bootstrap, confidence, seed)
    _check_names(id, weight, memory_limit)
    with opened_engine(data, engine, connection, memory_limit, temp_directory) as running:
        prepared = _prepare(running, data, outcomes, similarity, id, weight, targets, MAX_FEATURES, replicates, seed)
        chosen = select_targets(running, prepared, targets, seed, sample)
        target_data = read_target_data(running, prepared, chosen)
        chosen_method = _choose_method(method, prepared.d)
        if replicates and chosen_method != "exact":
            raise CohortError("bootstrap intervals need method='exact' (the permutation method has standard errors)")
        settings = _settings(
            running,
            prepared,
            chosen,
            method=chosen_method,
            path=path,
            targets=targets,
            sample=sample,
            seed=seed,
            bootstrap=replicates,
            confidence=confidence,
        )
        chosen_path = "pairwise" if chosen_method == "permutation" else _choose_path(path, prepared, chosen.count)
        pacer = _pacer(running, prepared, chosen, chosen_method, chosen_path, reporter(progress))
        batches = _local_batches(
            running, prepared, chosen, chosen_method, chosen_path, pacer, seed, max_permutations, tolerance
        )
        if chosen_method == "permutation":
            estimates = list(batches)
            fields = [
                permutation.stack([estimate for batch in estimates for estimate in batch[outcome]], chosen.group)
                for outcome in range(len(outcomes))
            ]
            intervals = None
        else:
            keep = bootstrap_module.worth_keeping(chosen.count, prepared.d, prepared.measures)
            collected = bootstrap_module.collect(batches, prepared.measures, confidence, keep=keep)
            intervals = collected.fanned_out(chosen.group)
            fields = [values._asdict() for values in intervals.values]
    results = {}
    for index, outcome in enumerate(outcomes):
        result = CohortShapleyResult(
            **_common_fields(prepared, chosen, target_data, index),
            **value_fields(fields[index], prepared.pilots[index], counted=prepared.weight is None),
            method=chosen_method,
            path=chosen_path,
            settings={**settings, "prediction": outcome, "path": chosen_path},
            bootstrap=None if intervals is None else _bootstrap(intervals, prepared, chosen, index, confidence),
        )
        results[outcome] = result
    first = next(iter(results.values()))
    warn_about_singletons(first.diagnostics)
    return first if isinstance(prediction, str) else CohortShapleyResults(results)


@overload
def shapley_effects(
    data: Any,
    *,
    prediction: str,
    similarity: SimilarityArgument,
    id: str | None = None,
    weight: str | None = None,
    targets: Targets = None,
    sample: int | float | None = None,
    seed: int | None = None,
    bootstrap: int = 0,
    confidence: float = 0.95,
    path: CohortPath = "auto",
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    connection: Any = None,
    engine: EngineName | None = None,
) -> ShapleyEffects: ...


@overload
def shapley_effects(
    data: Any,
    *,
    prediction: Sequence[str],
    similarity: SimilarityArgument,
    id: str | None = None,
    weight: str | None = None,
    targets: Targets = None,
    sample: int | float | None = None,
    seed: int | None = None,
    bootstrap: int = 0,
    confidence: float = 0.95,
    path: CohortPath = "auto",
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    connection: Any = None,
    engine: EngineName | None = None,
) -> ShapleyEffectsResults: ...


def shapley_effects(
    data: Any,
    *,
    prediction: Prediction,
    similarity: SimilarityArgument,
    id: str | None = None,
    weight: str | None = None,
    targets: Targets = None,
    sample: int | float | None = None,
    seed: int | None = None,
    bootstrap: int = 0,
    confidence: float = 0.95,
    path: CohortPath = "auto",
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    connection: Any = None,
    engine: EngineName | None = None,
) -> ShapleyEffects | ShapleyEffectsResults:
    """Shapley effects: the exact Shapley values of v_var(u) = (1/n) sum_t (ybar_{t,u} - ybar)^2.

    They split the variance explained by the cohorts on all d predictors, v_var(1:d), over the
    predictors; ``share`` divides by the variance of the explained column. With every row as a
    target this is exact. With a sample of targets (``sample=`` a count or a fraction, drawn with
    `seed`) v_var is the sample mean over the sampled targets and every effect gets a standard error.
    With case weights, v_var averages over the targets weighted by them; with ``bootstrap=B``, each
    effect gets a percentile interval from B Bayesian-bootstrap replicates of the whole table.
    Arguments are those of `cohort_shapley`; `variance_shapley` is the same function.
    """
    outcomes = _outcomes(prediction)
    check_choice("path", path, PATHS)
    seed = arguments.seed(seed)
    replicates, confidence, seed = _bootstrap_arguments(bootstrap, confidence, seed)
    _check_names(id, weight, memory_limit)
    with opened_engine(data, engine, connection, memory_limit, temp_directory) as running:
        prepared = _prepare(
            running, data, outcomes, similarity, id, weight, targets, MAX_EXACT_FEATURES, replicates, seed
        )
        measures = prepared.measures
        features = tuple(feature.name for feature in prepared.features)
        settings = _settings(
            running,
            prepared,
            None,
            method="exact",
            path=path,
            targets=targets,
            sample=sample,
            seed=seed,
            bootstrap=replicates,
            confidence=confidence,
        )
        if (
            targets is None
            and sample is None
            and _choose_path(path, prepared, prepared.subject_count) == "grouping_sets"
        ):
            (games, checks), squared, target_weights = variance_game(running, prepared), None, None
            count, population, chosen_path = prepared.subject_count, None, "grouping_sets"
            variances = prepared.variances
        else:
            chosen = select_targets(running, prepared, targets, seed, sample)
            count, population = chosen.count, chosen.population
            chosen_path = _choose_path(path, prepared, count)
            pacer = _pacer(running, prepared, chosen, "exact", chosen_path, reporter(progress))
            batches = _local_batches(running, prepared, chosen, "exact", chosen_path, pacer, seed, 2, None)
            collected = bootstrap_module.collect(batches, measures, confidence, keep=False, intervals=False).fanned_out(
                chosen.group
            )
            weights = chosen.weights[:, measures.weighting_of_game]
            games = collected.squared_games / weights.sum(axis=0)[:, None]
            squared = [values.shapley_squared for values in collected.values]
            target_weights = chosen.weights[:, 0]
            centred = (
                np.column_stack(
                    [chosen.table.column(f"__cohort_y{index}").to_numpy() for index in range(len(outcomes))]
                )
                - prepared.centred_means
            )
            variances = np.average(centred**2, axis=0, weights=target_weights)
            first = collected.values[0]
            checks = diagnostics(
                first.cohort_size, first.feature_cohort_size, features, prepared.total_weight, target_weights
            )
    warn_about_singletons(checks)
    results = {
        outcome: ShapleyEffects.from_game(
            features=features,
            game=games[measures.game(index, 0)],
            variance=float(variances[index]),
            subjects=prepared.subject_count,
            targets=count,
            squared_values=None if squared is None else squared[index],
            population=population,
            path=chosen_path,
            diagnostics=checks,
            settings={**settings, "prediction": outcome, "path": chosen_path},
            target_weights=target_weights if prepared.weight is not None else None,
            replicate_games=games[measures.game(index, 1) : measures.game(index + 1, 0)] if replicates else None,
            confidence=confidence,
        )
        for index, outcome in enumerate(outcomes)
    }
    return next(iter(results.values())) if isinstance(prediction, str) else ShapleyEffectsResults(results)


variance_shapley = shapley_effects
"""The earlier name of `shapley_effects`."""


def uniqueness_shapley(
    data: Any,
    *,
    similarity: SimilarityArgument,
    id: str | None = None,
    weight: str | None = None,
    targets: Targets = None,
    sample: int | float | None = None,
    seed: int | None = None,
    path: CohortPath = "auto",
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    connection: Any = None,
    engine: EngineName | None = None,
) -> UniquenessResult:
    """Uniqueness Shapley (Seiler, Mase & Owen): how identifiable each target is, split over its predictors.

    The game v_U(t, u) = -log(|C_{t,u}| / n) is the information (in nats) that the target's values
    on u give about which row it is; its Shapley values add up to -log(|C_{t,1:d}| / n), which is
    log(n) for a target unique in the table. A privacy audit from the same cohort counts as
    `cohort_shapley`, with no explained column. With case weights, sizes are sums of weights.
    Other arguments are those of `cohort_shapley` (exact method).
    """
    check_choice("path", path, PATHS)
    seed = arguments.seed(seed)
    _check_names(id, weight, memory_limit)
    with opened_engine(data, engine, connection, memory_limit, temp_directory) as running:
        prepared = _prepare(running, data, (), similarity, id, weight, targets, MAX_EXACT_FEATURES, 0, 0)
        chosen = select_targets(running, prepared, targets, seed, sample)
        target_data = read_target_data(running, prepared, chosen)
        settings = _settings(
            running, prepared, chosen, method="exact", path=path, targets=targets, sample=sample, seed=seed
        )
        chosen_path = _choose_path(path, prepared, chosen.count)
        pacer = _pacer(running, prepared, chosen, "exact", chosen_path, reporter(progress))
        batches = (uniqueness_of_cells if chosen_path == "grouping_sets" else uniqueness_batches)(
            running, prepared, chosen, pacer
        )
        phi, value, size = (np.concatenate(arrays)[chosen.group] for arrays in zip(*batches))
    common = _common_fields(prepared, chosen, target_data, None)
    return UniquenessResult(
        ids=common["ids"],
        features=common["features"],
        similarity=common["similarity"],
        subjects=prepared.subject_count,
        total_weight=prepared.total_weight if prepared.weight is not None else None,
        uniqueness=phi,
        value=value,
        cohort_size=size if prepared.weight is not None else np.rint(size).astype(np.int64),
        targets=target_data,
        weights=common["weights"],
        path=chosen_path,
        settings={**settings, "path": chosen_path},
    )


def estimate(
    data: Any,
    *,
    prediction: Prediction,
    similarity: SimilarityArgument,
    id: str | None = None,
    weight: str | None = None,
    targets: Targets = None,
    sample: int | float | None = None,
    method: Method = "exact",
    seed: int | None = None,
    bootstrap: int = 0,
    max_permutations: int = 200,
    path: CohortPath = "auto",
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    connection: Any = None,
    engine: EngineName | None = None,
) -> Plan:
    """What `cohort_shapley` with these arguments would do and how long it should take: the data are
    read and checked, the targets chosen, and one small pilot batch computed and timed (``--dry-run``)."""
    outcomes = _outcomes(prediction)
    check_choice("method", method, METHODS)
    check_choice("path", path, PATHS)
    seed = arguments.seed(seed)
    max_permutations = arguments.whole_number("max_permutations", max_permutations, minimum=2)
    replicates, _, seed = _bootstrap_arguments(bootstrap, 0.95, seed)
    _check_names(id, weight, memory_limit)
    with opened_engine(data, engine, connection, memory_limit, temp_directory) as running:
        prepared = _prepare(running, data, outcomes, similarity, id, weight, targets, MAX_FEATURES, replicates, seed)
        chosen = select_targets(running, prepared, targets, seed, sample)
        chosen_method = _choose_method(method, prepared.d)
        chosen_path = "pairwise" if chosen_method == "permutation" else _choose_path(path, prepared, chosen.count)
        pacer = _pacer(running, prepared, chosen, chosen_method, chosen_path, Silent(), pilot_only=True)
        batches = _local_batches(
            running, prepared, chosen, chosen_method, chosen_path, pacer, seed, max_permutations, None
        )
        pilot = sum(
            len(batch[0]) if isinstance(batch, list) else len(batch.shapley) // max(1, prepared.measures.games)
            for batch in batches
        )
    return Plan(
        targets=chosen.count,
        distinct_targets=chosen.distinct.num_rows,
        subjects=prepared.subject_count,
        subject_rows=prepared.subject_rows,
        features=prepared.d,
        method=chosen_method,
        path=chosen_path,
        engine=running.dialect.name,
        pilot_targets=pilot,
        pilot_seconds=(pacer.seconds_per_target or 0.0) * pilot,
    )


def histogram_sql(
    data: Any,
    *,
    prediction: str,
    similarity: SimilarityArgument,
    id: str | None = None,
    targets: Targets = None,
    sample: int | float | None = None,
    table: str | None = None,
    dialect: SqlDialect = "duckdb",
    variant: SqlVariant = "histogram",
    seed: int | None = None,
    connection: Any = None,
    engine: EngineName | None = None,
) -> str:
    """The heavy step (DESIGN §2 step 1) as one SQL query, to run in a warehouse where the data live.

    cohortsql reads `data` to check the request and settle each feature's kind (defaults need the
    number of distinct values); the query computes every whole-table statistic itself. It reads
    `table` (a table name or any table expression, in the target dialect; default: the file `data`
    names) and returns, for `variant`:

    - ``histogram``: one row per (target, similarity mask) with ``subjects``, ``sum_y`` and ``sum_y2``
      (sums of y - mean and its square), the target's ``prediction`` and the whole-table ``mean``;
    - ``collapsed``: the same, after merging subjects with identical predictors (not with ``sql:`` kinds);
    - ``cells``: for ``exact`` and ``bins`` kinds only, the subjects grouped by their keys, each
      target a row of its own: no join at all.

    `cohortsql.assemble` turns the result into cohort Shapley values. DuckDB and Spark SQL are
    written natively; other dialects are transpiled from DuckDB's with sqlglot (``pip install 'cohortsql[sql]'``).
    """
    check_choice("dialect", dialect, DIALECTS)
    check_choice("variant", variant, VARIANTS)
    seed = arguments.seed(seed)
    _outcomes(prediction, several=False)
    _check_names(id, None, None)
    with opened_engine(data, engine, connection) as running:
        prepared = _prepare(running, data, (prediction,), similarity, id, None, targets, MAX_FEATURES, 0, 0)
        chosen_ids = None
        if sample is not None or not (targets is None or isinstance(targets, str)):
            chosen = select_targets(running, prepared, targets, seed, sample)
            chosen_ids = chosen.table.column("__cohort_id").to_pylist()
    if variant == "cells" and not all(feature.kind.equivalence for feature in prepared.features):
        raise CohortError("variant='cells' needs exact or bins similarity for every feature")
    if variant == "collapsed" and prepared.custom:
        raise CohortError("variant='collapsed' cannot merge subjects under sql: similarity (it may read any column)")
    native = NATIVE_DIALECTS.get(dialect, DUCKDB)
    sql = compile.standalone(
        _standalone_source(data, table, native),
        [portable(feature) for feature in prepared.features],
        prediction,
        native.quote(id) if id is not None else native.scan_position(),
        prepared.target_predicate,
        _standalone_condition(prepared, chosen_ids, native),
        native,
        variant=variant,
        position_note=(
            f"-- Without an id column, a target is its 0-based row position in {native.scan_order}."
            if id is None
            else ""
        ),
    )
    if dialect in NATIVE_DIALECTS:
        return sql
    try:
        import sqlglot
    except ImportError:
        raise CohortError(f"dialect {dialect!r} needs sqlglot: pip install 'cohortsql[sql]'") from None
    comments = "\n".join(line for line in sql.splitlines() if line.startswith("--"))
    body = "\n".join(line for line in sql.splitlines() if not line.startswith("--"))
    return comments + "\n" + sqlglot.transpile(body, read="duckdb", write=dialect, pretty=True)[0]


def _standalone_source(data: Any, table: str | None, dialect: Any) -> str:
    if table is not None:
        return check_expression(table, "table")
    if isinstance(data, (str, Path)) and not is_query(str(data)):
        return str(dialect.read_file(str(data), file_format(str(data))))
    raise CohortError("name the table the SQL reads (table= / --table): the data is not a file")


def _standalone_condition(prepared: Prepared, chosen_ids: list[Any] | None, dialect: Any) -> str:
    if chosen_ids is not None:
        return compile.id_membership("__cohort_id", chosen_ids, None, dialect)
    return compile.target_condition(prepared.target_predicate is not None, None)


def _outcomes(prediction: object, *, several: bool = True) -> tuple[str, ...]:
    """The explained columns: one name, or (where `several` are allowed) a non-empty list of names."""
    if isinstance(prediction, str):
        return (prediction,)
    if several and isinstance(prediction, Sequence) and prediction:
        for name in prediction:
            if not isinstance(name, str):
                raise CohortError(f"prediction must list column names (text), got {name!r}")
        return tuple(prediction)
    wanted = "the name of a column (text) or a list of them" if several else "the name of a column (text)"
    raise CohortError(f"prediction must be {wanted}, got {prediction!r}")


def _check_names(id: object, weight: object, memory_limit: object) -> None:
    arguments.optional_text("id", id)
    arguments.optional_text("weight", weight)
    arguments.optional_text("memory_limit", memory_limit)


def _bootstrap_arguments(bootstrap: object, confidence: object, seed: int | None) -> tuple[int, float, int | None]:
    """B, the confidence level, and the seed (drawn when replicates need one and none was given)."""
    replicates = arguments.whole_number("bootstrap", bootstrap, minimum=0)
    if replicates == 1:
        raise CohortError("bootstrap=1 gives no interval; ask for 0 (none) or at least 2 replicates (200 or more)")
    level = arguments.positive_number("confidence", confidence)
    if level is None or level >= 1:
        raise CohortError(f"confidence must be a number between 0 and 1, e.g. 0.95; got {confidence!r}")
    if replicates and seed is None:
        seed = int(np.random.default_rng().integers(2**31))
    return replicates, level, seed


def _prepare(
    engine: Engine,
    data: Any,
    outcomes: Sequence[str],
    similarity: SimilarityArgument,
    id: str | None,
    weight: str | None,
    targets: Targets,
    max_features: int,
    replicates: int,
    seed: int | None,
) -> Prepared:
    return prepare(
        engine,
        data,
        outcomes=outcomes,
        similarity=similarity,
        id=id,
        weight=weight,
        target_predicate=targets if isinstance(targets, str) else None,
        max_features=max_features,
        replicates=replicates,
        seed=seed or 0,
    )


def _bootstrap(
    collected: bootstrap_module.Collected, prepared: Prepared, targets: TargetSet, outcome: int, confidence: float
) -> bootstrap_module.Bootstrap | None:
    """Outcome `outcome`'s replicates and intervals, fanned out to every target (None without replicates)."""
    measures = prepared.measures
    if not measures.replicates:
        return None
    first = measures.game(outcome, 1)
    games = collected.squared_games[first : first + measures.replicates]
    replicate_weights = targets.weights[:, 1:]
    low, high, squared_low, squared_high = collected.intervals[outcome]
    kept = collected.replicate_values[outcome]
    return bootstrap_module.Bootstrap(
        replicates=measures.replicates,
        confidence=confidence,
        seed=measures.seed,
        shapley_low=low,
        shapley_high=high,
        shapley_squared_low=squared_low,
        shapley_squared_high=squared_high,
        effects=bootstrap_module.replicate_effects(games, replicate_weights),
        target_weights=replicate_weights,
        shapley=None if kept is None else kept[0],
        shapley_squared=None if kept is None else kept[1],
    )


def _pacer(
    engine: Engine,
    prepared: Prepared,
    targets: TargetSet,
    method: str,
    path: str,
    report: Reporter,
    pilot_only: bool = False,
) -> Pacer:
    """Batches of targets for a computation: bounded by memory, paced by time (not the lattice walk)."""
    memory = permutation_batch_size(prepared) if method == "permutation" else exact_batch_size(prepared, path)
    measures = prepared.measures
    return Pacer(
        total=targets.distinct.num_rows,
        memory_batch=memory,
        pairs_per_target=prepared.subject_rows,
        reporter=report,
        sums_per_pair=(measures.weightings + measures.games + 1) / 3,
        seconds_per_batch=WIDE_BATCH_SECONDS if measures.replicates else SECONDS_PER_BATCH,
        paced=path != "grouping_sets",
        pilot_only=pilot_only,
    )


def _local_batches(
    engine: Engine,
    prepared: Prepared,
    targets: TargetSet,
    method: str,
    path: str,
    pacer: Pacer,
    seed: int | None,
    max_permutations: int,
    tolerance: float | None,
) -> Iterator[Any]:
    """The batches of values of the chosen method and path (exact `CohortShapley`, or lists of estimates)."""
    if method == "permutation":
        return permutation_batches(
            engine, prepared, targets, pacer, seed=seed, max_permutations=max_permutations, tolerance=tolerance
        )
    return (grouping_sets_batches if path == "grouping_sets" else pairwise_batches)(engine, prepared, targets, pacer)


def _choose_method(method: str, d: int) -> str:
    return arguments.exact_or_permutation(
        method,
        d,
        auto_exact_up_to=AUTO_EXACT_FEATURES,
        exact_up_to=MAX_EXACT_FEATURES,
        work="2^d cohorts per target",
    )


def _choose_path(path: str, prepared: Prepared, targets: int) -> str:
    check_choice("path", path, PATHS)
    windows = [str(feature.name) for feature in prepared.features if not feature.kind.equivalence]
    if path == "grouping_sets" and windows:
        raise CohortError(
            f"path='grouping_sets' needs exact or bins similarity for every feature; {windows} are not"
            " equivalences (use path='pairwise' or 'auto')"
        )
    if path == "auto":
        return "grouping_sets" if not windows and targets >= 1 << (prepared.d - 1) else "pairwise"
    return path


def _settings(
    engine: Engine,
    prepared: Prepared,
    chosen: TargetSet | None,
    *,
    method: str,
    path: str,
    **choices: Any,
) -> dict[str, str]:
    """The run's settings as text, written with its outputs so that a result says how it was made."""
    return run_settings(
        engine=engine.dialect.name,
        prediction=prepared.outcomes[0] if len(prepared.outcomes) == 1 else list(prepared.outcomes),
        id=prepared.id,
        weight=prepared.weight,
        similarity={feature.name: str(feature.kind) for feature in prepared.features},
        method=method,
        path=path,
        targets=_described_targets(choices.get("targets")),
        sample=choices.get("sample"),
        seed=chosen.seed if chosen is not None and chosen.seed is not None else choices.get("seed"),
        **{name: choices[name] for name in ("bootstrap", "confidence") if choices.get("bootstrap")},
    )


def _described_targets(targets: Any) -> str:
    """The targets argument as text: every row, a predicate, a sample size, or (the first) ids."""
    if targets is None:
        return "every row"
    if isinstance(targets, (str, int, float)):
        return str(targets)
    listed = list(targets)
    return repr(listed[:20])[:-1] + (f", ... ({len(listed)} ids)]" if len(listed) > 20 else "]")


def _common_fields(
    prepared: Prepared, targets: TargetSet, target_data: pl.DataFrame, outcome: int | None
) -> dict[str, Any]:
    """The result fields every outcome shares, and those of explained column number `outcome`."""
    fields = dict(
        ids=pl.Series("id", targets.table.column("__cohort_id")),
        features=tuple(feature.name for feature in prepared.features),
        similarity={feature.name: str(feature.kind) for feature in prepared.features},
        subjects=prepared.subject_count,
        targets=target_data,
        weights=targets.weights[:, 0] if prepared.weight is not None else None,
    )
    if outcome is None:
        return fields
    name = prepared.outcomes[outcome]
    return fields | dict(
        kinds={feature.name: feature.kind for feature in prepared.features},
        feature_statistics={
            feature.name: {name: None if value is None else float(value) for name, value in feature.parameters.items()}
            for feature in prepared.features
        },
        mean=float(prepared.means[outcome]),
        variance=float(prepared.variances[outcome]),
        prediction=target_data[name].cast(pl.Float64).to_numpy(),
        population=targets.population,
        outcome=name,
        total_weight=prepared.total_weight if prepared.weight is not None else None,
    )
