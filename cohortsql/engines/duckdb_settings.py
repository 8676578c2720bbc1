"""How the DuckDB engine sizes and opens what it runs on: memory limits read as DuckDB reads them,
the perfect hash aggregate's key width, Arrow tables cut for every thread, the databases it opens, and
which tables a name reads as DuckDB resolves it."""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa

from cohortsql.dialects import DUCKDB
from cohortsql.errors import CohortError

PERFECT_HASH_BITS = 20
"""GROUP BY keys spanning up to 2^20 values (target x mask) get DuckDB's perfect hash aggregate, whose
table then takes up to ~32 MB per thread with two sums; the default, 12 bits, misses every histogram
of d >= 6. With more sums per group, fewer bits (`perfect_hash_bits`)."""

PERFECT_HASH_BYTES = 2**25
"""The most a perfect hash table may take per thread: DuckDB allocates it whole for every value the
keys' ranges span (2^bits slots, about 16 bytes per sum each), before it sees a row."""


def perfect_hash_bits(sums: int) -> int:
    """The widest key range, in bits, whose perfect hash table of `sums` aggregates fits
    `PERFECT_HASH_BYTES`: 20 for two sums, 17 for ten, 5 for 40,000 (bootstrap replicates)."""
    slots = PERFECT_HASH_BYTES // (16 * max(1, sums))
    return max(0, min(PERFECT_HASH_BITS, slots.bit_length() - 1))


_BINARY_UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
"""Units of DuckDB's display of memory_limit (e.g. '953.6 MiB')."""


MINIMUM_MEMORY_LIMIT = 4_000_000
"""The smallest memory_limit accepted: below a few MB DuckDB cannot run even the statement that lifts
the limit again (RESET failed to allocate 4 KiB under 1 KB, at random), so a caller's connection would
be left unusable."""


@functools.cache
def default_memory_limit() -> str:
    """A new in-memory database's memory_limit (DuckDB's default: most of this machine's memory)."""
    with duckdb.connect() as probe:
        return str(probe.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])


def callers_limit(connection: duckdb.DuckDBPyConnection) -> int | None:
    """The memory limit the caller set on their connection, in bytes, or None when it is DuckDB's
    default: a call on such a connection plans for it as for one it was given (its ids' check and
    quantiles spill rather than hold every value: a connection limited to 50 MB failed on 2,000,000 ids)."""
    (shown,) = connection.execute("SELECT current_setting('memory_limit')").fetchall()[0]
    if str(shown) == default_memory_limit():
        return None
    try:
        return memory_limit_bytes(str(shown))
    except CohortError:
        return None


MAXIMUM_MEMORY_LIMIT = 2**60
"""The largest memory_limit accepted (an exbibyte): DuckDB reads a negative size, or one this large, as
no limit at all ('16383.9 PiB'), which is never what a limit means."""

_SIZE = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*$")


def memory_limit_bytes(limit: str) -> int:
    """A memory_limit as DuckDB reads it (e.g. ``"1GB"``, ``"500MiB"``), in bytes; a `CohortError` for
    text DuckDB does not read, a negative or zero size (DuckDB reads those as no limit), or a limit
    below `MINIMUM_MEMORY_LIMIT` or above `MAXIMUM_MEMORY_LIMIT`."""
    parsed = _SIZE.match(str(limit))
    if parsed is not None and not float(parsed[1]) > 0:
        raise CohortError(
            f"memory_limit {limit!r} is not a limit: give a positive size, e.g. '1GB' (DuckDB would read"
            f" a negative or zero size as no limit at all)"
        )
    with duckdb.connect() as probe:
        try:
            probe.execute(f"SET memory_limit = {DUCKDB.string(str(limit))}")
            (shown,) = probe.execute("SELECT current_setting('memory_limit')").fetchall()[0]
        except duckdb.OutOfMemoryException:  # too small to read back
            shown = "0 bytes"
        except duckdb.Error:
            raise CohortError(f"memory_limit {limit!r} is not a size DuckDB reads, e.g. '1GB' or '500MB'") from None
    number, _, unit = str(shown).partition(" ")
    size = int(float(number) * _BINARY_UNITS.get(unit, 1))
    if size < MINIMUM_MEMORY_LIMIT:
        raise CohortError(
            f"memory_limit {limit!r} is below the 4 MB DuckDB needs to run any query;"
            " give at least '4MB' (DuckDB spills to its temp_directory what does not fit)"
        )
    if size >= MAXIMUM_MEMORY_LIMIT:
        raise CohortError(f"memory_limit {limit!r} is not a limit (DuckDB reads it as none): give a size, e.g. '1GB'")
    return size


def shown_again(shown: str) -> str:
    """A memory_limit (in bytes) that DuckDB shows as `shown` (its display, e.g. '2.7 GiB', which keeps one
    decimal and drops the rest), and keeps showing so when set again: the middle of the sizes it stands
    for. DuckDB shows no more of a limit than that (duckdb/duckdb#11803), so a caller's '3GB' read back
    and set again as '2.7 GiB' came back as '2.6 GiB', and lower at every call."""
    number, _, unit = shown.partition(" ")
    try:
        low = float(number)
    except ValueError:
        return shown
    scale = _BINARY_UNITS.get(unit)
    if scale is None or scale == 1:
        return shown
    return f"{math.ceil((low + 0.05) * scale)} bytes"


ARROW_TASK_ROWS = 122_880
"""DuckDB scans an Arrow table in tasks of up to this many rows (one thread each)."""

SMALL_TABLE_BATCH_ROWS = 16_384
"""Record batch size of a table too small for two scan tasks: 100,000 rows x 20 targets x 12 windows
took 40 ms in batches of this size against 72 ms in one batch (one thread); 2,048 and 8,192 did alike."""


def in_parallel_batches(table: pa.Table) -> pa.Table:
    """`table` cut into record batches every thread can scan when it is smaller than two scan tasks
    (slices: nothing is copied); larger tables are split by DuckDB itself."""
    if table.num_rows >= 2 * ARROW_TASK_ROWS:
        return table
    return pa.Table.from_batches(table.to_batches(max_chunksize=SMALL_TABLE_BATCH_ROWS), table.schema)


_SHARED_DATABASE: list[duckdb.DuckDBPyConnection] = []


def shared_database() -> duckdb.DuckDBPyConnection:
    """The process's in-memory database for engines opened without a connection."""
    if not _SHARED_DATABASE:
        _SHARED_DATABASE.append(duckdb.connect())
    return _SHARED_DATABASE[0]


def connect_file(database: str | os.PathLike[str], read_only: bool) -> duckdb.DuckDBPyConnection:
    if read_only and not Path(database).is_file():
        raise CohortError(f"no DuckDB database file {str(database)!r}; check the path")
    try:
        return duckdb.connect(str(database), read_only=read_only)
    except duckdb.Error as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CohortError(f"cannot open DuckDB database {str(database)!r}: {message}") from None


def tables_scanned(connection: duckdb.DuckDBPyConnection, quoted: str) -> frozenset[int] | None:
    """The tables (by oid) that reading the relation `quoted` (a quoted, possibly qualified name) scans,
    as DuckDB itself resolves the name: its catalog, schema and search path, its case rules, a view's
    tables; None when the name is no relation of the connection. The plan names each table it scans
    qualified and quoted as DuckDB writes names (``memory.main."a.b"``), which is read back part by part
    and matched exactly against ``duckdb_tables()``: no text of the caller's is compared."""
    try:
        (_, plan), *_ = connection.execute(f"EXPLAIN (FORMAT json) SELECT * FROM {quoted}").fetchall()
    except duckdb.Error:
        return None
    oids = {
        (row[0], row[1], row[2]): int(row[3])
        for row in connection.execute(
            "SELECT database_name, schema_name, table_name, table_oid FROM duckdb_tables()"
        ).fetchall()
    }
    scanned = set()
    for table in _scanned_names(json.loads(plan)):
        parts = DUCKDB.name_parts(table)
        if parts is not None and parts in oids:
            scanned.add(oids[parts])
    return frozenset(scanned)


def _scanned_names(nodes: list[dict[str, object]]) -> Iterator[str]:
    """The ``Table`` of every scan of a plan in DuckDB's JSON form."""
    for node in nodes:
        extra = node.get("extra_info")
        if isinstance(extra, dict) and isinstance(extra.get("Table"), str):
            yield extra["Table"]
        children = node.get("children")
        if isinstance(children, list):
            yield from _scanned_names(children)
