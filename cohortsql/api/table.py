"""`cohortsql.shapley_table`: the values as a table of the engine that computed them, for more targets
than one Python process should hold: a Spark DataFrame whose histograms are finished on the executors,
or a DuckDB relation finished by a function of its own query; with equivalence kinds only, each cell's
values joined to its targets (the grouping-sets path).
"""

from __future__ import annotations

from typing import Any, Unpack

from cohortsql import queries
from cohortsql._typing import TableOptions
from cohortsql.api.register import histogram_values_checked
from cohortsql.engines.base import Engine
from cohortsql.engines.tables import Select
from cohortsql.interrupts import interruptible_call
from cohortsql.numeric.shapley import targets_per_batch
from cohortsql.request.arguments import explained_columns
from cohortsql.request.options import checked_options
from cohortsql.request.similarity import SimilarityArgument
from cohortsql.run.grouping_sets import values_by_cell
from cohortsql.run.preparation import Prepared, weigh_subjects
from cohortsql.run.session import Session, open_session
from cohortsql.run.strategy import MAX_EXACT_FEATURES, exact_batch_size, exact_route
from cohortsql.run.targets import target_relation

HISTOGRAM_ENTRY_BYTES = 32
"""What one histogram row holds in a call's Arrow table: target, mask, weight and sum."""


@interruptible_call
def shapley_table(
    data: Any,
    *,
    prediction: str,
    similarity: SimilarityArgument,
    into: str | None = None,
    replace: bool = False,
    **options: Unpack[TableOptions],
) -> Any:
    """Every target's cohort Shapley values as a table of the engine that computes them: ``id``,
    ``feature``, ``shapley``, ``shapley_squared`` (as `cohort_shapley`'s ``local``, in no particular
    order), without any of it passing through this Python process.

    On Spark the result is a ``pyspark.sql.DataFrame``: the engine computes each target's mask
    histogram, and grouped Arrow functions finish groups of them on the executors (cohortsql must be
    installed there), so a whole scored month can be explained and written as a table
    (``.write.saveAsTable(...)``) with nothing per target on the driver. With only ``exact`` and
    ``bins`` kinds, and targets enough to pay (as `cohort_shapley` decides its path), no target is
    joined with subjects: the engine groups the subjects into the cells of every key, each cell's
    values are computed once here (they are the values of every target in it), and the engine joins
    them to the targets by their keys; only per-cell values pass through this process. On DuckDB it is a relation of
    `connection` (or of a connection cohortsql opens), finished by a function of its own query. Both
    are lazy: the work runs when the table is read or written, and it reads temporary views
    (``cohortsql_*``) of the session, which stay until the session ends. The values are those of the
    data as they were when `shapley_table` was called: the rows it compares are stored then (a
    temporary table in DuckDB, a local checkpoint on Spark's executors), so changing the data before
    the table is read changes nothing in it. On a warehouse (an ADBC connection), which runs no
    Python, the values query computes them in the warehouse's own SQL (`sql_query`'s ``values``).
    With `into`, the values are written into that table of the engine's database or catalog instead,
    and the run is recorded in its ``cohortsql_runs`` table. Arguments are those of `cohort_shapley`
    (the exact method, up to 24 features).

    Parameters
    ----------
    data
        The table: any input `cohort_shapley` reads (a Spark DataFrame or table stays on Spark).
    prediction
        The column to explain.
    similarity
        Feature -> similarity kind, or a list of features with default kinds (as for `cohort_shapley`).
    into
        A table to write the values into, computed where the data is (none pass through this process);
        never the call's own input. On DuckDB, the caller's `connection` must be given (a database
        cohortsql opens in memory is lost when the call ends).
    replace
        With `into`: replace an existing table of that name (else it is refused).
    **options
        Which rows, case weights and where it runs (`TableOptions`; the options of `cohort_shapley` with the same names mean the same):
        ``id``, ``targets``, ``sample``, ``seed``, ``weight`` and the `RunOptions`.

    Returns
    -------
    pyspark.sql.DataFrame or duckdb.DuckDBPyRelation or pyarrow.Table or None
        A table of ``id``, ``feature``, ``shapley`` and ``shapley_squared`` of the data as it was: lazy
        on Spark and DuckDB; Arrow, computed, on a warehouse; None when written `into` a table.

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> table = cohortsql.shapley_table(loans, prediction="score", similarity={"income": "abs:15", "region": "exact"})
    >>> [(id, feature, round(phi, 3)) for id, feature, phi, _ in table.filter("id = 0").order("feature").fetchall()]
    [(0, 'income', 0.274), (0, 'region', -0.004)]
    """
    explained_columns(prediction, several=False)
    asked = checked_options(options, TableOptions)
    with open_session(
        data, asked, outcomes=(prediction,), similarity=similarity, max_features=MAX_EXACT_FEATURES, snapshot=True
    ) as session:
        engine, prepared = session.engine, session.prepared
        selection = asked.selection
        relation, count = target_relation(engine, prepared, selection.targets, selection.seed, selection.sample)
        route = exact_route("auto", prepared, count)
        table = _by_cell(engine, prepared, relation) if route.by_cells else _by_histogram(session, relation, count)
        if into is not None:
            settings = session.settings(None, method=route.method, path=route.path)
            settings |= {"written_by": "cohortsql.shapley_table"}
            protected = engine.sources(data).tables if isinstance(data, str) else ()
            engine.write_tables({into: table}, replace=replace, protected=protected, settings=settings)
            return None
        if isinstance(table, Select):
            return engine.fetch_arrow(table.sql, context="computing the values")
        engine.keep()
    return table


def _by_cell(engine: Engine, prepared: Prepared, targets: str) -> Any:
    """The grouping-sets path (exact and bins kinds, as `cohort_shapley` takes it): every cell's values
    computed once here from the cells of the finest partition (no join of targets with subjects),
    uploaded, and joined to the targets by their keys, in the engine."""
    values = engine.upload(values_by_cell(engine, prepared, exact_batch_size(prepared, by_cells=True)), "cell_values")
    return engine.lazy(queries.cells.values_by_cell(targets, values, prepared.features, engine.dialect))


def _by_histogram(session: Session, targets: str, count: int) -> Any:
    """The pairwise path: each target's mask histogram, finished beside the data (`Engine.finish_histograms`)
    or, on an engine that runs no Python, by the values query in its own SQL."""
    engine, prepared = session.engine, session.prepared
    weighted = weigh_subjects(engine, prepared)
    histogram = engine.create(
        queries.histogram.mask_histogram(
            weighted.relation,
            targets,
            prepared.features,
            prepared.measures,
            engine.dialect,
            collapsed=prepared.compressed,
        ),
        "histogram",
        materialize=False,
        context="computing similarity masks",
    )
    budget = prepared.batch_bytes
    rows_per_target = min(prepared.subject_rows, 1 << prepared.d)
    per_call = max(1, min(targets_per_batch(prepared.d, budget), budget // (HISTOGRAM_ENTRY_BYTES * rows_per_target)))
    if engine.runs_python:
        return engine.finish_histograms(histogram, prepared.feature_names, count, per_call, histogram_values_checked)
    return Select(queries.values.values_query(histogram, prepared.feature_names, engine.dialect))
