"""Warehouses through Arrow Database Connectivity (ADBC): the table stays where it lives, cohortsql's
queries run there, and only histograms (or cells) come back, as Arrow.

``connection=`` is an ADBC DB-API connection: ``adbc_driver_postgresql.dbapi.connect(uri)`` (``pip
install 'cohortsql[postgres]'``), or the Snowflake, BigQuery or Flight SQL driver's, or DuckDB's own
(``adbc_driver_duckdb``). The dialect follows the server the driver names (`VENDOR_DIALECTS`): the
library's queries are rendered for it (in DuckDB's syntax with the warehouse's own choices, translated
by sqlglot), and the caller's data query is the warehouse's own SQL, run as it is.

Inputs: a table or view name (``schema.table``; unquoted parts fold as the server folds them), a SQL
query, or an in-memory frame (sent with the driver's bulk ingestion). A table has no row order a
second scan would keep, so rows are identified by ``id=``. The engine runs no Python beside the
data: histograms are finished here in numpy, and `cohortsql.shapley_table` runs the values query.

Transactions: on a connection in autocommit mode cohortsql runs its statements as they come (and
reads that session's TEMP tables). A connection in a transaction (the DB-API default) is left alone:
an ADBC driver refuses every statement after a failed one until the whole transaction is rolled
back, so one failing or cancelled query would cost the caller its uncommitted work. cohortsql then
works in a session of its own on the same database (``adbc_clone``, in autocommit mode), which reads
what is committed; tables it writes are committed there, all or none.
"""

from __future__ import annotations

import decimal
import re
import urllib.parse
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import adbc_driver_manager
import pyarrow as pa

from cohortsql.dialects import NATIVE_DIALECTS, TRANSPILED_DIALECTS, Dialect, TranspiledDialect
from cohortsql.dialects.transpile import transpile
from cohortsql.engines.base import RUNS_TABLE, Engine, EngineSettings, NamedRelations, Select, Sources
from cohortsql.engines.inputs import FILE_READERS, Input, as_arrow, sendable, with_positions, without_positions
from cohortsql.errors import CohortError
from cohortsql.request.user_sql import is_query, query_text

VENDOR_DIALECTS = {"postgresql": "postgres", "snowflake": "snowflake", "bigquery": "bigquery", "duckdb": "duckdb"}
"""The server an ADBC driver names (``adbc_get_info()['vendor_name']``, from its start, in any case)
-> the dialect cohortsql renders for it. A Flight SQL server names its own engine."""

DRIVERS = {
    "postgresql": ("adbc_driver_postgresql", "postgres"),
    "postgres": ("adbc_driver_postgresql", "postgres"),
    "snowflake": ("adbc_driver_snowflake", "snowflake"),
    "bigquery": ("adbc_driver_bigquery", "bigquery"),
    "grpc": ("adbc_driver_flightsql", "flightsql"),
    "grpc+tls": ("adbc_driver_flightsql", "flightsql"),
}
"""URI scheme -> (the ADBC driver's module, the cohortsql extra that installs it)."""

_STATUS = re.compile(r"^(?:[A-Z_]+: )?(?:\[\w+\] )?")
"""What ADBC drivers put before a message of their own: a status code and the library (``[libpq]``)."""


class AdbcEngine(NamedRelations, Engine):
    """Runs cohortsql's SQL on an ADBC connection, in the dialect of the server behind it."""

    name = "adbc"
    failures = (adbc_driver_manager.Error,)
    runs_python = False
    writes_results_in_place = True

    @classmethod
    def open(cls, connection: Any, settings: EngineSettings, data: Any = None) -> Self:
        """An engine on the caller's ADBC connection (cohortsql opens none itself: a warehouse needs
        its address and credentials)."""
        if connection is None or not hasattr(connection, "adbc_connection"):
            raise CohortError(
                "the adbc engine runs on connection=, an ADBC DB-API connection (e.g."
                " adbc_driver_postgresql.dbapi.connect(uri)); the command line takes --engine URI"
            )
        return cls(connection)

    @classmethod
    def connect(cls, uri: str) -> Any:
        """A connection of the ADBC driver of the URI's scheme, in autocommit mode (tables written are
        kept). Credentials come from the URI or the driver's environment; no message shows them."""
        scheme = urllib.parse.urlsplit(uri).scheme.lower()
        module_name, extra = DRIVERS[scheme]
        try:
            module = __import__(f"{module_name}.dbapi", fromlist=["connect"])
        except ImportError:
            raise CohortError(f"{scheme}:// needs {module_name}: pip install 'cohortsql[{extra}]'") from None
        try:
            connection = module.connect(uri, autocommit=True)
        except adbc_driver_manager.Error as error:
            message = _message(error).replace(uri, redacted(uri))
            raise CohortError(f"cannot connect to {redacted(uri)}: {message}") from None
        return connection

    def __init__(self, connection: Any) -> None:
        info = connection.adbc_get_info()
        self.vendor = str(info.get("vendor_name") or "")
        self.dialect = _dialect(self.vendor)
        self._translated = isinstance(self.dialect, TranspiledDialect)
        autocommit = connection.adbc_connection.get_option("adbc.connection.autocommit")
        self._own_session = str(autocommit).lower() != "true"
        """Whether the caller's connection is in a transaction, so that cohortsql works in a session of its own."""
        self.connection = _autocommitting(connection.adbc_clone()) if self._own_session else connection
        self._cursor = self.connection.cursor()
        self._session = uuid.uuid4().hex[:8]
        self._names = 0
        self._created: list[tuple[str, str]] = []

    # -- the Engine methods --------------------------------------------------------------------

    def check_query(self, text: str, role: str) -> str:
        """sqlglot's parser for the server's dialect must read one query, with no statement that
        writes inside it (a data-modifying CTE, ``SELECT ... INTO``); the server parses it again
        when cohortsql makes it a view."""
        query = query_text(text, role)
        import sqlglot
        from sqlglot import expressions

        try:
            statements = sqlglot.parse(query, read=self.dialect.name)
        except sqlglot.errors.SqlglotError as error:
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise CohortError(f"{role} is not valid SQL for {self.vendor}: {first}") from None
        trees = [statement for statement in statements if statement is not None]
        if len(trees) != 1:
            raise CohortError(f"{role} holds more than one statement; give one SELECT query")
        tree = trees[0]
        writes = (expressions.DML, expressions.Create, expressions.Drop, expressions.Alter, expressions.Command)
        written = next((node for node in tree.walk() if isinstance(node, writes)), None)
        if tree.find(expressions.Into) is not None:
            raise CohortError(f"{role} may only read data, but it holds 'SELECT INTO' (which creates a table)")
        if not isinstance(tree, expressions.Query) or written is not None:
            raise CohortError(f"{role} may only read data, but it holds {type(written or tree).__name__.upper()!r}")
        return query

    def register_input(self, data: Any, *, positions: bool) -> Input:
        if isinstance(data, str):
            if positions:
                raise CohortError(
                    f"{self.vendor} keeps no row order that a second scan would repeat, so rows have no stable"
                    " position: pass id= naming a column that identifies rows (--id on the command line)"
                )
            if is_query(data):
                query = self.check_query(data, "the data query")
                view = self._temporary_name("input")
                self._created.append(("VIEW", view))
                self._execute(f"CREATE TEMPORARY VIEW {self.dialect.quote(view)} AS {query}", "the data query")
                relation = self.dialect.quote(view)
            else:
                relation = self._table(data)
            return self._numeric_as_double(relation)
        table = as_arrow(data)
        if table is None:
            raise CohortError(
                f"cannot read data of type {type(data).__name__} on {self.vendor}: pass a table name, a SQL query,"
                " a pyarrow Table or a polars or pandas DataFrame"
            )
        relation = self.upload(with_positions(table) if positions else table, "input")
        return Input(relation, table.schema, positions, True)

    def _table(self, name: str) -> str:
        """`name` quoted as a table or view of the server, which must exist; a path of this machine,
        or a TEMP table that a session of cohortsql's own cannot see, said in so many words."""
        parts = self.dialect.name_parts(name)
        try:
            if parts is None:
                raise CohortError(f"{name!r} is not a table name as {self.vendor} writes one")
            relation = ".".join(self.dialect.quote(part) for part in parts)
            self._described(relation, f"reading table {name!r}")
        except CohortError as error:
            if _looks_like_a_path(name):
                raise CohortError(
                    f"{name!r} looks like a file of this machine, but the {self.vendor} server reads its own"
                    " tables: load the file into a table first (or run on duckdb, which reads files)"
                ) from None
            if self._own_session:
                raise CohortError(
                    f"{error} (the connection is in a transaction, so cohortsql reads through a session of its"
                    " own, which sees committed tables but not that connection's TEMP tables: commit, or pass a"
                    " connection in autocommit mode)"
                ) from None
            raise
        return relation

    def upload(self, table: pa.Table, purpose: str) -> str:
        name = self._temporary_name(purpose)
        ingested = sendable(table, self.vendor, large=False)
        self._created.append(("TABLE", name))
        self._run(
            lambda: self._cursor.adbc_ingest(name, ingested, mode="create", temporary=True),
            f"sending data to {self.vendor}",
        )
        return self.dialect.quote(name)

    def create(self, select: str, purpose: str, *, materialize: bool, context: str, snapshot: bool = False) -> str:
        name = self._temporary_name(purpose)
        kind = "TABLE" if materialize or snapshot else "VIEW"
        self._created.append((kind, name))
        self._execute(f"CREATE TEMPORARY {kind} {self.dialect.quote(name)} AS {self._rendered(select)}", context)
        return self.dialect.quote(name)

    def sources(self, data: str) -> Sources:
        """The tables a query names (sqlglot's reading of the server's dialect), or the table a name is."""
        if not is_query(data):
            return Sources((), (data,))
        import sqlglot
        from sqlglot import expressions

        try:
            tree = sqlglot.parse_one(data, read=self.dialect.name)
        except sqlglot.errors.SqlglotError:
            return Sources((), ())
        ctes = {cte.alias_or_name for cte in tree.find_all(expressions.CTE)}
        tables = [
            ".".join(part.name for part in table.parts)
            for table in tree.find_all(expressions.Table)
            if table.name not in ctes
        ]
        return Sources((), tuple(tables))

    def fetch_arrow(self, select: str, *, context: str) -> pa.Table:
        sql = self._rendered(select)
        return _plain(self._run(lambda: self._fetch(sql), context))

    @property
    def memory_budget(self) -> int | None:
        return None

    def interrupt(self) -> None:
        """Ask the server to cancel the running statement (``adbc_cancel``)."""
        try:
            self._cursor.adbc_cancel()
        except adbc_driver_manager.NotSupportedError:  # a driver without cancel: the statement runs on
            pass

    def _has_table(self, name: str) -> bool:
        quoted = self.dialect.quote_path(name)
        try:
            self._run(lambda: self._fetch(f"SELECT * FROM {quoted} LIMIT 0"), f"looking for table {name!r}")
        except CohortError:
            return False
        return True

    def _store_tables(self, tables: Mapping[str, object], record: str) -> None:
        with self._one_transaction():
            for name, table in tables.items():
                quoted = self.dialect.quote_path(name)
                self._execute(f"DROP TABLE IF EXISTS {quoted}", f"replacing table {name!r}")
                if isinstance(table, Select):
                    self._execute(f"CREATE TABLE {quoted} AS {self._rendered(table.sql)}", f"writing table {name!r}")
                elif isinstance(table, pa.Table):
                    self._ingest(name, table, "create")
                else:
                    raise TypeError(f"{self.vendor} writes Arrow tables and queries, not {type(table).__name__}")
            run = pa.table(
                {
                    "written_at": pa.array([_now()], pa.timestamp("us", tz="UTC")),
                    "tables": [", ".join(tables)],
                    "settings": [record],
                }
            )
            self._ingest(RUNS_TABLE, run, "create_append")

    def keep(self) -> None:
        self._created.clear()

    def close(self) -> None:
        try:
            for kind, name in reversed(self._created):
                self._drop(kind, name)
        finally:
            self._created.clear()
            self._cursor.close()
            if self._own_session:
                self.connection.close()

    # -- plumbing ------------------------------------------------------------------------------

    def _rendered(self, sql: str) -> str:
        """cohortsql's SQL (DuckDB's syntax with the dialect's choices) in the server's own syntax."""
        return transpile(sql, self.dialect.name) if self._translated else sql

    def _fetch(self, sql: str) -> pa.Table:
        self._cursor.execute(sql)
        return self._cursor.fetch_arrow_table()

    def _execute(self, sql: str, context: str) -> None:
        self._run(lambda: self._cursor.execute(sql), context)

    @contextmanager
    def _one_transaction(self) -> Iterator[None]:
        """Writes that land all or none: one transaction of their own, committed at the end (the
        engine's connection is otherwise in autocommit mode)."""
        adbc = self.connection.adbc_connection
        adbc.set_autocommit(False)
        try:
            yield
            self.connection.commit()
        except BaseException:
            self.connection.rollback()
            raise
        finally:
            adbc.set_autocommit(True)

    def _ingest(self, name: str, table: pa.Table, mode: str) -> None:
        parts = self.dialect.name_parts(name) or (name,)
        *schema, table_name = parts
        ingested = sendable(table, self.vendor, large=False)
        self._run(
            lambda: self._cursor.adbc_ingest(
                table_name, ingested, mode=mode, db_schema_name=schema[-1] if schema else None
            ),
            f"writing table {name!r}",
        )

    def _described(self, relation: str, context: str) -> pa.Schema:
        return self._run(lambda: self._fetch(f"SELECT * FROM {relation} LIMIT 0"), context).schema

    def _numeric_as_double(self, relation: str) -> Input:
        """The input as the library reads it: the server's NUMERIC columns (which its driver sends as
        text) read as DOUBLE PRECISION, in a view, and the schema with them as float64."""
        schema = self._described(relation, "reading the data's columns")
        numeric = [field.name for field in schema if _is_opaque(field.type)]
        if not numeric:
            return Input(relation, without_positions(schema), False, True)
        columns = ", ".join(
            f"CAST({self.dialect.quote(field.name)} AS DOUBLE) AS {self.dialect.quote(field.name)}"
            if field.name in numeric
            else self.dialect.quote(field.name)
            for field in schema
        )
        view = self.create(f"SELECT {columns} FROM {relation}", "input", materialize=False, context="reading the data")
        fields = [field.with_type(pa.float64()) if field.name in numeric else field for field in schema]
        return Input(view, without_positions(pa.schema(fields)), False, True)

    def _temporary_name(self, purpose: str) -> str:
        self._names += 1
        return f"cohortsql_{self._session}_{purpose}_{self._names}"

    def _drop(self, kind: str, name: str) -> None:
        self._execute(f"DROP {kind} IF EXISTS {self.dialect.quote(name)}", f"dropping {name!r}")

    def _failure_message(self, error: BaseException) -> str:
        return _message(error)


def _autocommitting(connection: Any) -> Any:
    """`connection` (a session of cohortsql's own) in autocommit mode."""
    connection.adbc_connection.set_autocommit(True)
    return connection


def _dialect(vendor: str) -> Dialect:
    """The dialect of the server an ADBC driver names."""
    for prefix, name in VENDOR_DIALECTS.items():
        if vendor.lower().startswith(prefix):
            return NATIVE_DIALECTS.get(name) or TRANSPILED_DIALECTS[name]
    known = ", ".join(VENDOR_DIALECTS)
    raise CohortError(f"cohortsql does not know the SQL of {vendor or 'this ADBC server'!r}: it renders for {known}")


def _message(error: BaseException) -> str:
    """The server's own first line, without the driver's prefixes, SQLSTATE and the query's text."""
    text = str(error).strip()
    first = text.splitlines()[0] if text else type(error).__name__
    for severity in ("ERROR:", "FATAL:"):  # the server's own message follows the driver's account of the step
        if severity in first:
            first = first.split(severity, 1)[1]
            break
    return _STATUS.sub("", first.strip()).split(". SQLSTATE:")[0].split(" SQLSTATE:")[0].strip()


def redacted(uri: str) -> str:
    """A URI with its password (and any query string, which may hold tokens) left out, for messages."""
    parts = urllib.parse.urlsplit(uri)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", ":***@")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _looks_like_a_path(text: str) -> bool:
    """A path or glob of this machine: a file's suffix, a directory separator or a glob character."""
    return any(mark in text for mark in "/\\*?") or Path(text).suffix.lower() in FILE_READERS


def _is_opaque(kind: pa.DataType) -> bool:
    """A type the driver sends as text it does not convert (PostgreSQL's NUMERIC)."""
    return isinstance(kind, pa.ExtensionType) and kind.extension_name == "arrow.opaque"


def _plain(table: pa.Table) -> pa.Table:
    """A result as the library reads it: the driver's opaque NUMERIC text as int64 when every value is
    a whole number that fits, else as float64 (the library's own numbers are sums and counts)."""
    if not any(_is_opaque(field.type) for field in table.schema):
        return table
    columns: list[pa.Array | pa.ChunkedArray] = []
    for field, column in zip(table.schema, table.columns):
        if _is_opaque(field.type):
            texts: list[str | None] = []
            for chunk in column.chunks:
                texts.extend(chunk.storage.to_pylist())  # type: ignore[attr-defined]  # an extension array
            columns.append(_numbers(texts))
        else:
            columns.append(column)
    return pa.table(columns, names=table.column_names)


def _numbers(texts: list[str | None]) -> pa.Array:
    values = [None if text is None else decimal.Decimal(text) for text in texts]
    whole = all(value is None or (value.is_finite() and value == value.to_integral_value()) for value in values)
    if whole and all(value is None or -(2**63) <= value < 2**63 for value in values):
        return pa.array([None if value is None else int(value) for value in values], pa.int64())
    return pa.array([None if value is None else float(value) for value in values], pa.float64())


def _now() -> Any:
    import datetime

    return datetime.datetime.now(datetime.UTC)


ENGINE = AdbcEngine
