"""What the core needs from a SQL engine: the `Engine` base class and its settings (its inputs:
`cohortsql.engines.inputs`).

The core (prepare, pairwise, grouping sets, api) talks only to this class, never to DuckDB or Spark
directly, and never asks which engine it holds. Templates in ``sql/`` are SELECTs; the engine wraps
them in its own DDL (DuckDB: a temporary table or view; Spark: a temporary view, cached when a result
is reused). Only aggregates bounded per batch of targets come back to Python.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Self, final

import numpy as np
import pyarrow as pa

from cohortsql._typing import Row
from cohortsql.dialects import Dialect
from cohortsql.engines import read_by_sqlglot
from cohortsql.engines.inputs import Input
from cohortsql.engines.running import Result, interruptible
from cohortsql.engines.tables import RUNS_TABLE, Select, check_writable, resolved_name
from cohortsql.errors import CohortError
from cohortsql.numeric.pair_tests import PairTest
from cohortsql.request.user_sql import is_query, query_text

FEW_ROWS = 10_000
"""The most rows a result read by `Engine.fetch_few_rows` has."""


@dataclass(frozen=True)
class EngineSettings:
    """How to open an engine; each engine reads the settings that apply to it."""

    memory_limit: str | None = None
    """DuckDB: its memory limit while computing, e.g. ``"1GB"``; beyond it DuckDB spills to disk."""
    temp_directory: str | None = None
    """DuckDB: where it spills."""
    database: str | None = None
    """DuckDB: a database file to open instead of an in-memory database."""
    read_only: bool = False
    spark_master: str | None = None
    """Spark: the master URL of a session cohortsql starts (default ``local[*]``; ``SPARK_REMOTE`` means Spark Connect)."""


class Sources(NamedTuple):
    """What a query reads, as the engine's own parser or planner finds it."""

    files: tuple[str, ...]
    """Paths, globs or URLs of files, as the query names them (relative to the working directory)."""
    tables: tuple[str, ...]
    """Names of tables and views (``schema.table`` when qualified)."""


ValuesOfHistograms = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int], tuple[np.ndarray, np.ndarray]]
"""(target row, mask, weight, sum of y, targets, d) -> (shapley, shapley_squared), each (targets, d):
the numpy stage an engine runs where a table of histograms is (`Engine.finish_histograms`)."""

QueryOfArguments = Callable[..., str]
"""What an engine's table function ``cohort_shapley`` calls to prepare its query: (a cursor, data,
prediction, similarity, id, targets, weight, the table the SQL reads or None for a file, and the
keywords ``dialect`` and ``function``: the engine's dialect's name and the name of its function that
finishes histograms) -> the SQL."""


class PairInputs(NamedTuple):
    """What a mask histogram built outside SQL reads (`Engine.pair_histogram`): the query of the
    `subjects` (the feature `columns`, then each row's measure per sum), the kinds' numeric `tests`,
    the `sums`' names, and how many target-subject `pairs` the run's batches cover."""

    subjects: str
    tests: Sequence[PairTest]
    columns: Sequence[str]
    sums: Sequence[str]
    pairs: int


class Engine(ABC):
    """A SQL engine that runs cohortsql's queries: one subclass per backend.

    The core (prepare, pairwise, grouping sets, api) talks only to this class, never to DuckDB or
    Spark directly, and never asks which engine it holds. A backend implements six abstract members
    (`open`, `register_input`, `upload`, `fetch_arrow`, `_execute`, `interrupt`) and sets `dialect` and
    `failures` (its own error types). Everything else is a template this class holds, written for an
    engine whose SQL names its temporary relations (DuckDB, a warehouse through ADBC): temporary names,
    creating, dropping, keeping and closing them (`create`, `drop`, `keep`, `close`), queries that Ctrl-C
    stops and whose failures read as one `CohortError` line starting with what was being done (`_run`),
    the caller's SQL read by sqlglot (`check_query`, `sources`), and the writing of result tables, all or
    none, checked first (`write_tables`). A backend overrides what its engine does otherwise, and the
    hooks `_rendered`, `_writing`, `_write_table`, `_readable`, `_before_query`, `_after_query`,
    `_querying` and `_failure_message`."""

    name: ClassVar[str]
    """Its name in the registry of engines (`cohortsql._typing.ENGINES`)."""
    dialect: Dialect
    failures: tuple[type[BaseException], ...] = ()
    """The backend's own error types, reported as one-line `CohortError`s."""

    # -- its policy: what the core and the command line ask of it, never its name --------------

    reads_settings: ClassVar[frozenset[str]] = frozenset()
    """The fields of `EngineSettings` it reads; another given to it belongs to another engine and is refused."""
    runs_python: ClassVar[bool] = True
    """Whether cohortsql's numpy code can run beside the data (DuckDB in this process, Spark on its
    executors): `finish_histograms` and `register_functions` need it. An engine without it finishes
    histograms in numpy here (only histograms travel) and computes `cohortsql.shapley_table` with the
    values query, in its own SQL."""
    writes_results_in_place: ClassVar[bool] = False
    """Whether the command line's ``--into-table`` writes the values where they are computed
    (`cohortsql.shapley_table`), none of them passing through this process: engines for tables larger
    than it."""
    counts_distinct_beside_aggregates: ClassVar[bool] = True
    """Whether a ``count(DISTINCT id)`` may sit among the statistics query's other aggregates (else
    repeated ids are counted by a grouped query of their own, `cohortsql.queries.statistics.duplicate_ids`)."""
    streams_rows: ClassVar[bool] = False
    """Whether a query's rows reach this process at memory speed (DuckDB, in it), so that numpy may do
    work over every subject there (`arrow_batches`) rather than the engine's SQL."""
    tables_kept_by: ClassVar[str | None] = None
    """The setting without which tables written on an engine cohortsql opens itself are lost when it
    closes (DuckDB's ``database``: without it, the database is in memory)."""

    def __init__(self) -> None:
        self.server = self.name
        """How messages name the server the engine runs on (a warehouse names its own)."""
        self._session = uuid.uuid4().hex[:8]
        self._names = 0
        self._created: list[tuple[str, str]] = []
        """The relations the engine created, as (kind, name), in order: dropped when asked or at `close`."""

    # -- the abstract core ------------------------------------------------------------------------

    @classmethod
    @abstractmethod
    def open(cls, connection: Any, settings: EngineSettings, data: Any) -> Self:
        """An engine on `connection` (the caller's, of this engine's kind), else on one it opens
        under `settings`; `data` is the input, for backends whose data objects belong to a session."""

    @abstractmethod
    def register_input(self, data: Any, *, positions: bool) -> Input:
        """Make `data` readable as SQL. With `positions`, give it `POSITION_COLUMN` holding row
        positions that do not depend on how the engine scans it, or raise `CohortError` saying to pass an id."""

    @abstractmethod
    def upload(self, table: pa.Table, purpose: str) -> str:
        """Make a small Arrow table (targets, ids) readable as SQL; returns its quoted name."""

    @abstractmethod
    def fetch_arrow(self, select: str, *, context: str) -> pa.Table:
        """Run a query and return its result; failures raise `CohortError` starting with `context`."""

    def fetch_few_rows(self, select: str, *, context: str) -> pa.Table:
        """`fetch_arrow` of a query whose result has at most `FEW_ROWS` rows (a statistics row, listed
        targets, a sample): by default the same call; an engine that reads such results faster another
        way (at the cost of a copy of the rows) overrides it."""
        return self.fetch_arrow(select, context=context)

    def fetch_one_row(self, select: str, *, context: str) -> pa.Table:
        """`fetch_few_rows` of a query whose result has at most one row (the statistics, a pilot value):
        by default the same call; Spark collects a row of numbers without its Arrow collection
        (`cohortsql.engines.spark_rows`)."""
        return self.fetch_few_rows(select, context=context)

    @abstractmethod
    def _execute(self, sql: str, *, context: str) -> None:
        """Run a statement of cohortsql's own SQL (through `_run`); failures raise `CohortError` starting with `context`."""

    @abstractmethod
    def interrupt(self) -> None:
        """Stop the running query (from another thread or a signal handler)."""

    # -- templates: the bookkeeping of named relations ---------------------------------------------

    @final
    def _temporary_name(self, purpose: str) -> str:
        """A name for a relation of this engine's, unique to it (the engine's session and a count)."""
        self._names += 1
        return f"cohortsql_{self._session}_{purpose}_{self._names}"

    def create(self, select: str, purpose: str, *, materialize: bool, context: str, snapshot: bool = False) -> str:
        """Name the result of `select` (stored when `materialize`, for results read many times); returns its
        quoted name. A `snapshot` is stored now and read as it is until the engine's session ends, even
        after `keep` (a lazy result reads it; the data it came from may change meanwhile)."""
        name = self._temporary_name(purpose)
        kind = "TABLE" if materialize or snapshot else "VIEW"
        self._created.append((kind, name))
        self._execute(
            f"CREATE TEMPORARY {kind} {self.dialect.quote(name)} AS {self._rendered(select)}", context=context
        )
        return self.dialect.quote(name)

    @contextmanager
    def temporary(self, relation: str) -> Iterator[str]:
        """`relation` (one this engine created) for a with-block, dropped when it ends; when the
        block fails, a failed drop (the server gone, a memory limit) never hides the block's failure."""
        try:
            yield relation
        except BaseException:
            with contextlib.suppress(Exception):
                self.drop(relation)
            raise
        self.drop(relation)

    @final
    def drop(self, relation: str) -> None:
        """Drop `relation` (quoted, as the engine returned it) if the engine created or uploaded it."""
        for index, (kind, name) in enumerate(self._created):
            if self.dialect.quote(name) == relation:
                self._drop(kind, name)
                del self._created[index]
                return

    def _drop(self, kind: str, name: str) -> None:
        """Drop one relation the engine created (`kind` as `_created` records it)."""
        self._execute(f"DROP {kind} IF EXISTS {self.dialect.quote(name)}", context=f"dropping {name!r}")

    def keep(self) -> None:
        """Leave the relations created so far in place when the engine closes (a returned table reads
        them), releasing only what holds memory (cached copies)."""
        self._created.clear()

    def close(self) -> None:
        """Drop what the engine created (a drop that fails, the server gone, does not stop the others),
        restore settings, release what it opened."""
        for kind, name in reversed(self._created):
            with contextlib.suppress(CohortError):
                self._drop(kind, name)
        self._created.clear()

    # -- templates: what the engine reads ----------------------------------------------------------

    def check_query(self, text: str, role: str) -> str:
        """`text` without a trailing ';' when the engine's own parser (or the closest one) reads it as
        exactly one query that only reads data; else a `CohortError` that starts with `role`. By
        default sqlglot reads it in the engine's dialect (`cohortsql.engines.read_by_sqlglot`)."""
        return read_by_sqlglot.checked_query(query_text(text, role), role, self.dialect.name, self.server)

    def sources(self, query: str) -> Sources:
        """The files and tables `query` reads (so that no output is written over one of them). By
        default the tables a query names (sqlglot's reading of the engine's dialect), or the table a name is."""
        if not is_query(query):
            return Sources((), (query,))
        return Sources((), read_by_sqlglot.tables_named(query, self.dialect.name))

    @property
    def memory_budget(self) -> int | None:
        """Bytes the engine may use when the caller limited it, else None."""
        return None

    def _rendered(self, sql: str) -> str:
        """cohortsql's SQL (DuckDB's syntax with the dialect's choices) in the engine's own syntax."""
        return sql

    # -- optional capabilities -----------------------------------------------------------------------

    @classmethod
    def connect(cls, uri: str) -> Any:
        """A connection of this engine's kind to the database a URI names (``--engine URI`` on the
        command line); the caller closes it. Engines reached by name have none."""
        raise CohortError(f"the {cls.name} engine is chosen by name, not by a URI")

    def lazy(self, select: str) -> Any:
        """`select` as a table of the engine that runs when it is read or written (a DuckDB relation, a
        Spark DataFrame); an engine that keeps no such object returns the `Select` itself, to be
        fetched or written. It reads the engine's relations, so `keep` them."""
        return Select(select)

    def pair_histogram(self, inputs: PairInputs, targets: pa.Table, *, context: str) -> dict[str, np.ndarray] | None:
        """The mask histogram (target, mask0 and the sums) of the `targets` batch (numbered by
        ``__cohort_batch``) against the `inputs`' subjects, built outside SQL where the engine does that
        better than its own aggregate (Spark: on its executors, `cohortsql.engines.spark_histogram`) by
        the kinds' numeric tests. None, by default: the caller runs the SQL histogram."""
        return None

    def arrow_batches(self, select: str, *, rows: int, context: str) -> Iterator[pa.RecordBatch]:
        """A query's result in record batches of about `rows` rows, read as they are used (an engine
        that `streams_rows` keeps only one batch in memory); by default the whole result, then split."""
        yield from self.fetch_arrow(select, context=context).to_batches(max_chunksize=rows)

    def count_duplicate_ids(self, ids: str, *, rows: int, context: str) -> Row | None:
        """``duplicate_ids`` (how many rows repeat another row's id) and, when `ids` hashes the rows, an
        estimate of the distinct row hashes as ``distinct_rows``, of query `ids` (each row's id, then
        perhaps its hash: `cohortsql.queries.statistics.ids_and_row_hashes`) over `rows` rows, counted outside
        SQL where the engine does that better than its own grouped aggregate (Spark: on its executors,
        `cohortsql.engines.spark_ids`). None, by default: the caller runs the grouped query
        (`cohortsql.queries.statistics.duplicate_ids`)."""
        return None

    def finish_histograms(
        self, histogram: str, features: Sequence[str], targets: int, per_call: int, values: ValuesOfHistograms
    ) -> Any:
        """The engine's own table (a DuckDB relation, a Spark DataFrame) of ``id, feature, shapley,
        shapley_squared`` for each of the `targets` targets of relation `histogram` (columns target,
        mask0, w0, s0_0), each target's histogram finished by `values` where the engine runs it
        (DuckDB: a scalar function of the query; Spark: grouped Arrow functions on the executors, about
        `per_call` targets a call), never on the driver. Lazy: it reads the engine's relations, so
        `keep` them. Only engines that `runs_python` have it."""
        raise CohortError(f"the {self.name} engine runs no Python beside its data to finish histograms with")

    def register_functions(self, values: ValuesOfHistograms, query: QueryOfArguments) -> None:
        """Add cohortsql's SQL functions to the engine's connection or session (`cohortsql.register`):
        the finishing of histograms by `values`, and where the engine allows, a table function whose
        query `query` prepares. An engine that runs no Python beside its data has none."""
        raise CohortError(
            f"the {self.name} engine runs no Python beside its data, so it has no cohortsql SQL functions:"
            " run the values query cohortsql.sql_query(..., variant='values') prints instead"
        )

    def check_workers(self) -> None:  # noqa: B027 (an optional hook: most backends run Python where the caller is)
        """Refuse, in one line, workers that cannot run cohortsql's Python beside the data (Spark's executors)."""

    def expect_aggregates(self, sums: int) -> None:  # noqa: B027 (an optional hook)
        """The next queries' GROUP BY will carry `sums` aggregates per group: an engine that sizes
        its group tables before it sees the data (DuckDB's perfect hash) bounds them by it."""

    # -- templates: running a query ------------------------------------------------------------------

    def _before_query(self) -> None:  # noqa: B027 (an optional hook: most backends need nothing here)
        """Run in the worker thread before each query (Spark: join this engine's job group)."""

    def _after_query(self) -> None:  # noqa: B027 (an optional hook)
        """Run in the worker thread when each query ends, however it ends."""

    def _querying(self) -> AbstractContextManager[object]:
        """Held by the waiting thread while a query is submitted and awaited."""
        return nullcontext()

    def _failure_message(self, error: BaseException) -> str:
        """The first line of what went wrong."""
        text = str(error).strip()
        return text.splitlines()[0] if text else type(error).__name__

    def _run(self, action: Callable[[], Result], context: str) -> Result:
        """Run a query: interruptible by Ctrl-C (`interrupt`), its failures one `CohortError` line."""

        def query() -> Result:
            self._before_query()
            try:
                return action()
            finally:
                self._after_query()

        with self._querying():
            try:
                return interruptible(query, self.interrupt)
            except self.failures as error:
                raise CohortError(f"{context}: {self._failure_message(error)}") from None

    # -- templates: result tables --------------------------------------------------------------------

    @final
    def write_tables(
        self,
        tables: Mapping[str, object],
        *,
        replace: bool,
        protected: tuple[str, ...] = (),
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        """Store result tables by name, all or none; refuse existing names unless `replace`, and `protected`
        always; record the run's `settings` (JSON) as a row of `RUNS_TABLE`. Each table is an Arrow table,
        a `Select` of the engine's own SQL, or the engine's own lazy table (`lazy`), which it writes."""
        self.check_writable(list(tables), replace=replace, protected=protected)
        record = json.dumps(dict(settings or {}))
        run = pa.table(
            {
                "written_at": pa.array([datetime.datetime.now(datetime.UTC)], pa.timestamp("us", tz="UTC")),
                "tables": [", ".join(tables)],
                "settings": [record],
            }
        )
        with self._writing():
            for name, table in tables.items():
                self._write_table(name, table, record=record, append=False)
            self._write_table(RUNS_TABLE, run, record=record, append=True)

    def _writing(self) -> AbstractContextManager[object]:
        """Held while result tables are written: the transaction that makes them all or none."""
        return nullcontext()

    def _write_table(self, name: str, table: object, *, record: str, append: bool) -> None:
        """Write one table `name` (its rows added to an existing one when `append`): by default in the
        engine's SQL, an Arrow table first made readable (`_readable`). `record` is the run's settings."""
        quoted = self.dialect.quote_path(name)
        if isinstance(table, pa.Table):
            source = self._readable(table)
            select = f"SELECT * FROM {source}"
        elif isinstance(table, Select):
            source, select = None, self._rendered(table.sql)
        else:
            raise TypeError(f"{self.server} writes Arrow tables and queries, not {type(table).__name__}")
        if append:
            self._execute(f"CREATE TABLE IF NOT EXISTS {quoted} AS {select} LIMIT 0", context=f"writing table {name!r}")
            self._execute(f"INSERT INTO {quoted} {select}", context=f"writing table {name!r}")
        else:
            self._execute(f"DROP TABLE IF EXISTS {quoted}", context=f"replacing table {name!r}")
            self._execute(f"CREATE TABLE {quoted} AS {select}", context=f"writing table {name!r}")
        if source is not None:
            self.drop(source)

    def _readable(self, table: pa.Table) -> str:
        """An Arrow table readable by the engine's SQL while a result table is written from it."""
        return self.upload(table, "output")

    def check_writable(self, names: list[str], *, replace: bool, protected: tuple[str, ...] = ()) -> None:
        """Refuse to write tables `names` where one exists (unless `replace`) or where one is a table that
        `protected` (the run's inputs) reads, each compared by the relation it is to the engine
        (`table_identity`, `tables_read`), however spelt."""
        identities = {name: self.table_identity(name) for name in names}
        inputs = set().union(*(self.tables_read(name) for name in protected))
        for name, identity in identities.items():
            if identity is not None and not identity.isdisjoint(inputs):
                raise CohortError(f"will not write over table {name!r}: it is this run's input")
        existing = [name for name, identity in identities.items() if identity is not None]
        check_writable(names, existing, replace=replace, protected=protected)

    def table_identity(self, name: str) -> frozenset[object] | None:
        """The relations that table name `name` is to the engine, as the engine itself resolves the name
        (None when it names none): by default the name as DuckDB and Spark resolve one (any case, the
        default schema implied); an engine overrides it with its own identity of the object (DuckDB: the
        tables its plan scans; PostgreSQL: its oid; Spark: its catalog's table)."""
        return frozenset({resolved_name(name)}) if self._has_table(name) else None

    def tables_read(self, name: str) -> frozenset[object]:
        """The relations reading `name` reads (an input's: nothing may be written over them); by default
        its own identity (an engine that resolves views to their tables overrides it)."""
        return self.table_identity(name) or frozenset()

    def _has_table(self, name: str) -> bool:
        """Whether the database or catalog results are written to holds a table of this name: by
        default, whether selecting from it succeeds."""
        quoted = self.dialect.quote_path(name)
        try:
            self.fetch_arrow(f"SELECT * FROM {quoted} LIMIT 0", context=f"looking for table {name!r}")
        except CohortError:
            return False
        return True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def fetch_numpy(engine: Engine, select: str, *, context: str) -> dict[str, np.ndarray]:
    """A query's columns as numpy arrays."""
    table = engine.fetch_arrow(select, context=context)
    return {name: table.column(name).to_numpy() for name in table.column_names}


def fetch_record(engine: Engine, select: str, *, context: str) -> Row:
    """The single row of a query as a column -> value mapping."""
    rows = engine.fetch_one_row(select, context=context).to_pylist()
    if len(rows) != 1:
        raise CohortError(f"{context}: expected one row, got {len(rows)}")
    return rows[0]
