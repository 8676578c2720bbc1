"""`cohortsql.sql_query`: the heavy step, or the whole computation, as one self-contained query
in the dialect asked for, to run where the data live (`cohortsql.assemble` finishes the heavy step).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Unpack

from cohortsql import queries
from cohortsql._typing import (
    DIALECTS,
    VARIANTS,
    QueryOptions,
    SqlDialect,
    SqlVariant,
)
from cohortsql.dialects import NATIVE_DIALECTS, TRANSPILED_DIALECTS, Dialect
from cohortsql.dialects.transpile import transpile
from cohortsql.engines.base import Engine
from cohortsql.engines.inputs import file_format
from cohortsql.errors import CohortError, check_choice
from cohortsql.interrupts import interruptible_call
from cohortsql.request.arguments import explained_columns
from cohortsql.request.features import ResolvedFeature, portable
from cohortsql.request.options import checked_options
from cohortsql.request.similarity import KnownQuantiles, QuantileWindow, SimilarityArgument
from cohortsql.request.user_sql import check_expression, is_query
from cohortsql.run.feature_statistics import sorted_quantiles
from cohortsql.run.preparation import Prepared
from cohortsql.run.session import open_session
from cohortsql.run.strategy import MAX_EXACT_FEATURES, MAX_FEATURES, MAX_INTEGRATED_FEATURES

FINISHED: tuple[SqlVariant, ...] = ("values", "effects")
"""The variants whose query computes the values themselves (no `cohortsql.assemble` afterwards)."""


@interruptible_call
def sql_query(
    data: Any,
    *,
    prediction: str,
    similarity: SimilarityArgument,
    table: str | None = None,
    dialect: SqlDialect = "duckdb",
    variant: SqlVariant = "histogram",
    **options: Unpack[QueryOptions],
) -> str:
    """The heavy step (docs/design.md §2, the pairwise path), or the whole computation, as one SQL
    query to run in a warehouse where the data live.

    cohortsql reads `data` to check the request and settle each feature's kind (defaults need the
    number of distinct values); the query computes every whole-table statistic itself. It reads
    `table` (a table name or any table expression, in the target dialect; default: the file `data`
    names) and returns, for `variant`:

    - ``values``: every target's cohort Shapley values, computed entirely by the engine: ``id``,
      ``feature``, ``shapley`` and ``shapley_squared``, one row per target and feature (d <= 24);
    - ``effects``: the Shapley effects of the targets' variance game: ``feature``,
      ``shapley_effect``, ``share`` and the ``variance`` it is a share of, largest first;
    - ``histogram``: one row per (target, similarity mask) with ``subjects``, ``sum_y`` and ``sum_y2``
      (sums of y - mean and its square), the target's ``prediction`` and the whole-table ``mean``;
    - ``collapsed``: the same, after merging subjects with identical predictors (not with ``sql:`` kinds);
    - ``cells``: for ``exact`` and ``bins`` kinds only, the subjects grouped by their keys, each
      target a row of its own: no join at all;
    - ``integrated``: what integrated gradient cohort Shapley reads (``method="integrated"``), one row
      per (target, k) with k the number of features a subject is not similar on: the number of such
      subjects ``w0`` and their sum of y - mean ``s0_0``, and the same over those not similar on each
      feature j (``w0_p<j>``, ``s0_0_p<j>``), with the target's ``prediction``: O(n d) per target,
      for tables too wide for the lattice of cohorts.

    `cohortsql.assemble` turns the last three into cohort Shapley values. With a case-`weight`
    column (``values`` and ``effects``), rows of weight 0 or less are left out and every mean is
    weighted. DuckDB and Spark SQL are written natively; PostgreSQL, BigQuery and Snowflake are
    rendered with their own functions where DuckDB's differ and translated by sqlglot
    (``pip install 'cohortsql[sql]'``). Where the warehouse has no exact quantile aggregate
    (BigQuery), or the quantiles are weighted, quantile windows' quantiles are computed from `data`
    and written into the query as numbers (its header says so).

    Parameters
    ----------
    data
        The table the query is written for: cohortsql reads it to check the request and settle the kinds.
    prediction
        The column to explain.
    similarity
        Feature -> similarity kind, or a list of features with default kinds (as for `cohort_shapley`).
    table
        The table the query reads, in the target dialect (a name or any table expression); default: the file `data` names.
    dialect
        ``duckdb``, ``spark``, ``postgres``, ``bigquery`` or ``snowflake``.
    variant
        What the query returns (above).
    **options
        Which rows, case weights and where cohortsql reads `data` (`QueryOptions`; the options of `cohort_shapley` with the same names mean the same):
        ``id``, ``targets``, ``sample``, ``seed``, ``weight`` and the `RunOptions`.

    Returns
    -------
    str
        The query, its header comments saying what it computes.

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> similarity = {"income": "abs:15", "region": "exact"}
    >>> sql = cohortsql.sql_query(loans, prediction="score", similarity=similarity, table="loans")
    >>> print(sql.splitlines()[0])
    -- cohortsql's heavy step as one self-contained query, to run where the data live.
    >>> import duckdb
    >>> warehouse = duckdb.connect()  # stands for the warehouse where the data live
    >>> warehouse.register("loans", loans.to_arrow())  # doctest: +ELLIPSIS
    <...>
    >>> values = cohortsql.sql_query(loans, prediction="score", similarity=similarity, table="loans", variant="values")
    >>> [(id, feature, round(shapley, 3)) for id, feature, shapley, _ in warehouse.sql(values).fetchall()[:2]]
    [(0, 'income', 0.274), (0, 'region', -0.004)]
    """
    check_choice("dialect", dialect, DIALECTS)
    check_choice("variant", variant, VARIANTS)
    if options.get("weight") is not None and variant not in FINISHED:
        raise CohortError(
            f"weight= needs variant='values' or 'effects': `cohortsql assemble` reads unweighted {variant} results"
        )
    return render_query(data, prediction, similarity, table, dialect, variant, options)


def histogram_sql(*arguments: Any, **options: Any) -> str:
    """The earlier name of `sql_query` (its ``values`` and ``effects`` variants return no histogram).

    Parameters
    ----------
    *arguments
        Those of `sql_query` (`data`).
    **options
        Those of `sql_query`.

    Returns
    -------
    str
        The query `sql_query` prints; a `DeprecationWarning` says the name will go.

    Examples
    --------
    >>> import warnings
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old = cohortsql.histogram_sql(loans, prediction="score", similarity=["income"], table="loans")
    >>> old == cohortsql.sql_query(loans, prediction="score", similarity=["income"], table="loans")
    True
    >>> caught[0].category.__name__
    'DeprecationWarning'
    """
    warnings.warn("histogram_sql is now sql_query; the old name will go", DeprecationWarning, stacklevel=2)
    return sql_query(*arguments, **options)


def render_query(
    data: Any,
    prediction: str,
    similarity: SimilarityArgument,
    table: str | None,
    dialect: str,
    variant: str,
    given: Mapping[str, object],
    *,
    function: str = "",
) -> str:
    """The self-contained query of `sql_query` (the checks of its own arguments done): also the
    variant ``function``, whose histograms the DuckDB scalar function named `function` finishes."""
    explained_columns(prediction, several=False)
    asked = checked_options(given, QueryOptions)
    id, targets, sample, weight = (
        asked.selection.id,
        asked.selection.targets,
        asked.selection.sample,
        asked.weighting.weight,
    )
    limit = (
        MAX_EXACT_FEATURES
        if variant in (*FINISHED, "function")
        else MAX_INTEGRATED_FEATURES
        if variant == "integrated"
        else MAX_FEATURES
    )
    target = NATIVE_DIALECTS.get(dialect) or TRANSPILED_DIALECTS[dialect]
    with open_session(data, asked, outcomes=(prediction,), similarity=similarity, max_features=limit) as session:
        prepared = session.prepared
        chosen_ids = None
        if sample is not None or not (targets is None or isinstance(targets, str)):
            chosen = session.select()
            chosen_ids = chosen.table.column("__cohort_id").to_pylist()
        known = _literal_quantiles(session.engine, prepared, target)
    if variant == "cells" and not all(feature.kind.equivalence for feature in prepared.features):
        raise CohortError("variant='cells' needs exact or bins similarity for every feature")
    if variant == "collapsed" and prepared.custom:
        raise CohortError("variant='collapsed' cannot merge subjects under sql: similarity (it may read any column)")
    # Printed SQL runs later, on data that may have NULL and NaN where these had none; the function's
    # query runs now (the bare tests of columns without missing values are 2x faster in DuckDB).
    features = list(prepared.features) if variant == "function" else [portable(f) for f in prepared.features]
    notes = "\n".join(
        note for note in (_position_note(id, target), _quantile_note(features, known, target, weight)) if note
    )
    sql = queries.standalone.standalone(
        _standalone_source(data, table, target),
        features,
        prediction,
        target.quote(id) if id is not None else target.scan_position(),
        prepared.target_predicate,
        _standalone_condition(prepared, chosen_ids, target),
        target,
        variant=variant,
        position_note=notes,
        weight=weight,
        collapsed=prepared.compressed,
        known=known,
        function=function,
    )
    return sql if dialect in NATIVE_DIALECTS else transpile(sql, dialect)


def _literal_quantiles(engine: Engine, prepared: Prepared, target: Dialect) -> KnownQuantiles:
    """The quantiles of quantile windows that the query cannot compute itself (weighted quantiles, or
    a warehouse without an exact quantile aggregate), computed on `data` now, keyed as `target` renders
    their values; none otherwise."""
    if target.exact_quantiles and prepared.weight is None:
        return {}
    windows = [(feature, feature.kind) for feature in prepared.features if isinstance(feature.kind, QuantileWindow)]
    features = tuple(feature for feature, _ in windows)
    known = sorted_quantiles(engine, prepared.input.relation, features, prepared.weight)  # type: ignore[arg-type]

    def value(feature: ResolvedFeature, dialect: Dialect) -> str:
        return queries.statistics.statistic_value(feature, dialect)

    return {
        (value(feature, target), probability): known[(value(feature, engine.dialect), probability)]
        for feature, kind in windows
        for probability in (kind.p, 1 - kind.p)
    }


def _position_note(id: str | None, dialect: Dialect) -> str:
    if id is not None:
        return ""
    return f"-- Without an id column, a target is its 0-based row position in {dialect.scan_order}."


def _quantile_note(
    features: Sequence[ResolvedFeature], known: KnownQuantiles, dialect: Dialect, weight: str | None
) -> str:
    windows = [
        dialect.quote_in_comment(feature.name) for feature in features if isinstance(feature.kind, QuantileWindow)
    ]
    if not known or not windows:
        return ""
    reason = "weighted quantiles" if weight is not None else f"{dialect.name} has no exact quantile aggregate"
    return (
        f"-- The quantiles of {', '.join(windows)} ({reason}) are numbers computed from the data this query"
        " was printed from."
    )


def _standalone_source(data: Any, table: str | None, dialect: Dialect) -> str:
    if table is not None:
        return check_expression(table, "table")
    if isinstance(data, (str, Path)) and not is_query(str(data)):
        return str(dialect.read_file(str(data), file_format(str(data))))
    raise CohortError("name the table the SQL reads (table= / --table): the data is not a file")


def _standalone_condition(prepared: Prepared, chosen_ids: list[Any] | None, dialect: Dialect) -> str:
    if chosen_ids is not None:
        return queries.targets.id_membership("__cohort_id", chosen_ids, None, dialect)
    return queries.targets.target_condition(prepared.target_predicate is not None, None)
