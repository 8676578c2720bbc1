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

One snapshot per call: every query of a call runs in one transaction that reads one snapshot of the
data (PostgreSQL: ``REPEATABLE READ``; the dialect's `snapshot`), so a row another session commits
meanwhile changes no number (without it, the statistics and the histograms of one call could read two
states of a table and give values of neither). cohortsql's steps are TEMPORARY views and tables of
that transaction: the role needs the TEMPORARY privilege, outside a read-only transaction. The call's
transaction is rolled back when it ends (taking those relations with it), except for the tables it
writes, which are committed all or none. A server without such a transaction is refused.

On a connection in autocommit mode that transaction is in the caller's own session, so names resolve
as the caller's SQL resolves them (its TEMP tables, its search_path). A connection in a transaction
(the DB-API default) is left alone: an ADBC driver refuses every statement after a failed one until
the whole transaction is rolled back, so one failing or cancelled query would cost the caller its
uncommitted work. cohortsql then works in a session of its own on the same database (``adbc_clone``),
which reads what is committed; a table name (or one a data query reads) that resolves to another
relation there than in the caller's session (a TEMP table of the caller's, another search_path, a table
created and not committed) is refused rather than read from the wrong relation.
"""

from __future__ import annotations

import contextlib
import decimal
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

import adbc_driver_manager
import pyarrow as pa

from cohortsql._typing import ADBC_DRIVERS
from cohortsql.dialects import NATIVE_DIALECTS, TRANSPILED_DIALECTS, Dialect, TranspiledDialect
from cohortsql.dialects.transpile import transpile
from cohortsql.engines.base import Engine, EngineSettings
from cohortsql.engines.inputs import FILE_READERS, Input, as_arrow, sendable, with_positions, without_positions
from cohortsql.errors import CohortError
from cohortsql.redaction import scrubbed
from cohortsql.request.user_sql import is_query

VENDOR_DIALECTS = {"postgresql": "postgres", "snowflake": "snowflake", "bigquery": "bigquery", "duckdb": "duckdb"}
"""The server an ADBC driver names (``adbc_get_info()['vendor_name']``, from its start, in any case)
-> the dialect cohortsql renders for it. A Flight SQL server names its own engine."""

EXACT_DOUBLE_INTEGERS = 2**53
"""Every whole number up to this is a DOUBLE exactly; beyond it, NUMERIC values are refused, not rounded."""

_STATUS = re.compile(r"^(?:[A-Z_]+: )?(?:\[\w+\] )?")
"""What ADBC drivers put before a message of their own: a status code and the library (``[libpq]``)."""


class AdbcEngine(Engine):
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
        kept). Credentials come from the URI or the driver's environment; no message shows them: a
        password the URI's own syntax cannot hold (an unencoded ``/``, ``?``, ``#`` or ``@``) is refused
        before the driver reads it (libpq read such a password's first part as a port, and said so)."""
        parts = uri_parts(uri)
        module_name, extra = ADBC_DRIVERS[parts.scheme.lower()]
        try:
            module = __import__(f"{module_name}.dbapi", fromlist=["connect"])
        except ImportError:
            raise CohortError(f"{parts.scheme}:// needs {module_name}: pip install 'cohortsql[{extra}]'") from None
        secrets = tuple(secret for secret in (parts.password, urllib.parse.unquote(parts.password or "")) if secret)
        try:
            connection = module.connect(uri, autocommit=True)
        except adbc_driver_manager.Error as error:
            raise CohortError(f"cannot connect to {shown(uri)}: {scrubbed(_message(error), secrets)}") from None
        return connection

    def __init__(self, connection: Any) -> None:
        super().__init__()
        info = connection.adbc_get_info()
        self.server = str(info.get("vendor_name") or "")
        self.dialect = _dialect(self.server)
        self._translated = isinstance(self.dialect, TranspiledDialect)
        autocommit = connection.adbc_connection.get_option("adbc.connection.autocommit")
        self._own_session = str(autocommit).lower() != "true"
        """Whether the caller's connection is in a transaction, so that cohortsql works in a session of its own."""
        if self.dialect.snapshot is None:
            raise CohortError(
                f"cohortsql cannot read {self.server} in one snapshot (its transactions see other sessions' commits"
                " between statements), so one call's queries could read two states of the data: copy the table"
                " into one of its own (a snapshot, e.g. CREATE TABLE ... CLONE) and explain that, or run on a"
                " PostgreSQL or DuckDB connection"
            )
        self._caller = connection
        self.connection = connection.adbc_clone() if self._own_session else connection
        self._cursor = self.connection.cursor()
        self._in_transaction = False
        """Whether the call's transaction has begun: at its first query, so that an engine that runs
        none leaves the caller's connection as it was."""
        self._committed = False
        """Whether the call committed (tables written, relations kept), so that `close` drops what is left."""

    # -- the Engine methods --------------------------------------------------------------------

    def register_input(self, data: Any, *, positions: bool) -> Input:
        if isinstance(data, str):
            if positions:
                raise CohortError(
                    f"{self.server} keeps no row order that a second scan would repeat, so rows have no stable"
                    " position: pass id= naming a column that identifies rows (--id on the command line)"
                )
            if is_query(data):
                query = self.check_query(data, "the data query")
                for named in self.sources(query).tables:
                    self._check_resolved_alike(self.dialect.quote_path(named), named)
                view = self._temporary_name("input")
                self._created.append(("VIEW", view))
                self._execute(f"CREATE TEMPORARY VIEW {self.dialect.quote(view)} AS {query}", context="the data query")
                relation = self.dialect.quote(view)
            else:
                relation = self._table(data)
            return self._numeric_as_double(relation)
        table = as_arrow(data)
        if table is None:
            raise CohortError(
                f"cannot read data of type {type(data).__name__} on {self.server}: pass a table name, a SQL query,"
                " a pyarrow Table or a polars or pandas DataFrame"
            )
        relation = self.upload(with_positions(table) if positions else table, "input")
        if any(pa.types.is_decimal(field.type) for field in table.schema):  # NUMERIC on the server
            numeric = self._numeric_as_double(relation)
            return Input(numeric.relation, numeric.schema, positions, True)
        return Input(relation, table.schema, positions, True)

    def _table(self, name: str) -> str:
        """`name` quoted as a table or view of the server, which must exist; a path of this machine,
        or a TEMP table that a session of cohortsql's own cannot see, said in so many words."""
        parts = self.dialect.name_parts(name)
        try:
            if parts is None:
                raise CohortError(f"{name!r} is not a table name as {self.server} writes one")
            relation = ".".join(self.dialect.quote(part) for part in parts)
            self._described(relation, f"reading table {name!r}")
            self._check_resolved_alike(relation, name)
        except CohortError as error:
            if _looks_like_a_path(name):
                raise CohortError(
                    f"{name!r} looks like a file of this machine, but the {self.server} server reads its own"
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
        ingested = sendable(table, self.server, large=False)
        self._created.append(("TABLE", name))
        self._run(
            lambda: self._cursor.adbc_ingest(name, ingested, mode="create", temporary=True),
            f"sending data to {self.server}",
        )
        return self.dialect.quote(name)

    def fetch_arrow(self, select: str, *, context: str) -> pa.Table:
        sql = self._rendered(select)
        return _plain(self._run(lambda: self._fetch(sql), context))

    def interrupt(self) -> None:
        """Ask the server to cancel the running statement (``adbc_cancel``)."""
        try:
            self._cursor.adbc_cancel()
        except adbc_driver_manager.NotSupportedError:  # a driver without cancel: the statement runs on
            pass

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Write in the call's transaction, which then commits: every table or none (a failure leaves
        the transaction to `close`, which rolls it back)."""
        yield
        self._commit()

    def keep(self) -> None:
        """Commit the call's relations (TEMPORARY: the session's), so that they outlive its transaction."""
        self._commit()
        super().keep()

    def close(self) -> None:
        """Roll the call's transaction back (its TEMPORARY relations go with it), then drop what an
        earlier commit of this call kept, and give the caller's connection back as it was."""
        adbc = self.connection.adbc_connection
        try:
            if self._in_transaction:
                with contextlib.suppress(adbc_driver_manager.Error):
                    adbc.rollback()
                if self._committed:  # relations a commit kept outlive the rollback
                    super().close()
                    with contextlib.suppress(adbc_driver_manager.Error):
                        adbc.commit()
                adbc.set_autocommit(True)
                self._in_transaction = False
        finally:
            self._created.clear()
            self._cursor.close()
            if self._own_session:
                self.connection.close()

    def table_identity(self, name: str) -> frozenset[object] | None:
        """The relation `name` is in the call's session, by the server's own identity (PostgreSQL: its
        oid, so that ``scores``, ``SCORES``, ``public.scores``, ``"public"."scores"`` and a name found on
        the search_path are one table); where the dialect has no such query, the name as written."""
        quoted = self.dialect.quote_path(name)
        if self.dialect.identity_query is None:
            return super().table_identity(name)
        identity = self._identity(self._cursor, quoted, f"looking up table {name!r}")
        return None if identity is None else frozenset({identity})

    # -- plumbing ------------------------------------------------------------------------------

    def _rendered(self, sql: str) -> str:
        return transpile(sql, self.dialect.name) if self._translated else sql

    def _fetch(self, sql: str) -> pa.Table:
        self._cursor.execute(sql)
        return self._cursor.fetch_arrow_table()

    def _execute(self, sql: str, *, context: str) -> None:
        self._run(lambda: self._cursor.execute(sql), context)

    def _begin(self) -> None:
        """Start the call's transaction, reading one snapshot (the dialect's `snapshot` statements first)."""
        self._in_transaction = True
        self.connection.adbc_connection.set_autocommit(False)
        for statement in self.dialect.snapshot or ():
            self._run(lambda statement=statement: self._cursor.execute(statement), "starting a snapshot of the data")

    def _commit(self) -> None:
        """Commit the call's transaction (the DB-API's ``commit`` does nothing on a connection opened in
        autocommit mode: the driver's own is called) and start the next, as the first began."""
        self._run(self.connection.adbc_connection.commit, "committing the tables written")
        self._committed = True
        for statement in self.dialect.snapshot or ():
            self._run(lambda statement=statement: self._cursor.execute(statement), "starting a snapshot of the data")

    def _identity(self, cursor: Any, quoted: str, context: str) -> object | None:
        query = str(self.dialect.identity_query).format(name=self.dialect.string(quoted))
        (identity,) = self._run(lambda: _one_value(cursor, query), context)
        return identity

    def _check_resolved_alike(self, quoted: str, name: str) -> None:
        """In a session of cohortsql's own, `name` must be the relation the caller's session finds under
        it: a TEMP table of the caller's, another search_path or an uncommitted table would otherwise be
        replaced, silently, by what the name means elsewhere (a read-only query in the caller's
        transaction, which cannot fail for a quoted name)."""
        if not self._own_session or self.dialect.identity_query is None:
            return
        with self._caller.cursor() as cursor:
            theirs = self._identity(cursor, quoted, f"looking up {name!r} in the connection's session")
        if theirs != self._identity(self._cursor, quoted, f"looking up {name!r}"):
            raise CohortError(
                f"{name!r} is another relation in the connection's own session than in a new one (a TEMP table of"
                " that session, its search_path, or a table not yet committed), and cohortsql reads through a"
                " session of its own because the connection is in a transaction: commit, or pass a connection in"
                " autocommit mode, or qualify the name with its schema"
            )

    def _described(self, relation: str, context: str) -> pa.Schema:
        return self._run(lambda: self._fetch(f"SELECT * FROM {relation} LIMIT 0"), context).schema

    def _numeric_as_double(self, relation: str) -> Input:
        """The input as the library reads it: the server's NUMERIC columns (which its driver sends as
        text) read as DOUBLE PRECISION, in a view, and the schema with them as float64. A value beyond
        2^53, where a DOUBLE no longer holds every whole number, stops the first query that reads its
        column, naming it (integers are compared exactly, or not at all)."""
        schema = self._described(relation, "reading the data's columns")
        numeric = [field.name for field in schema if _is_opaque(field.type)]
        if not numeric:
            return Input(relation, without_positions(schema), False, True)

        def read(name: str) -> str:
            column = self.dialect.quote(name)
            if name not in numeric:
                return column
            beyond = self.dialect.failure(
                f"abs({column}) > {EXACT_DOUBLE_INTEGERS}",
                f"column {name!r} holds NUMERIC values beyond 2^53, which a DOUBLE cannot hold exactly: cast them"
                " in a data query, or rescale the column",
            )
            return f"coalesce({beyond}, CAST({column} AS DOUBLE)) AS {column}"

        columns = ", ".join(read(field.name) for field in schema)
        view = self.create(f"SELECT {columns} FROM {relation}", "input", materialize=False, context="reading the data")
        fields = [field.with_type(pa.float64()) if field.name in numeric else field for field in schema]
        return Input(view, without_positions(pa.schema(fields)), False, True)

    def _run(self, action: Any, context: str) -> Any:
        """As the base class runs a query; a server that refuses cohortsql's TEMPORARY relations is told
        what they need."""
        if not self._in_transaction:
            self._begin()
        try:
            return super()._run(action, context)
        except CohortError as error:
            text = str(error)
            if "temporary" in text.lower() or "read-only transaction" in text.lower():
                raise CohortError(
                    f"{text} (cohortsql keeps a call's steps as TEMPORARY views and tables: the role needs the"
                    " TEMPORARY privilege on the database, in a transaction that is not read-only)"
                ) from None
            raise

    def _failure_message(self, error: BaseException) -> str:
        return _message(error)


def _one_value(cursor: Any, query: str) -> tuple[Any, ...]:
    cursor.execute(query)
    rows = cursor.fetchall()
    return tuple(rows[0]) if rows else (None,)


def _dialect(vendor: str) -> Dialect:
    """The dialect of the server an ADBC driver names."""
    for prefix, name in VENDOR_DIALECTS.items():
        if vendor.lower().startswith(prefix):
            return NATIVE_DIALECTS.get(name) or TRANSPILED_DIALECTS[name]
    known = ", ".join(VENDOR_DIALECTS)
    raise CohortError(f"cohortsql does not know the SQL of {vendor or 'this ADBC server'!r}: it renders for {known}")


def _message(error: BaseException) -> str:
    """The server's own words, without the driver's prefixes, SQLSTATE and the query's text: the
    driver puts the whole query (many lines) before them, so they are looked for after it."""
    text = str(error).strip()
    for severity in ("ERROR:", "FATAL:"):  # the server's own message follows the driver's account of the step
        if severity in text:
            reason = text.split(severity, 1)[1].strip().splitlines()[0]
            return reason.split(". SQLSTATE:")[0].split(" SQLSTATE:")[0].strip().rstrip(".")
    first = text.splitlines()[0] if text else type(error).__name__
    first = re.sub(r"Failed to (?:execute|prepare) query '.*", "the server refused the statement", first)
    return _STATUS.sub("", first.strip()).split(". SQLSTATE:")[0].split(" SQLSTATE:")[0].strip()


def uri_parts(uri: str) -> urllib.parse.SplitResult:
    """`uri` split as its driver will read it; a `CohortError` that shows none of it when it is not a
    URI, or when its user or password holds a character the URI syntax reserves (the driver would read a
    different password, and perhaps name part of it as a host or a port)."""
    try:
        parts = urllib.parse.urlsplit(uri)
    except ValueError:  # its words would show the URI
        raise CohortError("--engine is not a URI that can be read: check the brackets around its host") from None
    if "@" in parts.path + parts.query + parts.fragment or "@" in parts.netloc.rpartition("@")[0]:
        raise CohortError(
            "the --engine URI's user or password holds a reserved character ('/', '?', '#' or '@'): percent-encode"
            " it (e.g. '/' as %2F, '@' as %40), or leave the password out of the URI and set it in the driver's"
            " environment (PGPASSWORD for PostgreSQL)"
        )
    try:
        parts.port  # noqa: B018 (reading it checks it)
    except ValueError:
        raise CohortError("--engine is not a URI that can be read: its port is not a number") from None
    return parts


def shown(uri: str) -> str:
    """A URI for messages: without its password and its query string (which may hold tokens)."""
    parts = urllib.parse.urlsplit(uri)
    host = parts.netloc.rpartition("@")[2]
    user = "" if parts.username is None else parts.username + (":***" if parts.password is not None else "") + "@"
    return urllib.parse.urlunsplit((parts.scheme, user + host, parts.path, "", ""))


def _looks_like_a_path(text: str) -> bool:
    """A path or glob of this machine: a file's suffix, a directory separator or a glob character."""
    return any(mark in text for mark in "/\\*?") or Path(text).suffix.lower() in FILE_READERS


def _is_opaque(kind: pa.DataType) -> bool:
    """A type the driver sends as text it does not convert (PostgreSQL's NUMERIC): pyarrow's
    ``OpaqueType``, a `pa.BaseExtensionType` (from pyarrow 26 no longer a `pa.ExtensionType`)."""
    return isinstance(kind, pa.BaseExtensionType) and kind.extension_name == "arrow.opaque"


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


ENGINE = AdbcEngine
