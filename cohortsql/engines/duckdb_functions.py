"""The SQL functions `cohortsql.register` adds to a DuckDB connection, so that cohort Shapley values
are a query away: the table function ``cohort_shapley`` and the scalar function that finishes any
mask histogram, ``cohort_shapley_values``.

DuckDB's Python API registers scalar functions only, so the table function is a table macro over
``query()``: a scalar function (``cohortsql_values_query``) turns the macro's arguments into the
query that computes the values, which ``query()`` runs on the caller's own connection. That query
computes every target's mask histogram in SQL and hands each one, as lists, to
``cohort_shapley_values``, which runs cohortsql's numpy stage on them (as fast as
`cohortsql.cohort_shapley`, unlike the portable ``values`` query, whose superset sums in SQL took
8x as long on Boston). A function runs while a query of the connection runs, and may not use that
connection: the query is prepared on a cursor of the same database, which sees its tables, views
and files, but not the connection's temporary tables or registered frames.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import duckdb
import duckdb.func as func
import numpy as np
import pyarrow as pa
from duckdb.sqltypes import BIGINT, DOUBLE, INTEGER, VARCHAR

from cohortsql.engines.base import ValuesOfHistograms
from cohortsql.engines.inputs import FILE_READERS
from cohortsql.errors import CohortError

VALUES_FUNCTION = "cohort_shapley_values"
QUERY_FUNCTION = "cohortsql_values_query"
TABLE_FUNCTION = "cohort_shapley"


QueryOfArguments = Callable[
    [duckdb.DuckDBPyConnection, str, str, str, str | None, str | None, str | None, str | None], str
]
"""(a cursor, data, prediction, similarity, id, targets, weight, the table the SQL reads or None for the
file `data` names) -> the SQL of the values (run on the caller's connection)."""

_RESULT = duckdb.list_type(
    duckdb.struct_type({"position": INTEGER, "feature": VARCHAR, "shapley": DOUBLE, "shapley_squared": DOUBLE})
)

PREPARED_SECONDS = 5.0
"""How long a prepared query is reused for the same arguments and the same data (a file's size and
time, a table's columns): a relation of DuckDB's Python API binds its query again when it runs, which
calls the query function again, and preparing reads the whole table. The query computes every
statistic itself, but it is written for the data as prepared (default kinds, and the bare similarity
tests of columns that held no missing values), so it is not kept long."""


def register_functions(
    connection: duckdb.DuckDBPyConnection, *, values: ValuesOfHistograms, query: QueryOfArguments
) -> None:
    """Add ``cohort_shapley_values`` (finishes histograms), ``cohortsql_values_query`` and the table
    macro ``cohort_shapley`` to `connection` (replacing earlier versions)."""
    register_finisher(connection, values)
    _remove(connection, QUERY_FUNCTION)
    connection.create_function(
        QUERY_FUNCTION,
        _cached(connection, query),
        [VARCHAR] * 6,
        VARCHAR,
        null_handling=func.SPECIAL,
        side_effects=False,
    )
    connection.execute(
        f"CREATE OR REPLACE TEMP MACRO {TABLE_FUNCTION}(data, prediction, similarity, id := NULL, targets := NULL,"
        f" weight := NULL) AS TABLE SELECT * FROM query({QUERY_FUNCTION}(data, prediction, similarity, id, targets,"
        " weight))"
    )


def register_finisher(connection: duckdb.DuckDBPyConnection, values: ValuesOfHistograms) -> None:
    """Add ``cohort_shapley_values(masks, weights, sums, features)`` to `connection` (replacing an earlier one)."""
    lists: list[Any] = [duckdb.list_type(type_) for type_ in (BIGINT, DOUBLE, DOUBLE, VARCHAR)]
    _remove(connection, VALUES_FUNCTION)
    finisher: Callable[..., Any] = _finisher(values)  # an arrow function: Arrow arrays in and out
    try:
        connection.create_function(VALUES_FUNCTION, finisher, lists, _RESULT, type=func.ARROW, side_effects=False)
    except duckdb.CatalogException:
        _check_ours(connection)  # registered through another connection: the catalog is the database's


def _check_ours(connection: duckdb.DuckDBPyConnection) -> None:
    """The database's ``cohort_shapley_values`` is cohortsql's: it values a one-row histogram as ours does."""
    try:
        (answer,) = connection.execute(f"SELECT {VALUES_FUNCTION}([1], [2.0], [3.0], ['x'])").fetchall()[0]
    except duckdb.Error:
        answer = None
    if answer != [{"position": 0, "feature": "x", "shapley": 0.0, "shapley_squared": 0.0}]:
        raise CohortError(
            f"this database has a function {VALUES_FUNCTION} that is not cohortsql's: drop it, or use another database"
        )


def _remove(connection: duckdb.DuckDBPyConnection, name: str) -> None:
    try:
        connection.remove_function(name)
    except duckdb.Error:
        pass  # not registered yet


def _finisher(values: ValuesOfHistograms) -> Callable[..., pa.Array]:
    """The arrow function behind ``cohort_shapley_values(masks, weights, sums, features)``: one row per
    target, each a list of its histogram's masks, weights and sums, and the features' names."""

    def finish(masks: pa.Array, weights: pa.Array, sums: pa.Array, features: pa.Array) -> pa.Array:
        masks, weights, sums, features = (_combined(column) for column in (masks, weights, sums, features))
        rows = len(masks)
        if rows == 0:
            return pa.array([], type=_RESULT_ARROW)
        names = features[0].as_py()
        if features.null_count or any(listed.as_py() != names for listed in features):
            raise CohortError("cohort_shapley_values needs the same list of feature names on every row")
        lengths = np.diff(masks.offsets.to_numpy())
        if not (
            np.array_equal(lengths, np.diff(weights.offsets.to_numpy()))
            and np.array_equal(lengths, np.diff(sums.offsets.to_numpy()))
        ):
            raise CohortError("cohort_shapley_values needs lists of masks, weights and sums of the same length")
        row = np.repeat(np.arange(rows), lengths)
        shapley, squared = values(
            row,
            masks.flatten().to_numpy(zero_copy_only=False),
            weights.flatten().to_numpy(zero_copy_only=False),
            sums.flatten().to_numpy(zero_copy_only=False),
            rows,
            len(names),
        )
        d = len(names)
        entries = pa.StructArray.from_arrays(
            [
                pa.array(np.tile(np.arange(d, dtype=np.int32), rows)),
                pa.array(names * rows, type=pa.string()),
                pa.array(shapley.reshape(-1)),
                pa.array(squared.reshape(-1)),
            ],
            names=["position", "feature", "shapley", "shapley_squared"],
        )
        return pa.ListArray.from_arrays((np.arange(rows + 1) * d).tolist(), entries)

    return finish


_RESULT_ARROW = pa.list_(
    pa.struct(
        [
            ("position", pa.int32()),
            ("feature", pa.string()),
            ("shapley", pa.float64()),
            ("shapley_squared", pa.float64()),
        ]
    )
)


def _combined(column: pa.Array | pa.ChunkedArray) -> pa.ListArray:
    """A list column as one array (DuckDB may hand over several chunks)."""
    return cast(pa.ListArray, column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column)


def _cached(connection: duckdb.DuckDBPyConnection, query: QueryOfArguments) -> Callable[..., str]:
    """The query function, preparing on a cursor of `connection`'s database and reusing a query it
    prepared in the last `PREPARED_SECONDS` for the same arguments and the same columns of the data."""
    prepared: OrderedDict[tuple[object, ...], tuple[float, str]] = OrderedDict()
    lock = threading.Lock()

    def build(
        data: str, prediction: str, similarity: str, id: str | None, targets: str | None, weight: str | None
    ) -> str:
        cursor = connection.cursor()
        try:
            arguments = (data, prediction, similarity, id, targets, weight, _fingerprint(cursor, data))
            now = time.monotonic()
            with lock:
                for key in [key for key, (when, _) in prepared.items() if now - when > PREPARED_SECONDS]:
                    del prepared[key]
                if arguments in prepared:
                    return prepared[arguments][1]
            table = None if data is None or _is_file(data) else data
            if table is not None:
                _check_visible(cursor, table)
            sql = query(cursor, data, prediction, similarity, id, targets, weight, table)
            with lock:
                prepared[arguments] = (now, sql)
            return sql
        finally:
            cursor.close()

    return build


def _fingerprint(cursor: duckdb.DuckDBPyConnection, data: str | None) -> tuple[object, ...]:
    """What changes when the data do, cheaply: a file's size and time, or a table's columns and types
    (looked up by name, a bound parameter: the caller's text never enters SQL here)."""
    if data is None:
        return ()
    path = Path(data)
    if path.is_file():
        status = path.stat()
        return (status.st_size, status.st_mtime_ns)
    name = data.split(".")[-1].strip().strip('"')
    rows = cursor.execute(
        "SELECT schema_name, column_name, data_type FROM duckdb_columns() WHERE lower(table_name) = lower(?)"
        " ORDER BY schema_name, column_index",
        [name],
    ).fetchall()
    return tuple(rows)


def _is_file(data: str) -> bool:
    """Whether `data` names a file (a path or glob ending in a file's suffix) rather than a table or view."""
    return Path(data).suffix.lower() in FILE_READERS


def _check_visible(cursor: duckdb.DuckDBPyConnection, table: str) -> None:
    """A table or view the function's cursor can read, or a `CohortError` that says why not."""
    name = table.split(".")[-1].strip().strip('"')
    found = cursor.execute(
        "SELECT count(*) FROM (SELECT table_name AS name FROM duckdb_tables() UNION ALL"
        " SELECT view_name FROM duckdb_views()) WHERE lower(name) = lower(?)",
        [name],
    ).fetchall()
    if not found[0][0]:
        raise CohortError(
            f"cohort_shapley reads the tables, views and files of the database, and {table!r} is none of them;"
            " a frame registered on the connection or a TEMP table is private to it: store it with CREATE TABLE"
            " (or call cohortsql.cohort_shapley from Python)"
        )
