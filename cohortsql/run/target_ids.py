"""Rows asked for by their ids (targets, baselines, rows included beside a sample): the ids in the id
column's type (text from the command line parsed), the SQL that tests a row's id against them (a list
written into the query, or an uploaded table; integers also within their range), and the data's own
rows of given ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from cohortsql import queries
from cohortsql.engines.base import Engine
from cohortsql.errors import CohortError
from cohortsql.run.data_rows import data_frame
from cohortsql.run.preparation import Prepared


def id_type(prepared: Prepared) -> pa.DataType:
    """The Arrow type of the ids: the id column's, or int64 for row positions."""
    if prepared.id is None:
        return pa.int64()
    return prepared.input.schema.field(prepared.id).type


def requested_ids(values: Any, dtype: pa.DataType, id: str | None, role: str = "target") -> pa.Array:
    """Ids (of targets, or of another `role`: baselines) as an Arrow array of the id column's type (text
    from the command line is parsed)."""
    if isinstance(values, pl.Series):
        listed = values.to_list()
    elif isinstance(values, pa.Array):
        listed = values.to_pylist()
    else:
        listed = list(values)
    if not listed:
        if role != "target":
            raise CohortError(f"{role} is an empty list; name at least one row's id")
        raise CohortError("targets is an empty list; pass None to explain every row")
    if any(value is None for value in listed):
        raise CohortError(f"{role} ids include None; ids identify rows and are never missing")
    try:  # integers beyond the signed range may be values of a UINT64 id column
        array = pa.array(listed) if not _beyond_bigint(listed) else pa.array(listed, pa.uint64())
    except OverflowError:
        raise CohortError(f"{role} ids {listed[:5]!r} hold a number too large for any id column") from None
    except (pa.ArrowException, TypeError, ValueError):
        raise CohortError(f"{role} ids must all be of one type, got {listed[:5]!r}") from None
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    try:
        return array.cast(dtype)
    except (pa.ArrowException, TypeError, ValueError) as error:
        column = "the row positions (integers)" if id is None else f"id column {id!r} ({dtype})"
        raise CohortError(f"{role} ids {listed[:5]!r} are not values of {column}: {error}") from None


def _beyond_bigint(listed: list[Any]) -> bool:
    return any(isinstance(value, int) and value > 2**63 - 1 for value in listed)


LITERAL_IDS = 5_000
"""Up to this many ids are written into the query (an IN list the engine pushes into its scan: 8 ms
against 38 ms for a semi-join on 2,000,000 rows, measured on DuckDB); more are uploaded as a table."""


def listed_ids(ids: pa.Array) -> int | None:
    """How many rows an ordered read of `ids` written into the query can return (ids are unique), for
    its LIMIT (`queries.targets.top_rows`); None for ids read from an uploaded table: a top-N of that
    many rows would hold them all in each of Spark's tasks."""
    return len(ids) if len(ids) <= LITERAL_IDS else None


@contextmanager
def id_membership(engine: Engine, column: str, ids: pa.Array, *, lasting: bool = False) -> Iterator[str]:
    """SQL testing that `column` is one of `ids`, for the duration of a with-block; `lasting`: a table of
    the ids uploaded for it outlives the block (a relation defined on it, `targets.target_relation`)."""
    bounds = integer_bounds(ids)
    if len(ids) <= LITERAL_IDS:
        yield queries.targets.id_membership(column, ids.to_pylist(), None, engine.dialect, bounds)
        return
    uploaded = engine.upload(pa.table({"id": ids}), "ids")
    with nullcontext(uploaded) if lasting else engine.temporary(uploaded) as table:
        yield queries.targets.id_membership(column, None, table, engine.dialect, bounds)


def integer_bounds(ids: pa.Array) -> tuple[int, int] | None:
    """The least and greatest of `ids` when they are integers (`queries.targets.id_membership`), else None:
    text and other ids may sort otherwise in the engine (a collation) than here."""
    if not pa.types.is_integer(ids.type) or len(ids) == 0:
        return None
    extremes = pc.min_max(ids)
    return extremes["min"].as_py(), extremes["max"].as_py()


def read_rows(
    engine: Engine, prepared: Prepared, rows: pa.Table, context: str = "reading the target rows"
) -> pl.DataFrame:
    """The data rows (every column, as they are) of `rows` (subject rows in id order), read by id."""
    ids = rows.column("__cohort_id").combine_chunks()
    every_row = not prepared.measures.weighted and len(ids) == prepared.subject_count
    # Every row of the data (ids are distinct): no list of ids to write and parse (5 ms for Boston's 506).
    with nullcontext("TRUE") if every_row else id_membership(engine, prepared.id_sql, ids) as membership:
        read = engine.fetch_arrow(
            queries.targets.target_data(
                prepared.input.relation,
                prepared.input.schema.names,
                prepared.id_sql,
                membership,
                engine.dialect,
                None if every_row else listed_ids(ids),
            ),
            context=context,
        )
    if not read.column("__cohort_id").equals(rows.column("__cohort_id")):
        raise RuntimeError("the rows read back do not match the requested ids (ids out of order)")
    return data_frame(read, prepared.input.schema)
