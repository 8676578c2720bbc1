"""The SQL functions `cohortsql.register` adds to a DuckDB connection, so that cohort Shapley values
are a query away: the table function ``cohort_shapley`` and the scalar function that finishes any
mask histogram, ``cohort_shapley_values``.

DuckDB's Python API registers scalar functions only, so the table function is a table macro over
``query()``: a scalar function turns the macro's arguments into the query that computes the values,
which ``query()`` runs on the caller's own connection. That query computes every target's mask
histogram in SQL and hands each one, as lists, to the finishing function, which runs cohortsql's
numpy stage on them (as fast as `cohortsql.cohort_shapley`, unlike the portable ``values`` query,
whose superset sums in SQL took 8x as long on Boston). A function runs while a query of the
connection runs, and may not use that connection: the query is prepared on a cursor of the same
database, placed in the caller's database, schema and search path (the macro passes them), so that
it reads the name as the caller's SQL does; the caller's TEMP objects, which a cursor cannot see,
are checked by the query itself when it runs (a TEMP table of the same name is refused). Nothing is
reused between calls: each call prepares its query on the data as they are.

A Python function belongs to the connection that added it (DuckDB calls a freed object once that
connection closes), while the catalog holding it is the whole database's: every registration adds
functions of its own, under names of its own, and the connection's TEMP macros ``cohort_shapley`` and
``cohort_shapley_values`` call them. A cursor or a second connection to the same file registers its own.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, cast

import duckdb
import duckdb.func as func
import numpy as np
import pyarrow as pa
from duckdb.sqltypes import BIGINT, DOUBLE, INTEGER, VARCHAR

from cohortsql.dialects import DUCKDB
from cohortsql.engines.base import QueryOfArguments, ValuesOfHistograms
from cohortsql.engines.inputs import FILE_READERS
from cohortsql.errors import CohortError
from cohortsql.queries.templates import template

VALUES_FUNCTION = "cohort_shapley_values"
TABLE_FUNCTION = "cohort_shapley"


class Source(NamedTuple):
    """What `data` names, resolved on the preparing cursor as the caller's SQL reads it."""

    table: str | None
    """The quoted name of a table or view (None: `data` is a file, read by its reader function)."""
    name: str
    """The table's own name (its last part), which a TEMP object of the caller's would shadow."""


_RESULT = duckdb.list_type(
    duckdb.struct_type({"position": INTEGER, "feature": VARCHAR, "shapley": DOUBLE, "shapley_squared": DOUBLE})
)

_CALLER_CONTEXT = "current_database(), current_schema(), current_setting('search_path')"
"""What the table macro passes of the caller's connection, so that its cursor reads names alike."""


def register_functions(
    connection: duckdb.DuckDBPyConnection, *, values: ValuesOfHistograms, query: QueryOfArguments
) -> None:
    """Add this connection's ``cohort_shapley_values`` (finishes histograms) and table function
    ``cohort_shapley`` (replacing earlier versions of this connection's)."""
    _check_connection(connection)
    finisher = register_finisher(connection, values)
    preparer = _unique_name("cohortsql_query")
    connection.create_function(
        preparer,
        _preparer(connection, query),
        [VARCHAR] * 9,
        VARCHAR,
        null_handling=func.SPECIAL,
        side_effects=True,  # it reads the database: never folded or reused
    )
    connection.execute(
        f"CREATE OR REPLACE TEMP MACRO {VALUES_FUNCTION}(masks, weights, sums, features) AS"
        f" {finisher}(masks, weights, sums, features)"
    )
    connection.execute(
        f"CREATE OR REPLACE TEMP MACRO {TABLE_FUNCTION}(data, prediction, similarity, id := NULL, targets := NULL,"
        f" weight := NULL) AS TABLE SELECT * FROM query({preparer}(data, prediction, similarity, id, targets,"
        f" weight, {_CALLER_CONTEXT}))"
    )


def register_finisher(connection: duckdb.DuckDBPyConnection, values: ValuesOfHistograms) -> str:
    """Add a function of `connection` that finishes histograms, ``(masks, weights, sums, features)``
    lists in; returns its name (one of its own: see the module's docstring)."""
    lists: list[Any] = [duckdb.list_type(type_) for type_ in (BIGINT, DOUBLE, DOUBLE, VARCHAR)]
    name = _unique_name("cohortsql_values")
    finisher: Callable[..., Any] = _finisher(values)  # an arrow function: Arrow arrays in and out
    connection.create_function(name, finisher, lists, _RESULT, type=func.ARROW, side_effects=False)
    return name


_FINISHERS: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, str] = weakref.WeakKeyDictionary()
"""The finishing function each connection has added for the library's own queries (`finisher_of`)."""


def finisher_of(connection: duckdb.DuckDBPyConnection, values: ValuesOfHistograms) -> str:
    """The name of `connection`'s function finishing histograms with `values`, added on first use."""
    if connection not in _FINISHERS:
        _FINISHERS[connection] = register_finisher(connection, values)
    return _FINISHERS[connection]


def _unique_name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def _check_connection(connection: object) -> None:
    if not isinstance(connection, duckdb.DuckDBPyConnection):
        raise CohortError(f"register needs a DuckDB connection or a SparkSession, got {type(connection).__name__}")


def _finisher(values: ValuesOfHistograms) -> Callable[..., pa.Array]:
    """The arrow function behind ``cohort_shapley_values(masks, weights, sums, features)``: one row per
    target, each a list of its histogram's masks, weights and sums, and the features' names."""

    def finish(masks: pa.Array, weights: pa.Array, sums: pa.Array, features: pa.Array) -> pa.Array:
        masks, weights, sums, features = (_combined(column) for column in (masks, weights, sums, features))
        rows = len(masks)
        if rows == 0:
            return pa.array([], type=_RESULT_ARROW)
        names = features[0].as_py()
        if features.null_count or any(listed.as_py() != names for listed in features) or not names:
            raise CohortError("cohort_shapley_values needs the same list of feature names on every row")
        if any(name is None for name in names):
            raise CohortError("cohort_shapley_values needs feature names, not NULL")
        if masks.null_count or weights.null_count or sums.null_count:
            raise CohortError("cohort_shapley_values needs a list of masks, weights and sums on every row, not NULL")
        lengths = np.diff(masks.offsets.to_numpy())
        if not (
            np.array_equal(lengths, np.diff(weights.offsets.to_numpy()))
            and np.array_equal(lengths, np.diff(sums.offsets.to_numpy()))
        ):
            raise CohortError("cohort_shapley_values needs lists of masks, weights and sums of the same length")
        flat = [column.flatten() for column in (masks, weights, sums)]
        if any(column.null_count for column in flat):
            raise CohortError("cohort_shapley_values' lists of masks, weights and sums hold NULL")
        row = np.repeat(np.arange(rows), lengths)
        mask, weight, sum_y = (column.to_numpy(zero_copy_only=False) for column in flat)
        shapley, squared = values(row, mask, weight, sum_y, rows, len(names))
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


def _preparer(connection: duckdb.DuckDBPyConnection, query: QueryOfArguments) -> Callable[..., str]:
    """The query function: prepares the query on a cursor of `connection`'s database placed where the
    caller's connection is (its database, schema and search path), for the data as they are now."""

    def prepare(
        data: str | None,
        prediction: str,
        similarity: str,
        id: str | None,
        targets: str | None,
        weight: str | None,
        database: str,
        schema: str,
        search_path: str | None,
    ) -> str:
        if data is None:
            raise CohortError("cohort_shapley needs data: cohort_shapley(data, prediction, similarity)")
        cursor = connection.cursor()
        try:
            cursor.execute(f"USE {DUCKDB.quote(database)}.{DUCKDB.quote(schema)}")
            if search_path:
                cursor.execute(f"SET search_path = {DUCKDB.string(search_path)}")
            source = _source(cursor, data)
            sql = query(
                cursor,
                data,
                prediction,
                similarity,
                id,
                targets,
                weight,
                source.table,
                dialect=DUCKDB.name,
                function=VALUES_FUNCTION,
            )
        finally:
            cursor.close()
        return sql if source.table is None else _unshadowed(sql, source.name)

    return prepare


def _source(cursor: duckdb.DuckDBPyConnection, data: str) -> Source:
    """A file (by its suffix, unless quoted as a name) or a table or view the cursor reads by that name."""
    if Path(data).suffix.lower() in FILE_READERS and not data.startswith(DUCKDB.identifier_quote):
        return Source(None, data)
    table = DUCKDB.quote_path(data)
    try:
        cursor.execute(f"SELECT * FROM {table} LIMIT 0")
    except duckdb.Error:
        raise CohortError(
            f"cohort_shapley reads the tables, views and files of the database, and {data!r} is none of them;"
            " a frame registered on the connection or a TEMP table is private to it: store it with CREATE TABLE"
            " (or call cohortsql.cohort_shapley from Python)"
        ) from None
    parts = DUCKDB.name_parts(data)
    assert parts is not None  # quote_path parsed it
    return Source(table, parts[-1])


def _unshadowed(sql: str, name: str) -> str:
    """`sql`, refusing to run where the caller's connection has a TEMP table or view named `name`: the
    caller's SQL would read that, the prepared query was written for the database's own."""
    return template("unshadowed").format(query=sql, name=DUCKDB.string(name), function=TABLE_FUNCTION)
