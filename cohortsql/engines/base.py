"""What the core needs from a SQL engine: the `Engine` base class and its settings (its inputs:
`cohortsql.engines.inputs`).

The core (prepare, pairwise, grouping sets, api) talks only to this class, never to DuckDB or Spark
directly, and never asks which engine it holds. Templates in ``sql/`` are SELECTs; the engine wraps
them in its own DDL (DuckDB: a temporary table or view; Spark: a temporary view, cached when a result
is reused). Only aggregates bounded per batch of targets come back to Python.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Self, TypeVar

import numpy as np
import pyarrow as pa

from cohortsql._typing import Row
from cohortsql.dialects import Dialect
from cohortsql.engines.inputs import Input
from cohortsql.errors import CohortError
from cohortsql.numeric.pair_tests import PairTest

RUNS_TABLE = "cohortsql_runs"
"""Where `Engine.write_tables` records each run that wrote tables: when, which tables, its settings (JSON)."""


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


Result = TypeVar("Result")


class Select(NamedTuple):
    """A query of the engine, as a table to write (`Engine.write_tables`): the engine runs it into the
    table, and none of its rows pass through this process."""

    sql: str


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

INTERRUPT_GRACE_SECONDS = 5.0
"""After Ctrl-C, how long to wait for the interrupted query to stop before giving up on it."""


_WORKERS = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="cohortsql-query")
"""Threads that run queries, kept between queries: starting one per query cost ~1 ms each."""


class NamedRelations:
    """The bookkeeping of an engine whose SQL creates its temporary relations by name (DuckDB, a
    warehouse): each is (kind, name) in `_created`, in order, and dropped with `_drop` when asked
    (`drop`) or when the engine closes."""

    _created: list[tuple[str, str]]
    dialect: Dialect

    def _drop(self, kind: str, name: str) -> None:
        raise NotImplementedError

    def drop(self, relation: str) -> None:
        """Drop `relation` (quoted, as the engine returned it) if the engine created it."""
        for index, (kind, name) in enumerate(self._created):
            if self.dialect.quote(name) == relation:
                self._drop(kind, name)
                del self._created[index]
                return


def interruptible(action: Callable[[], Result], interrupt: Callable[[], None]) -> Result:
    """Run `action` (a query) in a worker thread while this thread waits, so that Ctrl-C is noticed at
    once: it calls `interrupt` (the engine stops the query) and re-raises KeyboardInterrupt.

    A query running in C++ or the JVM does not return to Python until it finishes, so a signal that
    arrives meanwhile would wait for it (34 s in one measured run); the waiting thread stays responsive."""
    outcome: list[Any] = []
    finished = threading.Event()  # not Thread.join: an interrupted join may return at once the next time

    def work() -> None:
        try:
            outcome.append((True, action()))
        except BaseException as error:  # handed to the waiting thread
            outcome.append((False, error))
        finally:
            finished.set()

    _WORKERS.submit(work)
    try:
        while not finished.wait(0.05):
            pass
    except KeyboardInterrupt:
        interrupt()
        finished.wait(INTERRUPT_GRACE_SECONDS)
        raise
    succeeded, value = outcome[0]
    if not succeeded:
        raise value
    return value


class Engine(ABC):
    """A SQL engine that runs cohortsql's queries: one subclass per backend.

    The core (prepare, pairwise, grouping sets, api) talks only to this class, never to DuckDB or
    Spark directly, and never asks which engine it holds. It holds the bookkeeping every backend
    shares: queries run so that Ctrl-C stops them (`interruptible`) and their failures read as one
    `CohortError` line starting with what was being done; result tables are checked before any is
    written. A backend sets `dialect` and `failures` (its own error types), implements the abstract
    methods, and may override the hooks `_before_query`, `_after_query`, `_querying` and
    `_failure_message`."""

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

    @classmethod
    @abstractmethod
    def open(cls, connection: Any, settings: EngineSettings, data: Any) -> Self:
        """An engine on `connection` (the caller's, of this engine's kind), else on one it opens
        under `settings`; `data` is the input, for backends whose data objects belong to a session."""

    @classmethod
    def connect(cls, uri: str) -> Any:
        """A connection of this engine's kind to the database a URI names (``--engine URI`` on the
        command line); the caller closes it. Engines reached by name have none."""
        raise CohortError(f"the {cls.name} engine is chosen by name, not by a URI")

    @abstractmethod
    def check_query(self, text: str, role: str) -> str:
        """`text` without a trailing ';' when the engine's own parser (or the closest one) reads it as
        exactly one query that only reads data; else a `CohortError` that starts with `role`."""

    @abstractmethod
    def register_input(self, data: Any, *, positions: bool) -> Input:
        """Make `data` readable as SQL. With `positions`, give it `POSITION_COLUMN` holding row
        positions that do not depend on how the engine scans it, or raise `CohortError` saying to pass an id."""

    @abstractmethod
    def upload(self, table: pa.Table, purpose: str) -> str:
        """Make a small Arrow table (targets, ids) readable as SQL; returns its quoted name."""

    @abstractmethod
    def create(self, select: str, purpose: str, *, materialize: bool, context: str, snapshot: bool = False) -> str:
        """Name the result of `select` (stored when `materialize`, for results read many times); returns its
        quoted name. A `snapshot` is stored now and read as it is until the engine's session ends, even
        after `keep` (a lazy result reads it; the data it came from may change meanwhile)."""

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

    @abstractmethod
    def drop(self, relation: str) -> None:
        """Drop a relation this engine created or uploaded."""

    @abstractmethod
    def sources(self, query: str) -> Sources:
        """The files and tables `query` reads (so that no output is written over one of them)."""

    @abstractmethod
    def fetch_arrow(self, select: str, *, context: str) -> pa.Table:
        """Run a query and return its result; failures raise `CohortError` starting with `context`."""

    @property
    @abstractmethod
    def memory_budget(self) -> int | None:
        """Bytes the engine may use when the caller limited it, else None."""

    @abstractmethod
    def interrupt(self) -> None:
        """Stop the running query (from another thread or a signal handler)."""

    @abstractmethod
    def _has_table(self, name: str) -> bool:
        """Whether the database or catalog results are written to holds a table of this name."""

    @abstractmethod
    def _store_tables(self, tables: Mapping[str, object], record: str) -> None:
        """Write the checked tables (Arrow tables, `Select`s of the engine's own SQL, and the engine's
        own lazy tables: a DuckDB relation, a Spark DataFrame, which its executors write) and record
        the run (its settings as JSON) in `RUNS_TABLE`."""

    @abstractmethod
    def close(self) -> None:
        """Drop what the engine created, restore settings, release what it opened."""

    def lazy(self, select: str) -> Any:
        """`select` as a table of the engine that runs when it is read or written (a DuckDB relation, a
        Spark DataFrame); an engine that keeps no such object returns the `Select` itself, to be
        fetched or written. It reads the engine's relations, so `keep` them."""
        return Select(select)

    def pair_histogram(
        self,
        subjects: str,
        targets: pa.Table,
        tests: Sequence[PairTest],
        columns: Sequence[str],
        sums: Sequence[str],
        *,
        pairs: int,
        context: str,
    ) -> dict[str, np.ndarray] | None:
        """The mask histogram (target, mask0 and the `sums`) of the `targets` batch (numbered by
        ``__cohort_batch``) against the rows of query `subjects` (the feature `columns`, then each
        row's measure per sum; the run's batches cover `pairs` target-subject pairs), built outside SQL where the
        engine does that better than its own aggregate (Spark: on its executors,
        `cohortsql.engines.spark_histogram`) by the kinds' numeric `tests`. None, by default: the
        caller runs the SQL histogram."""
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

    @abstractmethod
    def keep(self) -> None:
        """Leave the relations created so far in place when the engine closes (a returned table reads
        them), releasing only what holds memory (cached copies)."""

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

    def write_tables(
        self,
        tables: Mapping[str, object],
        *,
        replace: bool,
        protected: tuple[str, ...] = (),
        settings: Mapping[str, str] | None = None,
    ) -> None:
        """Store result tables by name, all or none; refuse existing names unless `replace`, and `protected`
        always; record the run's `settings` as a row of `RUNS_TABLE`."""
        self.check_writable(list(tables), replace=replace, protected=protected)
        self._store_tables(tables, json.dumps(dict(settings or {})))

    def check_writable(self, names: list[str], *, replace: bool, protected: tuple[str, ...] = ()) -> None:
        """Refuse to write tables `names` where one exists (unless `replace`) or is `protected` (the run's
        inputs), each compared by the relation it is to the engine (`table_identity`), however spelt."""
        identities = {name: self.table_identity(name) for name in names}
        inputs = {self.table_identity(name) for name in protected} - {None}
        for name, identity in identities.items():
            if identity is not None and identity in inputs:
                raise CohortError(f"will not write over table {name!r}: it is this run's input")
        existing = [name for name, identity in identities.items() if identity is not None]
        check_writable(names, existing, replace=replace, protected=protected)

    def table_identity(self, name: str) -> object | None:
        """The relation that table name `name` is to the engine (None when it names none): by default the
        name as DuckDB and Spark resolve one (any case, the default schema implied); a server overrides it
        with its own identity of the object (PostgreSQL's oid)."""
        return _resolved(name) if self._has_table(name) else None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def check_writable(names: list[str], existing: list[str], *, replace: bool, protected: tuple[str, ...]) -> None:
    """Refuse to write over the run's input, the runs record, or (without `replace`) any existing table.
    Names are compared as the engines resolve them: in any case, with or without the default schema."""
    kept = {_resolved(name) for name in protected}
    refused = [name for name in names if _resolved(name) in kept | {RUNS_TABLE}]
    if refused:
        reason = "it is this run's input" if _resolved(refused[0]) in kept else "it records cohortsql's runs"
        raise CohortError(f"will not write over table {refused[0]!r}: {reason}")
    if existing and not replace:
        raise CohortError(f"table {existing[0]!r} already exists; pass --replace to replace it, or choose another name")


def _resolved(name: str) -> str:
    """A table name as DuckDB and Spark resolve it by default: case-insensitive, ``main.`` / ``default.`` implied."""
    plain = name.strip().strip('"`').lower()
    for schema in ("main.", "default.", "spark_catalog.default."):
        plain = plain.removeprefix(schema)
    return plain


def fetch_numpy(engine: Engine, select: str, *, context: str) -> dict[str, np.ndarray]:
    """A query's columns as numpy arrays."""
    table = engine.fetch_arrow(select, context=context)
    return {name: table.column(name).to_numpy() for name in table.column_names}


def fetch_record(engine: Engine, select: str, *, context: str) -> Row:
    """The single row of a query as a column -> value mapping."""
    rows = engine.fetch_arrow(select, context=context).to_pylist()
    if len(rows) != 1:
        raise CohortError(f"{context}: expected one row, got {len(rows)}")
    return rows[0]
