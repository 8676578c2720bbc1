"""The DuckDB engine: owns the connection, registers inputs, runs SQL and returns numpy or Arrow.

Core code talks to the engine through this narrow interface (register an input, run SQL, fetch
results, drop what it created), so another backend can stand beside it later. DuckDB errors are
translated into `CohortError` messages that say which step failed.
"""

from __future__ import annotations

import glob
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql.errors import CohortError
from cohortsql.sqltext import quote_identifier, render_string

_READERS = {
    ".parquet": "read_parquet",
    ".pq": "read_parquet",
    ".csv": "read_csv",
    ".tsv": "read_csv",
    ".txt": "read_csv",
    ".json": "read_json",
    ".jsonl": "read_json",
    ".ndjson": "read_json",
}
_COMPRESSION_SUFFIXES = {".gz", ".zst"}
_GLOB_CHARACTERS = set("*?[")
_BINARY_UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
"""Units of DuckDB's display of memory_limit (e.g. '953.6 MiB')."""


class DuckDBEngine:
    """Runs cohortsql's SQL on a DuckDB connection: the caller's, or a private in-memory one."""

    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection | None = None,
        *,
        memory_limit: str | None = None,
        temp_directory: str | os.PathLike[str] | None = None,
    ) -> None:
        """`memory_limit` (e.g. ``"1GB"``) and `temp_directory` (where DuckDB spills) apply while the
        engine is open; on the caller's connection the previous settings come back at close."""
        self._owns_connection = connection is None
        self.connection = duckdb.connect() if connection is None else connection
        self._session = uuid.uuid4().hex[:8]
        self._created: list[tuple[str, str]] = []
        self._previous_settings: dict[str, str] = {}
        # DuckDB's own progress bar would print into the caller's output; cohortsql reports its own.
        settings = {"memory_limit": memory_limit, "temp_directory": temp_directory, "enable_progress_bar": "false"}
        for name, value in settings.items():
            if value is not None:
                self._set(name, str(value))

    @property
    def memory_limit_bytes(self) -> int | None:
        """DuckDB's memory limit in bytes when the caller set one through this engine, else None."""
        if "memory_limit" not in self._previous_settings:
            return None
        (shown,) = self.fetch_rows("SELECT current_setting('memory_limit')", context="reading memory_limit")[0]
        number, _, unit = str(shown).partition(" ")
        return int(float(number) * _BINARY_UNITS.get(unit, 1))

    def _set(self, name: str, value: str) -> None:
        (previous,) = self.fetch_rows(f"SELECT current_setting({render_string(name)})", context=f"reading {name}")[0]
        self._previous_settings.setdefault(name, str(previous))
        self.run(f"SET {name} = {render_string(value)}", context=f"setting {name} = {value!r}")

    def __enter__(self) -> DuckDBEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def temporary_name(self, purpose: str) -> str:
        """A name for a temporary table or view that cannot clash with the caller's."""
        return f"cohortsql_{self._session}_{purpose}"

    def register_input(self, data: Any) -> str:
        """Make `data` readable as a SQL table expression and return that expression.

        Accepts a path (parquet, csv, json; globs too), a table or view name on the caller's
        connection, a pyarrow Table or RecordBatchReader, a polars DataFrame or LazyFrame, a pandas
        DataFrame, or a DuckDB relation.
        """
        if isinstance(data, (str, Path)):
            if not self._owns_connection and isinstance(data, str) and self._has_table(data):
                return quote_identifier(data)
            return self._register_path(str(data))
        name = self.temporary_name("input")
        if isinstance(data, duckdb.DuckDBPyRelation):
            # A relation is a query: its row order may change between runs, and cohortsql reads its
            # rows by position more than once. Copy it once (through Arrow if it is another
            # connection's relation).
            try:
                return self._copy(name, data)
            except duckdb.Error:
                return self._copy(name, data.to_arrow_reader())
        if isinstance(data, (pa.RecordBatchReader, pl.LazyFrame)):
            return self._copy(name, data)  # a reader is read only once; a lazy query is run once
        if not _is_frame(data):
            raise CohortError(
                f"cannot read data of type {type(data).__name__}: pass a file path, a table name with"
                " connection=, a pyarrow Table, a polars or pandas DataFrame, or a DuckDB relation"
            )
        try:
            self.connection.register(name, data)
        except duckdb.Error as error:
            raise _as_cohort_error(error, "reading the data") from None
        self._created.append(("REGISTERED", name))
        return quote_identifier(name)

    def _copy(self, name: str, data: Any) -> str:
        """Copy registrable `data` (a relation, reader, lazy frame) once into temporary table `name`."""
        source = f"{name}_source"
        with self.registered(source, data):
            self.create(
                "TABLE",
                name,
                f"CREATE TEMP TABLE {quote_identifier(name)} AS SELECT * FROM {quote_identifier(source)}",
                context="reading the data",
            )
        return quote_identifier(name)

    def _has_table(self, name: str) -> bool:
        rows = self.connection.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?"
            " UNION ALL SELECT count(*) FROM duckdb_views() WHERE view_name = ?",
            [name, name],
        ).fetchall()
        return any(count for (count,) in rows)

    def _register_path(self, path: str) -> str:
        if _GLOB_CHARACTERS & set(path):
            if not glob.glob(path):
                raise CohortError(f"no file matches {path!r}; check the path and the pattern")
        elif not Path(path).is_file():
            hint = " or table" if not self._owns_connection else ""
            raise CohortError(f"no file{hint} named {path!r}; check the path")
        suffixes = [suffix.lower() for suffix in Path(path).suffixes]
        while suffixes and suffixes[-1] in _COMPRESSION_SUFFIXES:
            suffixes.pop()
        reader = _READERS.get(suffixes[-1] if suffixes else "")
        if reader is None:
            raise CohortError(f"cannot tell the format of {path!r} from its name; use a .parquet, .csv or .json file")
        return f"{reader}({render_string(path)})"

    def column_types(self, source: str) -> dict[str, str]:
        """Column name -> DuckDB type of a table expression."""
        rows = self.fetch_rows(f"DESCRIBE SELECT * FROM {source}", context="reading the data's columns")
        return {row[0]: row[1] for row in rows}

    def run(self, sql: str, *, context: str) -> None:
        """Execute a statement that returns nothing of interest."""
        self.fetch_rows(sql, context=context)

    def create(self, kind: str, name: str, sql: str, *, context: str) -> None:
        """Run a CREATE TEMP TABLE or VIEW statement (`kind`) for `name`; it is dropped at close."""
        self._created.append((kind, name))
        self.run(sql, context=context)

    def fetch_rows(self, sql: str, *, context: str) -> list[tuple[Any, ...]]:
        """All rows of a query as tuples."""
        try:
            return self.connection.execute(sql).fetchall()
        except duckdb.Error as error:
            raise _as_cohort_error(error, context) from None

    def fetch_record(self, sql: str, *, context: str) -> dict[str, Any]:
        """The single row of a query as a column -> value mapping."""
        try:
            cursor = self.connection.execute(sql)
            names = [column[0] for column in cursor.description]
            (row,) = cursor.fetchall()
        except duckdb.Error as error:
            raise _as_cohort_error(error, context) from None
        return dict(zip(names, row))

    def fetch_numpy(self, sql: str, *, context: str) -> dict[str, np.ndarray]:
        """A query's columns as numpy arrays."""
        try:
            return self.connection.sql(sql).fetchnumpy()
        except duckdb.Error as error:
            raise _as_cohort_error(error, context) from None

    def fetch_arrow(self, sql: str, *, context: str) -> pa.Table:
        """A query's result as an Arrow table."""
        try:
            return self.connection.sql(sql).to_arrow_table()
        except duckdb.Error as error:
            raise _as_cohort_error(error, context) from None

    @contextmanager
    def registered(self, name: str, table: Any) -> Iterator[None]:
        """Expose an Arrow table (or other registrable object) as view `name` for a with-block."""
        self.connection.register(name, table)
        try:
            yield
        finally:
            self.connection.unregister(name)

    def close(self) -> None:
        """Drop what this engine created and restore settings; close the connection if the engine opened it."""
        if self._owns_connection:
            self.connection.close()
            return
        for kind, name in reversed(self._created):
            if kind == "REGISTERED":
                self.connection.unregister(name)
            else:
                self.connection.execute(f"DROP {kind} IF EXISTS {quote_identifier(name)}")
        self._created.clear()
        for name, value in self._previous_settings.items():
            # RESET restores a default exactly; the printed value (e.g. '18.8 GiB') is rounded.
            self.connection.execute(f"RESET {name}")
            current = self.connection.execute(f"SELECT current_setting({render_string(name)})").fetchall()
            if str(current[0][0]) != value:
                self.connection.execute(f"SET {name} = {render_string(value)}")


def _is_frame(data: object) -> bool:
    if isinstance(data, pa.Table):
        return True
    module = type(data).__module__.split(".")[0]
    return module in ("polars", "pandas")


def _as_cohort_error(error: duckdb.Error, context: str) -> CohortError:
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return CohortError(f"{context}: {message}")
