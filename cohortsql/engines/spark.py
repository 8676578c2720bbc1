"""The Apache Spark engine, for tables that outgrow one machine (``pip install 'cohortsql[spark]'``).

Every heavy step (statistics, the subject collapse, the mask histogram, the equivalence cells) runs
as Spark SQL; only aggregates bounded per batch of targets come back to the driver as Arrow.

Inputs: a ``pyspark.sql.DataFrame``, a table name (with ``connection=`` a SparkSession), a SQL
query, a path or glob read by Spark, or an in-memory frame (pyarrow, polars, pandas). Spark
promises no row order, so row positions (used when no ``id`` is given) exist only where they do
not depend on it: in-memory frames carry them as a column, Parquet files number their rows by file
path and the file's own row index. Otherwise the call asks for an ``id`` column.
"""

from __future__ import annotations

import re
import threading
import time
import urllib.parse
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Literal, Self, TypeVar, cast

import numpy as np
import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from cohortsql._typing import Row
from cohortsql.dialects import SPARK
from cohortsql.engines import read_by_sqlglot
from cohortsql.engines.base import (
    Engine,
    EngineSettings,
    PairInputs,
    QueryOfArguments,
    Select,
    Sources,
    ValuesOfHistograms,
)
from cohortsql.engines.inputs import (
    Input,
    as_arrow,
    sendable,
    with_positions,
    without_positions,
)
from cohortsql.engines.spark_failures import SPARK_FAILURES, WORKERS_CANNOT_IMPORT, failure_message, quiet_loggers
from cohortsql.engines.spark_files import read_path
from cohortsql.engines.spark_rows import collected
from cohortsql.engines.spark_session import start_session
from cohortsql.errors import CohortError, warn
from cohortsql.request.user_sql import is_query, query_text

Result = TypeVar("Result")

EXECUTOR_HISTOGRAM_PAIRS = 5_000_000
"""Target-subject pairs of a run from which the executors build its mask histograms: below, Spark
SQL's is quicker (20 Boston targets: 0.57-0.73 s a call against 0.9 s, the Python workers' round trip
and the merge costing more than the pairs); above, much slower (1,000,000 x 100 x 12 windows: see
docs/engines.md)."""

SCAN_PARTITIONS_PER_CORE = 2
"""The input is read in at most this many partitions a core (merged without a shuffle, `DataFrame.coalesce`).
A frame made from 1,000,000 in-memory rows has 100 partitions; on local[2] the ids' uniqueness check took
7-10 s over them and 1.1-1.3 s over 4, a count 0.38 s and 0.15 s (benchmarks/bench_spark.py's table).
The cores are those the cluster has when the call starts (`_tasks`): a cluster that adds executors as
tasks queue up sees no more tasks than that."""

_SHUFFLE_PARTITIONS, _SPARK_DEFAULT_SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions", "200"

_EXECUTORS_IMPORT: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
"""Per SparkSession, whether its executors' Python imports cohortsql (asked by a one-row job)."""

CANCEL_INTERVAL_SECONDS = 0.25
CANCEL_SECONDS = 60.0
"""After an interrupt, how often and for how long the cancel is repeated while a query is in flight."""


class SparkEngine(Engine):
    """Runs cohortsql's SQL on a SparkSession through temporary views (cached where results are reused)."""

    name = "spark"
    dialect = SPARK
    failures = SPARK_FAILURES
    reads_settings = frozenset({"spark_master"})
    writes_results_in_place = True
    counts_distinct_beside_aggregates = False
    """Spark plans a distinct count beside other aggregates by expanding every row (one copy per distinct
    aggregate): the statistics of 1,000,000 rows took 8-16 s with it, and about 1 s without it."""

    @classmethod
    def open(cls, connection: Any, settings: EngineSettings, data: Any = None) -> Self:
        """An engine on `connection` (a classic or a Spark Connect SparkSession), else on the session a
        Spark DataFrame `data` belongs to (its temporary views are that session's), else on `start_session`."""
        own = data.sparkSession if _is_spark(data, "DataFrame") else None
        if connection is None:
            return cls(own if own is not None else start_session(settings.spark_master))
        if not _is_spark(connection, "SparkSession"):
            raise CohortError(
                f"connection must be a SparkSession for the spark engine, got {type(connection).__name__}"
            )
        if own is not None and own is not connection:
            raise CohortError(
                "the Spark DataFrame belongs to another SparkSession than connection=; pass the DataFrame alone"
            )
        return cls(connection)

    def __init__(self, session: SparkSession) -> None:
        super().__init__()
        self.session = session
        self._job_group = f"cohortsql_{self._session}"
        self._remote = _is_connect(session)
        self._cached: set[str] = set()
        self._running = 0
        """How many queries of this engine are in flight (a cancel is repeated until none is)."""
        self._counting = threading.Lock()

    # -- the Engine methods --------------------------------------------------------------------

    def check_query(self, text: str, role: str) -> str:
        """Read as Spark reads it (backslash escapes inside string literals), the text outside quotes and
        comments holds no ``;`` and no word that starts another kind of statement."""
        query = query_text(text, role)
        code = SPARK.code_outside_quotes(query, role)
        if ";" in code:
            raise CohortError(f"{role} holds more than one statement; give one SELECT query")
        command = _COMMANDS.search(code)
        if command:
            raise CohortError(
                f"{role} may only read data, but it holds {command[0].upper()!r} (quote a column of that name)"
            )
        return query

    def register_input(self, data: Any, *, positions: bool) -> Input:
        if isinstance(data, Path):
            data = str(data)
        ordered = False
        cheap = False
        if _is_spark(data, "DataFrame"):
            frame = data
        elif isinstance(data, str):
            if is_query(data):
                query = self.check_query(data, "the data query")
                frame = self._run(lambda: self.session.sql(query), "the data query")
            elif self._has_table(data):
                frame = self.session.table(data)
            else:
                frame, ordered = read_path(self.session, data, positions, self._run)
        else:
            table = as_arrow(data)
            if table is None:
                raise CohortError(
                    f"cannot read data of type {type(data).__name__} on Spark: pass a Spark DataFrame, a table name,"
                    " a SQL query, a path, a pyarrow Table or a polars or pandas DataFrame"
                )
            frame = self._frame(with_positions(table) if positions else table)
            ordered = cheap = True
        if positions and not ordered:
            raise CohortError(
                "Spark does not promise a row order for this input, so rows have no stable position:"
                " pass id= naming a column that identifies rows (--id on the command line)"
            )
        cheap = cheap or _is_cached(frame)
        # Every whole-table query of a call is a job of as many tasks as the input has partitions: merged
        # (no shuffle), small partitions stop costing a task each (see SCAN_PARTITIONS_PER_CORE).
        frame = frame.coalesce(SCAN_PARTITIONS_PER_CORE * self._tasks())
        name = self._view(frame, "input")
        schema = without_positions(self._schema(frame))
        return Input(self.dialect.quote(name), schema, positions, cheap)

    def upload(self, table: pa.Table, purpose: str) -> str:
        return self.dialect.quote(self._view(self._frame(table), purpose))

    def create(self, select: str, purpose: str, *, materialize: bool, context: str, snapshot: bool = False) -> str:
        frame = self._run(lambda: self.session.sql(select), context)
        if snapshot:  # on the executors, without the lineage that would read the source again
            frame = self._run(lambda: frame.localCheckpoint(eager=True), context)
            materialize = False
        name = self._view(frame, purpose)
        if materialize:
            self.session.catalog.cacheTable(name)
            self._cached.add(name)
            self._run(lambda: self.session.table(name).count(), context)
        return self.dialect.quote(name)

    def sources(self, data: str) -> Sources:
        """The files Spark's plan of a query reads (``DataFrame.inputFiles``, tables stored as files
        included), and the tables it names (sqlglot's reading of Spark SQL: Spark's own plan is not
        reachable from a Connect session). Other text is a table of the catalog, or a path."""
        if not is_query(data):
            return Sources((), (data,)) if self._has_table(data) else Sources((data,), ())
        query = data
        frame = self._run(lambda: self.session.sql(query), "reading the data query")
        files = self._run(lambda: frame.inputFiles(), "reading the data query")
        paths = [
            urllib.parse.unquote(urllib.parse.urlparse(file).path) if file.startswith("file:") else file
            for file in files
        ]
        return Sources(tuple(paths), read_by_sqlglot.tables_named(query, self.dialect.name))

    def fetch_arrow(self, select: str, *, context: str) -> pa.Table:
        return self._run(lambda: self.session.sql(select).toArrow(), context)

    def fetch_one_row(self, select: str, *, context: str) -> pa.Table:
        """On a classic session, a row of numbers and booleans collected as Python values, which reads a
        LIMIT's row without Arrow's exchange into one partition (`spark_rows`); otherwise `fetch_arrow`."""
        if self._remote:
            return self.fetch_arrow(select, context=context)

        def read() -> pa.Table:
            frame = self.session.sql(select)
            rows = collected(frame)
            return frame.toArrow() if rows is None else rows

        return self._run(read, context)

    def interrupt(self) -> None:
        """Cancel this engine's queries, again and again until none is in flight: a query may submit
        a job after a cancel (a cross join's broadcast job finishes, then the join's own job starts),
        and a single cancel would miss it (seen on a busy 2-core machine: the join ran for 30 minutes)."""
        self._cancel()
        threading.Thread(target=self._cancel_until_idle, name="cohortsql-cancel", daemon=True).start()

    def _cancel(self) -> None:
        if self._remote:
            self.session.interruptAll()
        else:  # the job group of every query, with its running tasks interrupted (see _run)
            self.session.sparkContext.cancelJobGroup(self._job_group)

    def _cancel_until_idle(self) -> None:
        deadline = time.monotonic() + CANCEL_SECONDS
        while self._running and time.monotonic() < deadline:
            time.sleep(CANCEL_INTERVAL_SECONDS)
            try:
                self._cancel()
            except Exception:  # the session may be closing; the next round (or the deadline) ends it
                continue

    def pair_histogram(self, inputs: PairInputs, targets: pa.Table, *, context: str) -> dict[str, np.ndarray] | None:
        """On the executors (`cohortsql.engines.spark_histogram`) for runs of `EXECUTOR_HISTOGRAM_PAIRS` pairs,
        when their Python imports cohortsql (else a warning says what to install, once per session);
        otherwise None, and Spark SQL's histogram."""
        subjects, tests, columns, sums, pairs = inputs
        if pairs < EXECUTOR_HISTOGRAM_PAIRS or not self._python_on_executors():
            return None
        from cohortsql.engines.spark_histogram import merged_histogram, partial_histograms
        from cohortsql.numeric.pair_masks import targets_per_pass

        step = max(1, targets_per_pass(len(tests), len(sums)))
        tasks = self._tasks()

        def histogram(batch: pa.Table) -> dict[str, np.ndarray]:
            partials = partial_histograms(self.session, subjects, batch, tests, columns, sums, tasks)
            return merged_histogram(partials, sums, len(tests), tasks)

        parts = [
            self._run(partial(histogram, targets.slice(first, step)), context)
            for first in range(0, targets.num_rows, step)
        ]
        return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}

    def count_duplicate_ids(self, ids: str, *, rows: int, context: str) -> Row | None:
        """Here for tables of at most `spark_ids.DRIVER_ID_ROWS` rows of integer, decimal, date or
        timestamp ids; on the executors (`cohortsql.engines.spark_ids`) for tables of `spark_ids.EXECUTOR_ID_ROWS`
        rows whose ids polars compares as Spark does, when their Python imports cohortsql; otherwise
        None, and Spark SQL's grouped query."""
        from cohortsql.engines import spark_ids

        if rows <= spark_ids.DRIVER_ID_ROWS:
            counted = self._run(partial(spark_ids.counted_here, self.session, ids), context)
            if counted is not None:
                return counted
        if rows < spark_ids.EXECUTOR_ID_ROWS or not self._python_on_executors():
            return None
        return self._run(partial(spark_ids.duplicate_ids, self.session, ids, rows=rows, tasks=self._tasks()), context)

    def _tasks(self) -> int:
        """About as many tasks as the cluster has cores: its default parallelism (a Connect client cannot
        read it; there, the session's shuffle partitions)."""
        if self._remote:
            return int(self.session.conf.get("spark.sql.shuffle.partitions") or 200)
        return int(self.session.sparkContext.defaultParallelism)

    def _python_on_executors(self) -> bool:
        """Whether the executors' Python imports cohortsql (asked once per session)."""
        if self.session not in _EXECUTORS_IMPORT:
            try:
                self.check_workers()
                _EXECUTORS_IMPORT[self.session] = True
            except CohortError as error:
                if WORKERS_CANNOT_IMPORT not in str(error):
                    raise
                warn(
                    f"{error}; until then Spark SQL builds the mask histograms, about ten times slower, and checks the ids"
                )
                _EXECUTORS_IMPORT[self.session] = False
        return _EXECUTORS_IMPORT[self.session]

    def finish_histograms(
        self, histogram: str, features: Sequence[str], targets: int, per_call: int, values: ValuesOfHistograms
    ) -> DataFrame:
        from cohortsql.engines.spark_functions import grouped_values

        self.check_workers()  # the values are computed when the table is read, by the caller: check now
        return grouped_values(self.session.table(histogram.strip("`")), features, targets, per_call, values)

    def lazy(self, select: str) -> DataFrame:
        return self._run(lambda: self.session.sql(select), "reading the values")

    def check_workers(self) -> None:
        from cohortsql.engines.spark_functions import executors_import

        self._run(lambda: executors_import(self.session), "running cohortsql on Spark's executors")

    def register_functions(self, values: ValuesOfHistograms, query: QueryOfArguments) -> None:
        """Spark's table function finishes printed histograms; the table function that prepares a query
        from its arguments is DuckDB's alone (a Spark UDTF cannot run a query of its session)."""
        from cohortsql.engines.spark_functions import register_functions

        self.check_workers()
        register_functions(self.session, values=values)

    def keep(self) -> None:
        for name in list(self._cached):  # the views stay; what they cached is released
            self.session.catalog.uncacheTable(name)
        self._cached.clear()
        super().keep()

    def _write_table(self, name: str, table: object, *, record: str, append: bool) -> None:
        self._save(table, name, "append" if append else "overwrite")

    def _save(self, table: object, name: str, mode: str) -> None:
        if isinstance(table, pa.Table):
            frame = self._frame(table)
        elif isinstance(table, Select):
            frame = self._run(lambda: self.session.sql(table.sql), f"computing table {name!r}")
        elif _is_spark(table, "DataFrame"):
            frame = cast(DataFrame, table)  # a DataFrame is written by the executors
        else:
            raise TypeError(f"Spark writes Arrow tables, queries and DataFrames, not {type(table).__name__}")
        writer = frame.write.mode(mode)
        self._run(lambda: writer.saveAsTable(name), f"writing table {name!r}")

    # -- inputs --------------------------------------------------------------------------------

    def _frame(self, table: pa.Table) -> DataFrame:
        return self._run(
            lambda: self.session.createDataFrame(sendable(table, "Spark", large=True)), "sending data to Spark"
        )

    def _schema(self, frame: DataFrame) -> pa.Schema:
        from pyspark.sql.pandas.types import to_arrow_schema

        try:  # the time zone only labels timestamps here; cohortsql reads their kind, not their zone
            return to_arrow_schema(frame.schema, timezone="UTC")
        except (TypeError, ValueError, AssertionError, PySparkException):
            return self._run(lambda: frame.limit(0).toArrow().schema, "reading the data's columns")

    def _has_table(self, name: str) -> bool:
        try:
            return bool(self.session.catalog.tableExists(name))
        except PySparkException:
            return False

    def table_identity(self, name: str) -> frozenset[object] | None:
        """The table or view `name` is as Spark's catalog resolves it (its catalog, namespace and name:
        ``scores``, ``default.SCORES`` and ``spark_catalog.default.scores`` are one table; a name's case
        counts only where the session compares names case-sensitively); None when it names none."""
        try:
            table = self.session.catalog.getTable(name)
        except PySparkException:
            return None
        sensitive = str(self.session.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"
        parts = (table.catalog or "", *(table.namespace or ()), table.name)
        return frozenset({tuple(part if sensitive else part.lower() for part in parts)})

    # -- plumbing ------------------------------------------------------------------------------

    def _view(self, frame: DataFrame, purpose: str) -> str:
        name = self._temporary_name(purpose)
        frame.createOrReplaceTempView(name)
        self._created.append(("VIEW", name))
        return name

    def _execute(self, sql: str, *, context: str) -> None:
        self._run(lambda: self.session.sql(sql).collect(), context)

    def _drop(self, kind: str, name: str) -> None:
        if name in self._cached:
            self.session.catalog.uncacheTable(name)
            self._cached.discard(name)
        if kind == "VIEW":  # a temporary view of the session (`_view`): 3 ms by the catalog, 17 ms by SQL
            self._run(lambda: self.session.catalog.dropTempView(name), f"dropping {name!r}")
            return
        super()._drop(kind, name)

    # A query runs so that `interrupt` stops it: a Spark Connect session interrupts its own operations;
    # on a classic session the query's jobs join this engine's job group, whose running tasks are
    # interrupted when it is cancelled (`interruptAll` leaves a long task running there).

    def _before_query(self) -> None:
        if not self._remote:
            self.session.sparkContext.setJobGroup(self._job_group, "cohortsql", interruptOnCancel=True)

    def _after_query(self) -> None:
        self._count(-1)  # when the query ends, not when the caller stops waiting for it

    @contextmanager
    def _querying(self) -> Iterator[None]:
        with quiet_loggers(), self._shuffle_partitions():
            self._count(+1)
            yield

    @contextmanager
    def _shuffle_partitions(self) -> Iterator[None]:
        """While a query of this engine is planned and run, a session on Spark's default of 200 shuffle
        partitions uses `SCAN_PARTITIONS_PER_CORE` a core, as many as the input has, as Spark's tuning
        guide advises (2-3 tasks a core): on local[2] the ids' check of 1,000,000 rows took 0.5 s with 4
        and 1.0 s with 200. A setting the user chose stays; so does the session's setting afterwards."""
        conf = self.session.conf
        previous = None if self._remote else conf.get(_SHUFFLE_PARTITIONS)  # Connect: no cores to see
        if previous != _SPARK_DEFAULT_SHUFFLE_PARTITIONS:
            yield
            return
        conf.set(_SHUFFLE_PARTITIONS, str(SCAN_PARTITIONS_PER_CORE * self._tasks()))
        try:
            yield
        finally:
            conf.set(_SHUFFLE_PARTITIONS, previous)

    def _failure_message(self, error: BaseException) -> str:
        return failure_message(error)

    def _count(self, change: int) -> None:
        with self._counting:
            self._running += change


def _is_connect(value: object) -> bool:
    """Of a Spark Connect class: these do not derive from the classic ones, and their module needs
    Connect's own packages, so it is not imported to check."""
    return type(value).__module__.startswith("pyspark.sql.connect.")


def _is_cached(frame: DataFrame) -> bool:
    """Whether Spark keeps `frame` (``DataFrame.cache`` or ``CACHE TABLE``): then rescans read memory."""
    level = frame.storageLevel
    return bool(level.useMemory or level.useDisk or level.useOffHeap)


def _is_spark(value: object, name: Literal["DataFrame", "SparkSession"]) -> bool:
    """A classic PySpark DataFrame or SparkSession, or its Spark Connect counterpart."""
    classic = DataFrame if name == "DataFrame" else SparkSession
    return isinstance(value, classic) or (_is_connect(value) and type(value).__name__ == name)


_COMMANDS = re.compile(
    r"\b(insert|update|delete|merge|create|drop|alter|attach|detach|copy|call|pragma|install|load|export|import"
    r"|truncate|grant|revoke|vacuum|checkpoint|set|reset|use|begin|declare|execute)\b",
    re.IGNORECASE,
)
"""Words that start statements other than queries: a Spark data query may not hold them outside quotes."""

ENGINE = SparkEngine
