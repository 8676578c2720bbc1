"""The DuckDB engine (the default): in-process, streams and spills, uses every core.

Inputs: a path or glob (parquet, csv, json), a table or view on the caller's connection, a SQL query,
a DuckDB relation, or an in-memory frame (pyarrow, polars, pandas), registered without a copy.
Row positions, when asked for, never rest on two scans agreeing: in-memory frames carry them as a
column, a Parquet file's come from its own row numbers, and anything else is copied once with them.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Self

import duckdb
import numpy as np
import pyarrow as pa

from cohortsql.dialects import DUCKDB
from cohortsql.engines.base import (
    Engine,
    EngineSettings,
    PairInputs,
    QueryOfArguments,
    Select,
    Sources,
    ValuesOfHistograms,
)
from cohortsql.engines.duckdb_files import (
    csv_problem,
    matching_files,
    parquet_positions,
    parsed_sources,
    reader_call,
    sniffed_csv,
)
from cohortsql.engines.duckdb_settings import (
    PERFECT_HASH_BITS,
    callers_limit,
    connect_file,
    in_parallel_batches,
    memory_limit_bytes,
    perfect_hash_bits,
    shared_database,
    shown_again,
    tables_scanned,
)
from cohortsql.engines.inputs import (
    POSITION_COLUMN,
    Input,
    as_arrow,
    database_table,
    file_format,
    with_positions,
    without_positions,
)
from cohortsql.engines.local_histogram import in_process_histogram
from cohortsql.errors import CohortError
from cohortsql.request.user_sql import is_query, query_text


class DuckDBEngine(Engine):
    """Runs cohortsql's SQL on a DuckDB connection: the caller's, or one it opens (in memory or on a file)."""

    name = "duckdb"
    dialect = DUCKDB
    failures = (duckdb.Error,)
    reads_settings = frozenset({"memory_limit", "temp_directory", "database", "read_only"})
    tables_kept_by = "database"
    streams_rows = True

    @classmethod
    def open(cls, connection: Any, settings: EngineSettings, data: Any = None) -> Self:
        """An engine on `connection`, or on the process's in-memory database. `data` plays no part: a
        relation of another connection is copied in (see `register_input`)."""
        if connection is not None and not isinstance(connection, duckdb.DuckDBPyConnection):
            raise CohortError(
                f"connection must be a DuckDB connection for the duckdb engine, got {type(connection).__name__}"
            )
        return cls(connection, settings)

    def __init__(self, connection: duckdb.DuckDBPyConnection | None, settings: EngineSettings) -> None:
        """`settings.memory_limit` and `settings.temp_directory` apply while the engine is open; the previous
        settings come back at close.

        Without a connection the engine works on a cursor of one in-memory database the process keeps
        (opening a database costs 10-20 ms, a cursor 20 us); its temporary tables are the cursor's own.
        A memory limit or spill directory is a setting of the whole database, so a call that asks for
        one gets an in-memory database of its own: the shared one, which other calls and threads use,
        never runs under another call's limit."""
        super().__init__()
        self._owns_connection = connection is None
        self._in_memory = connection is None and settings.database is None
        """Whether the engine's database is one it opened in memory, whose tables nobody else can read."""
        shared = False
        if connection is None:
            if settings.database is not None:
                connection = connect_file(settings.database, settings.read_only)
            elif settings.memory_limit is not None or settings.temp_directory is not None:
                connection = duckdb.connect()
            else:
                connection, shared = shared_database().cursor(), True
        self.connection = connection
        self._functions_connection = shared_database() if shared else connection
        """Where the functions this engine adds are registered: DuckDB's catalog is the database's, and a
        function works only while the connection that added it is open, so on the process's shared
        database they belong to its own connection, which lasts as long as the process."""
        self._previous_settings: dict[str, str] = {}
        self._kept = False
        self._limit = None if settings.memory_limit is None else memory_limit_bytes(settings.memory_limit)
        if self._limit is None and not self._owns_connection:
            self._limit = callers_limit(connection)
        self._locked = self._setting("lock_configuration").lower() == "true"
        self._files_visible = self._setting("enable_external_access").lower() == "true"
        """Whether the connection may read files: where it may not, cohortsql does not look at the file
        system itself either (which files exist must not show in its messages); DuckDB refuses alike."""
        """The caller's connection refuses every SET (``lock_configuration``): the settings that only
        help (speed, quiet) are skipped; those that were asked for are refused."""
        database_wide = {"memory_limit": settings.memory_limit, "temp_directory": settings.temp_directory}
        requested = [setting for setting, chosen in database_wide.items() if chosen is not None]
        if self._locked and requested:
            raise CohortError(
                f"{requested[0]} cannot be set: the connection's configuration is locked (lock_configuration = true);"
                f" set it before locking, or leave {requested[0]} out"
            )
        # DuckDB's own progress bar would print into the caller's output; cohortsql reports its own.
        self._set_if_allowed("enable_progress_bar", "false")
        self._set_if_allowed("perfect_ht_threshold", str(PERFECT_HASH_BITS))
        for setting in requested:
            self._set(setting, str(database_wide[setting]), restore=not self._owns_connection)

    # -- the Engine methods --------------------------------------------------------------------

    def check_query(self, text: str, role: str) -> str:
        """DuckDB's own parser (`duckdb.extract_statements`) must find one SELECT statement."""
        query = query_text(text, role)
        try:
            statements = duckdb.extract_statements(query)
        except duckdb.Error as error:
            raise CohortError(f"{role} is not valid SQL: {self._failure_message(error)}") from None
        if len(statements) != 1:
            raise CohortError(f"{role} holds more than one statement; give one SELECT query")
        if statements[0].type != duckdb.StatementType.SELECT:
            raise CohortError(f"{role} may only read data, but it holds {statements[0].type.name!r}")
        return query

    def expect_aggregates(self, sums: int) -> None:
        self._set_if_allowed("perfect_ht_threshold", str(perfect_hash_bits(sums)))

    def register_input(self, data: Any, *, positions: bool) -> Input:
        if isinstance(data, Path):
            data = str(data)
        if isinstance(data, str):
            in_database = database_table(data)
            if in_database is not None:
                return self._register_database_table(*in_database, positions)
            if is_query(data):
                return self._copy(f"({self.check_query(data, 'the data query')})", positions, context="the data query")
            name = self._table(data)
            if name is not None:
                return self._copy(name, positions) if positions else self._described(name, False, True)
            return self._register_path(data, positions)
        if isinstance(data, duckdb.DuckDBPyRelation):
            # A relation is a query: its rows are copied once, through Arrow if it is another connection's.
            try:
                return self._copy(self._temporary_relation(data), positions)
            except duckdb.Error:
                return self._register_arrow(data.to_arrow_table(), positions)
        if isinstance(data, pa.RecordBatchReader):
            return self._copy(self._temporary_relation(data), positions)  # read once, and it may not fit in memory
        table = as_arrow(data)
        if table is None:
            raise CohortError(
                f"cannot read data of type {type(data).__name__}: pass a file path, a SQL query, a table name with"
                " connection=, a pyarrow Table, a polars or pandas DataFrame, or a DuckDB relation"
            )
        return self._register_arrow(table, positions)

    def upload(self, table: pa.Table, purpose: str) -> str:
        # A small table stored by DuckDB, not a view of the Arrow data: its statistics let the optimizer
        # use a perfect hash for GROUP BY target, mask (1.6x faster on 2e8 pairs, measured).
        view = self._temporary_relation(table)
        stored = self.create(f"SELECT * FROM {view}", purpose, materialize=True, context="sending data to DuckDB")
        self.drop(view)
        return stored

    def sources(self, data: str) -> Sources:
        """A query's from DuckDB's own parse of it (``json_serialize_sql``): every string constant a table
        function is given (``read_parquet('a.parquet')``, lists and globs included) is a file, and every
        table it names a table, or a file where DuckDB would read it as one (``FROM 'a.parquet'``). Other
        text is a table or view of the caller's connection, or a file."""
        if not is_query(data):
            table = self._table(data)
            return Sources((), (data,)) if table is not None else Sources((data,), ())
        query = data
        (serialized,) = self.fetch_arrow(
            f"SELECT json_serialize_sql({self.dialect.string(query)}) AS tree", context="reading the data query"
        )["tree"].to_pylist()
        return parsed_sources(json.loads(str(serialized)))

    def fetch_arrow(self, select: str, *, context: str) -> pa.Table:
        return self._run(lambda: self.connection.sql(select).to_arrow_table(), context)

    def fetch_few_rows(self, select: str, *, context: str) -> pa.Table:
        """The DB-API reads a statement with one binding; the relation API (`fetch_arrow`) binds it once
        to make the relation and again to run it: 0.1 s of 0.3 s for the statistics of 1,024 features,
        10 ms for any query of a registered Arrow input of 1,025 columns. (Its Arrow output copies the
        rows once more, DuckDB warns: nothing for a few rows; 18% more time for 200,000 rows x 256 bytes.)"""

        def read() -> pa.Table:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", "Arrow output on a DB-API result", UserWarning)
                table = self.connection.execute(select).to_arrow_table()
            if table is None:  # a statement without rows (cohortsql's statements all have some)
                raise CohortError(f"{context}: the query gave no rows")
            return table

        return self._run(read, context)

    def arrow_batches(self, select: str, *, rows: int, context: str) -> Iterator[pa.RecordBatch]:
        """The result read batch by batch as DuckDB streams it (one batch in memory at a time)."""
        reader = self._run(lambda: self.connection.sql(select).to_arrow_reader(rows), context)

        def next_batch() -> pa.RecordBatch | None:
            try:
                return reader.read_next_batch()
            except StopIteration:
                return None

        while (batch := self._run(next_batch, context)) is not None:
            yield batch

    def pair_histogram(self, inputs: PairInputs, targets: pa.Table, *, context: str) -> dict[str, np.ndarray] | None:
        """In this process by the compiled kernel for runs of many pairs
        (`cohortsql.engines.local_histogram`); otherwise None, and DuckDB's histogram query."""
        return in_process_histogram(self, inputs, targets, context=context)

    @property
    def memory_budget(self) -> int | None:
        return self._limit

    def interrupt(self) -> None:
        self.connection.interrupt()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """One transaction for every table a run writes, on a database that outlives the call."""
        if self._in_memory:
            raise CohortError(
                "tables written into a DuckDB database cohortsql opened in memory are lost when the call ends:"
                " pass connection= a DuckDB connection (on the command line: --database FILE.duckdb)"
            )
        self._execute("BEGIN TRANSACTION", context="writing the result tables")
        try:
            yield
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        self._execute("COMMIT", context="writing the result tables")

    def _write_table(self, name: str, table: object, *, record: str, append: bool) -> None:
        """As any SQL engine writes one (a lazy result of this connection as its query), the run's
        settings then its comment."""
        if isinstance(table, duckdb.DuckDBPyRelation):
            table = Select(table.sql_query())
        super()._write_table(name, table, record=record, append=append)
        if not append:
            quoted = self.dialect.quote_path(name)
            self._execute(
                f"COMMENT ON TABLE {quoted} IS {self.dialect.string(record)}", context=f"writing table {name!r}"
            )

    def _readable(self, table: pa.Table) -> str:
        return self._temporary_relation(table)  # registered: read, not copied

    def finish_histograms(
        self, histogram: str, features: Sequence[str], targets: int, per_call: int, values: ValuesOfHistograms
    ) -> duckdb.DuckDBPyRelation:
        from cohortsql.engines.duckdb_functions import finisher_of
        from cohortsql.queries.values import finished_by_function

        function = finisher_of(self._functions_connection, values)  # each chunk of targets' lists in one call
        return self.connection.sql(finished_by_function(histogram, features, function, self.dialect))

    def lazy(self, select: str) -> duckdb.DuckDBPyRelation:
        return self.connection.sql(select)

    def register_functions(self, values: ValuesOfHistograms, query: QueryOfArguments) -> None:
        from cohortsql.engines.duckdb_functions import register_functions

        register_functions(self.connection, values=values, query=query)

    def keep(self) -> None:
        super().keep()  # temporary views, tables and attached databases alike
        self._kept = True

    def close(self) -> None:
        try:
            self._restore_settings()  # first: under a tiny memory limit nothing else could run
            for kind, name in reversed(self._created):
                # An owned cursor's temporary objects go with it; attached databases are the database's.
                if kind == "DATABASE" or not self._owns_connection:
                    self._drop(kind, name)
        finally:
            self._created.clear()
            if self._owns_connection and not self._kept:  # a kept relation reads through the connection
                self.connection.close()

    def _restore_settings(self) -> None:
        # memory_limit first: under a tiny limit the other statements could not run.
        for name in sorted(self._previous_settings, key=lambda name: name != "memory_limit"):
            value = self._previous_settings[name]
            # RESET restores a default exactly; the printed value (e.g. '18.8 GiB') is rounded.
            self.connection.execute(f"RESET {name}")
            current = self.connection.execute(f"SELECT current_setting({self.dialect.string(name)})").fetchall()
            if str(current[0][0]) != value:
                again = shown_again(value) if name == "memory_limit" else value
                self.connection.execute(f"SET {name} = {self.dialect.string(again)}")

    # -- inputs --------------------------------------------------------------------------------

    def _register_arrow(self, table: pa.Table, positions: bool) -> Input:
        registered = with_positions(table) if positions else table
        relation = self._temporary_relation(in_parallel_batches(registered))  # no copy
        return Input(relation, table.schema, positions, True, registered)

    def _register_path(self, path: str, positions: bool) -> Input:
        files = matching_files(path, visible=self._files_visible, tables_too=not self._owns_connection)
        reader = file_format(path)
        call = reader_call(path, reader, self._limit, self.dialect)
        if reader == "csv":
            self._check_csv(files[0])
        if reader != "parquet":
            return self._copy(call, positions)  # text formats are parsed once, not at every scan
        # Scanning Parquet again costs less than a stored copy: on 5,000,000 rows under memory_limit="200MB",
        # a stored subjects table raised the peak from 230 MB to 404 MB and the run from 0.48 s to 0.69 s.
        if not positions:
            return self._described(call, False, True)
        try:
            return self._described(self._parquet_positions(path), True, True)
        except CohortError:  # e.g. the file has its own column named file_row_number
            return self._copy(call, positions)

    def _table(self, text: str) -> str | None:
        """`text` quoted as a table or view of the caller's connection when it names one, as the
        caller's own SQL would read the name (its schema, search path and TEMP objects first), else None."""
        parts = self.dialect.name_parts(text)
        if parts is None or self._owns_connection:
            return None
        name = ".".join(self.dialect.quote(part) for part in parts)
        try:
            self.connection.execute(f"SELECT * FROM {name} LIMIT 0")
        except duckdb.CatalogException:
            return None
        except duckdb.Error as error:
            raise CohortError(f"reading table {text!r}: {self._failure_message(error)}") from None
        return name

    def _register_database_table(self, database: str, table: str, positions: bool) -> Input:
        """A table of a DuckDB database file, attached read-only while the engine is open."""
        if self._files_visible and not Path(database).is_file():
            raise CohortError(f"no DuckDB database file {database!r}; check the path")
        alias = self._temporary_name("database")
        self._execute(
            f"ATTACH {self.dialect.string(database)} AS {self.dialect.quote(alias)} (READ_ONLY)",
            context=f"cannot open DuckDB database {database!r}",
        )
        self._created.append(("DATABASE", alias))
        if not self._has_table(table, database=alias):
            raise CohortError(f"no table {table!r} in DuckDB database {database!r}")
        relation = f"{self.dialect.quote(alias)}.{self.dialect.quote_path(table)}"
        return self._copy(relation, positions) if positions else self._described(relation, False, True)

    def _check_csv(self, path: str) -> None:
        """Refuse a CSV file that DuckDB's sniffer would read without its header or past skipped lines."""
        (sniffed,) = self.fetch_arrow(sniffed_csv(path, self.dialect), context=f"reading {path!r}").to_pylist()
        problem = csv_problem(sniffed)
        if problem is not None:
            raise CohortError(
                f"cannot read {path!r} as one table with named columns ({problem}): check that it starts with a"
                " header and that every line has the same number of fields"
            )

    def _parquet_positions(self, path: str) -> str:
        """Parquet rows numbered by file (in name order) and row within the file: no scan order involved."""
        counts = self.fetch_arrow(
            f"SELECT file_name, num_rows FROM parquet_file_metadata({self.dialect.string(path)})",
            context="reading the Parquet metadata",
        ).to_pylist()
        return parquet_positions(path, {row["file_name"]: row["num_rows"] for row in counts}, self.dialect)

    def _copy(self, relation: str, positions: bool, *, context: str = "reading the data") -> Input:
        """Copy a relation once into a temporary table (numbering its rows in that one scan when asked)."""
        numbered = f"row_number() OVER () - 1 AS {self.dialect.quote(POSITION_COLUMN)}, " if positions else ""
        table = self.create(f"SELECT {numbered}* FROM {relation}", "input", materialize=True, context=context)
        return self._described(table, positions, True)

    def _described(self, relation: str, positions: bool, cheap: bool) -> Input:
        schema = self.fetch_arrow(f"SELECT * FROM {relation} LIMIT 0", context="reading the data's columns").schema
        return Input(relation, without_positions(schema), positions, cheap)

    def _temporary_relation(self, data: Any) -> str:
        """A relation, reader or query result registered under a temporary name (until close)."""
        name = self._temporary_name("source")
        self.connection.register(name, data)
        self._created.append(("REGISTERED", name))
        return self.dialect.quote(name)

    def table_identity(self, name: str) -> frozenset[object] | None:
        """The tables (by oid) that `name` reads as DuckDB resolves it (its catalogs, schemas, search path
        and case rules: ``db.main.scores``, ``"DB"."MAIN"."SCORES"`` and ``scores`` are one table; a view
        is the tables it reads); None when it names no relation."""
        return tables_scanned(self.connection, self.dialect.quote_path(name))

    def _has_table(self, name: str, *, database: str | None = None) -> bool:
        *schema, table = name.split(".")
        in_schema = schema[-1] if schema else None
        rows = self.connection.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND coalesce(schema_name = ?, TRUE)"
            " AND coalesce(database_name = ?, TRUE)"
            " UNION ALL SELECT count(*) FROM duckdb_views() WHERE view_name = ? AND coalesce(schema_name = ?, TRUE)"
            " AND coalesce(database_name = ?, TRUE)",
            [table, in_schema, database] * 2,
        ).fetchall()
        return any(count for (count,) in rows)

    # -- plumbing ------------------------------------------------------------------------------

    def _execute(self, sql: str, *, context: str) -> None:
        self._run(lambda: self.connection.execute(sql), context)

    def _setting(self, name: str) -> str:
        (value,) = self.fetch_arrow(
            f"SELECT current_setting({self.dialect.string(name)}) AS v", context=f"reading {name}"
        )["v"].to_pylist()
        return str(value)

    def _set(self, name: str, value: str, *, restore: bool) -> None:
        """SET a setting for this engine's work; with `restore` (the caller's connection) its value comes
        back at close. An owned connection ends with the engine, and needs nothing back."""
        if restore:
            self._previous_settings.setdefault(name, self._setting(name))
        self._execute(f"SET {name} = {self.dialect.string(value)}", context=f"setting {name} = {value!r}")

    def _set_if_allowed(self, name: str, value: str) -> None:
        """A setting that only helps (speed, a quiet output): skipped where the configuration is locked."""
        if not self._locked:
            self._set(name, value, restore=not self._owns_connection)

    def _failure_message(self, error: BaseException) -> str:
        message = super()._failure_message(error)
        if isinstance(error, duckdb.OutOfMemoryException) and self._limit is not None:
            return f"{message}; raise memory_limit (DuckDB spills to its temp_directory what does not fit)"
        return message

    def _drop(self, kind: str, name: str) -> None:
        if kind == "REGISTERED":
            self.connection.unregister(name)
        elif kind == "DATABASE":
            self.connection.execute(f"DETACH DATABASE IF EXISTS {self.dialect.quote(name)}")
        else:
            self.connection.execute(f"DROP {kind} IF EXISTS {self.dialect.quote(name)}")


ENGINE = DuckDBEngine
