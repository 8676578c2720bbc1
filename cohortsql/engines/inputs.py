"""The caller's data as an engine reads it: files by their format, in-memory frames as Arrow,
tables of DuckDB database files (``FILE.duckdb:TABLE``), and row positions for data without an id."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from cohortsql.errors import CohortError

POSITION_COLUMN = "__cohort_row"
"""The column holding 0-based row positions, in inputs registered with ``positions=True``."""

FILE_READERS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
}
_COMPRESSION_SUFFIXES = {".gz", ".zst"}
_DATABASE_TABLE = re.compile(r"^(?P<database>.+\.(duckdb|db|ddb)):(?P<table>[^:]+)$")


class Input(NamedTuple):
    """The caller's data as the engine sees it."""

    relation: str
    """A table expression (a quoted name or a reader call) that SQL can select from."""
    schema: pa.Schema
    """The data's own columns and their types."""
    positions: bool
    """Whether the relation also has `POSITION_COLUMN`: each row's 0-based position in the data."""
    rescans_are_cheap: bool
    """Whether scanning the relation again costs little (data in memory or in the engine's own storage)."""
    in_memory: pa.Table | None = None
    """The relation's rows themselves when the engine reads them from this process's memory (a frame
    DuckDB scans in place; with `POSITION_COLUMN` when `positions`): passes over every row read them
    here, not through a query (which costs DuckDB 10-30 ms of binding at 1,000 columns)."""


GLOB_CHARACTERS = frozenset("*?[")
"""The characters that make a path a glob, for every engine that reads files."""


def file_format(path: str) -> str:
    """``parquet``, ``csv`` or ``json`` from a file name (compression suffixes aside)."""
    suffixes = [suffix.lower() for suffix in Path(path).suffixes]
    while suffixes and suffixes[-1] in _COMPRESSION_SUFFIXES:
        suffixes.pop()
    reader = FILE_READERS.get(suffixes[-1] if suffixes else "")
    if reader is None:
        raise CohortError(f"cannot tell the format of {path!r} from its name; use a .parquet, .csv or .json file")
    return reader


def as_arrow(data: Any) -> pa.Table | None:
    """An in-memory frame (pyarrow, polars, pandas) as an Arrow table in types every engine reads
    (`readable`); None for anything else. A frame that cannot be converted is a `CohortError`."""
    module = type(data).__module__.split(".")[0]
    if module == "polars" and hasattr(data, "collect_schema"):
        columns = data.collect_schema().names()
    else:
        columns = getattr(data, "column_names", None) or getattr(data, "columns", None)
    if columns is not None and module in ("pyarrow", "polars", "pandas"):
        named_with_nul = [str(name) for name in columns if "\0" in str(name)]
        if named_with_nul:  # polars panicked on it, and SQL names cannot hold it
            raise CohortError(
                f"column {named_with_nul[0]!r} has a NUL character in its name, which SQL names cannot hold: rename it"
            )
    try:
        table = _arrow_table(data)
    except CohortError:
        raise
    except Exception as error:  # polars' and pandas' own errors: a failing LazyFrame, a column of mixed types
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise CohortError(f"cannot read the {type(data).__name__} as a table: {first}") from None
    return None if table is None else readable(table)


def _arrow_table(data: Any) -> pa.Table | None:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    module = type(data).__module__.split(".")[0]
    if module == "polars":
        import polars as pl

        if isinstance(data, pl.LazyFrame):
            data = data.collect()
        if isinstance(data, pl.DataFrame):
            return data.to_arrow()
    if module == "pandas" and type(data).__name__ == "DataFrame":
        return pa.Table.from_pandas(data, preserve_index=False)
    return None


def readable(table: pa.Table) -> pa.Table:
    """`table` with the Arrow types that engines do not read widened without loss: half floats to
    float32, 256-bit decimals of at most 38 digits to 128-bit ones; a wider decimal is refused."""
    fields = []
    for field in table.schema:
        kind = field.type
        if pa.types.is_float16(kind):
            kind = pa.float32()
        elif isinstance(kind, pa.Decimal256Type):
            if kind.precision > 38:
                raise CohortError(
                    f"column {field.name!r} holds decimals of {kind.precision} digits; engines read at most 38:"
                    " cast it to a float or a narrower decimal"
                )
            kind = pa.decimal128(kind.precision, kind.scale)
        fields.append(field.with_type(kind))
    schema = pa.schema(fields)
    return table if schema.equals(table.schema) else table.cast(schema.with_metadata(table.schema.metadata or {}))


def sendable(table: pa.Table, receiver: str, *, large: bool) -> pa.Table:
    """`table` in the Arrow types a `receiver` ingests: dictionaries decoded, unsigned integers as
    int64, string and binary views as large strings and binaries (`large`, Spark) or, with large
    ones, as plain strings and binaries (ADBC drivers); a cast that fails is a `CohortError`."""
    text, data = (pa.large_string(), pa.large_binary()) if large else (pa.string(), pa.binary())
    fields = []
    for field in table.schema:
        kind = field.type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if pa.types.is_string_view(kind) or (not large and pa.types.is_large_string(kind)):
            kind = text
        if pa.types.is_binary_view(kind) or (not large and pa.types.is_large_binary(kind)):
            kind = data
        if pa.types.is_unsigned_integer(kind):
            kind = pa.int64()
        fields.append(field.with_type(kind))
    schema = pa.schema(fields)
    if schema.equals(table.schema):
        return table
    columns = []
    for field, column in zip(schema, table.columns):
        try:
            columns.append(column.cast(field.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            beyond = pa.types.is_unsigned_integer(column.type) and pa.types.is_integer(field.type)
            reason = f"its unsigned integers go beyond {2**63 - 1}, the largest {receiver} stores" if beyond else error
            raise CohortError(f"cannot send column {field.name!r} to {receiver}: {reason}") from None
    return pa.table(columns, schema=schema)


def with_positions(table: pa.Table) -> pa.Table:
    """`table` with `POSITION_COLUMN` appended (the other columns are not copied)."""
    return table.append_column(POSITION_COLUMN, pa.array(np.arange(table.num_rows, dtype=np.int64)))


def without_positions(schema: pa.Schema) -> pa.Schema:
    """The data's own columns of a schema that may hold `POSITION_COLUMN`."""
    if POSITION_COLUMN in schema.names:
        return schema.remove(schema.get_field_index(POSITION_COLUMN))
    return schema


def database_table(text: str) -> tuple[str, str] | None:
    """(database file, table) when `text` names a table of a DuckDB database file as
    ``FILE.duckdb:TABLE`` or ``FILE.duckdb:schema.table`` (and is not itself a file), else None."""
    match = _DATABASE_TABLE.match(text)
    if match is None or Path(text).exists():
        return None
    return match["database"], match["table"]
