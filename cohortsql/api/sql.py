"""`cohortsql.histogram_sql`: the heavy step as one self-contained query, in the dialect asked for,
to run where the data live (`cohortsql.assemble` finishes it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Unpack

from cohortsql import queries
from cohortsql._typing import (
    DIALECTS,
    VARIANTS,
    QueryOptions,
    RunOptions,
    SimilarityArgument,
    SqlDialect,
    SqlVariant,
    Targets,
)
from cohortsql.engines.inputs import file_format
from cohortsql.errors import CohortError, check_choice
from cohortsql.run.preparation import Prepared
from cohortsql.run.session import open_session
from cohortsql.run.strategy import MAX_FEATURES
from cohortsql.spec.arguments import checked_options, explained_columns
from cohortsql.spec.features import portable
from cohortsql.sql.dialects import DUCKDB, NATIVE_DIALECTS
from cohortsql.sql.user import check_expression, is_query


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
    **options: Unpack[RunOptions],
) -> str:
    """The heavy step (docs/design.md §2, the pairwise path) as one SQL query, to run in a warehouse where the data live.

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

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> similarity = {"income": "abs:15", "region": "exact"}
    >>> sql = cohortsql.histogram_sql(loans, prediction="score", similarity=similarity, table="loans")
    >>> print(sql.splitlines()[0])
    -- cohortsql's heavy step as one self-contained query, to run where the data live.
    """
    check_choice("dialect", dialect, DIALECTS)
    check_choice("variant", variant, VARIANTS)
    explained_columns(prediction, several=False)
    asked = checked_options({**options, "id": id, "targets": targets, "sample": sample, "seed": seed}, QueryOptions)
    with open_session(data, asked, outcomes=(prediction,), similarity=similarity, max_features=MAX_FEATURES) as session:
        prepared = session.prepared
        chosen_ids = None
        if sample is not None or not (targets is None or isinstance(targets, str)):
            chosen = session.select()
            chosen_ids = chosen.table.column("__cohort_id").to_pylist()
    if variant == "cells" and not all(feature.kind.equivalence for feature in prepared.features):
        raise CohortError("variant='cells' needs exact or bins similarity for every feature")
    if variant == "collapsed" and prepared.custom:
        raise CohortError("variant='collapsed' cannot merge subjects under sql: similarity (it may read any column)")
    native = NATIVE_DIALECTS.get(dialect, DUCKDB)
    sql = queries.standalone.standalone(
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
        return queries.targets.id_membership("__cohort_id", chosen_ids, None, dialect)
    return queries.targets.target_condition(prepared.target_predicate is not None, None)
