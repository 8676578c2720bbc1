"""`cohortsql.register`: cohort Shapley values callable from SQL, on a DuckDB connection or a
SparkSession (the functions themselves: `cohortsql.engines.duckdb_functions` and
`cohortsql.engines.spark_functions`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cohortsql.api.printed import render_query
from cohortsql.engines import engine_of, open_engine
from cohortsql.errors import CohortError
from cohortsql.games.cohort import histogram_values
from cohortsql.numeric.players import summed_duplicates
from cohortsql.request.similarity_text import similarity_text
from cohortsql.run.strategy import MAX_EXACT_FEATURES


def register(connection: Any) -> None:
    """Add cohortsql's SQL functions to a DuckDB connection or a SparkSession.

    On DuckDB, the table function
    ``cohort_shapley(data, prediction, similarity [, id := ...] [, targets := ...] [, weight := ...])``
    gives ``id, feature, shapley, shapley_squared`` for every target, as `cohort_shapley` does: `data`
    names a table, a view or a file of the connection's database, `similarity` is one string of
    ``name=kind`` (or a name alone, for its default kind) separated by commas, and `targets` a SQL
    predicate over the data's columns. The scalar function
    ``cohort_shapley_values(list(mask0), list(subjects), list(sum_y), ['feature', ...])`` finishes any
    mask histogram (the query `cohortsql sql` prints), one list of values per target.

    On Spark, the table function
    ``SELECT * FROM cohort_shapley_values(TABLE(histogram) PARTITION BY target)`` finishes the
    histograms of the printed query where they were computed (on the executors).

    Parameters
    ----------
    connection
        A DuckDB connection (or a cursor of one) or a SparkSession (classic or Connect).

    Returns
    -------
    None
        The functions are added to `connection` (to its database's catalog under names of its own, and as its TEMP macros).

    Examples
    --------
    >>> import duckdb
    >>> import cohortsql
    >>> connection = duckdb.connect()
    >>> cohortsql.register(connection)
    >>> _ = connection.execute("CREATE TABLE scores AS SELECT * FROM (VALUES (1, 10.0, 'n', 0.2), (2, 30.0, 's', 0.7),"
    ...     " (3, 20.0, 'n', 0.4)) AS v(loan, income, region, score)")
    >>> connection.sql("SELECT id, feature, round(shapley, 4) AS phi FROM cohort_shapley("
    ...     "'scores', 'score', 'income=abs:10, region=exact', id := 'loan') WHERE id = 2").fetchall()
    [(2, 'income', 0.0583), (2, 'region', 0.2083)]
    """
    if engine_of(connection) is None:
        raise CohortError(f"register needs a DuckDB connection or a SparkSession, got {type(connection).__name__}")
    with open_engine(connection=connection) as engine:
        engine.register_functions(histogram_values_checked, _function_query)


def histogram_values_checked(
    row: np.ndarray, mask: np.ndarray, weight: np.ndarray, sums: np.ndarray, rows: int, d: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every target's (shapley, shapley_squared) from its histogram entries, checked first: a SQL
    caller may hand over any lists. Entries that repeat a target and mask are added up."""
    if not 1 <= d <= MAX_EXACT_FEATURES:
        raise CohortError(f"cohort_shapley_values handles 1 to {MAX_EXACT_FEATURES} features, got {d}")
    mask = np.asarray(mask)
    if mask.size and (mask.min() < 0 or mask.max() >= 1 << d):
        raise CohortError(f"a similarity mask is outside 0 .. 2^{d} - 1 (the range of masks over {d} features)")
    weight, sums = np.asarray(weight, dtype=np.float64), np.asarray(sums, dtype=np.float64)
    if not (np.isfinite(weight).all() and np.isfinite(sums).all()) or (weight <= 0).any():
        raise CohortError("a histogram's weights must be positive and its sums finite (no NULL, NaN or infinity)")
    # Repeated (target, mask) rows are parts of one histogram (a UNION ALL of partial ones): summed.
    merged = summed_duplicates({"target": row, "mask0": mask.astype(np.int64), "w": weight, "s": sums}, d)
    row, mask, weight, sums = merged["target"], merged["mask0"], merged["w"], merged["s"]
    full = np.zeros(rows, dtype=bool)
    full[row[mask == (1 << d) - 1]] = True
    if not full.all():
        raise CohortError(
            "a target's histogram has no row with every bit set (the target itself is similar to itself on"
            " every feature): pass the whole mask histogram of each target"
        )
    values = histogram_values(row, mask.astype(np.int64), weight, sums, rows, d)
    return values.per_row.shapley, values.per_row.shapley_squared


def _function_query(
    cursor: Any,
    data: str,
    prediction: str,
    similarity: str,
    id: str | None,
    targets: str | None,
    weight: str | None,
    table: str | None,
    *,
    dialect: str,
    function: str,
) -> str:
    """The query behind an engine's table function ``cohort_shapley``: prepared (checked, kinds settled)
    on `cursor`, run by the caller's connection; it reads `table` (None: the file `data` names), in
    `dialect`, and its histograms are finished by the engine's function named `function`."""
    for argument, value in (("data", data), ("prediction", prediction), ("similarity", similarity)):
        if value is None:
            raise CohortError(f"cohort_shapley needs {argument}: cohort_shapley(data, prediction, similarity)")
    given = {"id": id, "targets": targets, "weight": weight, "connection": cursor}
    return render_query(
        data, prediction, similarity_text(similarity), table, dialect, "function", given, function=function
    )
