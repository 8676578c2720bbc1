"""How the DuckDB engine reads files and parses queries, as pure functions of what DuckDB reports: the
files a path or glob names, the reader call of each format (a CSV's buffer under a memory limit), the
CSV sniffer's verdict, Parquet rows numbered by file, and the files and tables a query reads
(`cohortsql.engines.duckdb.DuckDBEngine` runs the queries).
"""

from __future__ import annotations

import glob
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from cohortsql.dialects.base import Dialect
from cohortsql.engines.base import Sources
from cohortsql.engines.inputs import GLOB_CHARACTERS, POSITION_COLUMN
from cohortsql.errors import CohortError

READER_FUNCTIONS = {"parquet": "read_parquet", "csv": "read_csv", "json": "read_json"}

CSV_BUFFER_BYTES = 32 * 2**20
"""DuckDB's CSV reader's buffer by default: it is allocated whole, so under a memory_limit of 50 MB the
copy of a 2,000,000-row CSV failed before reading a row ('could not allocate block of size 30.5 MiB')."""


def matching_files(path: str, *, visible: bool, tables_too: bool) -> list[str]:
    """The files `path` names (a glob's in name order); refused when there are none. `visible`: the
    files are this machine's (else the path is the engine's to read); `tables_too`: the path could have
    named a table of the caller's connection, which the message says."""
    if not visible:
        return [path]
    if GLOB_CHARACTERS & set(path):
        files = sorted(glob.glob(path))
        if not files:
            raise CohortError(f"no file matches {path!r}; check the path and the pattern")
        return files
    if not Path(path).is_file():
        hint = " or table" if tables_too else ""
        raise CohortError(f"no file{hint} named {path!r}; check the path")
    return [path]


def reader_call(path: str, reader: str, limit: int | None, dialect: Dialect) -> str:
    """DuckDB's table function reading `path` in format `reader` under a memory `limit` (bytes, or None)."""
    return f"{READER_FUNCTIONS[reader]}({dialect.string(path)}{csv_buffer(reader, limit)})"


def csv_buffer(reader: str, limit: int | None) -> str:
    """``, buffer_size = N`` for a CSV read under a memory limit: an eighth of it (at least 4 MB, the
    reader's longest line twice; at most DuckDB's own default); nothing otherwise."""
    if reader != "csv" or limit is None or limit // 8 >= CSV_BUFFER_BYTES:
        return ""
    return f", buffer_size = {max(4 * 2**20, limit // 8)}"


def sniffed_csv(path: str, dialect: Dialect) -> str:
    """SELECT what DuckDB's CSV sniffer makes of the file: the lines it skips, whether it found a header,
    the delimiter and the columns' names."""
    return (
        "SELECT SkipRows AS skip, HasHeader AS header, Delimiter AS delimiter,"
        f" [c.name FOR c IN Columns] AS names FROM sniff_csv({dialect.string(path)})"
    )


def csv_problem(sniffed: Mapping[str, Any]) -> str | None:
    """Why a CSV file the sniffer read so (`sniffed_csv`) is not one table with named columns, or None:
    skipped lines, no header, or one column whose name holds another delimiter (lines of different
    lengths hid the real one)."""
    (only, *others) = sniffed["names"] or [""]
    ragged = not others and any(mark in only for mark in ",;\t|" if mark != sniffed["delimiter"])
    if sniffed["skip"]:
        return f"its first {sniffed['skip']} lines do not fit the rest"
    if ragged:
        return f"lines of different lengths: it read one column named {only!r}"
    if not sniffed["header"]:
        return "no header row"
    return None


def parquet_positions(path: str, rows_by_file: Mapping[str, int], dialect: Dialect) -> str:
    """Parquet rows of `path` numbered by file (in name order; `rows_by_file` from the files' metadata)
    and row within the file: no scan order involved."""
    options = f"{dialect.string(path)}, file_row_number = true, filename = true"
    offsets, start = [], 0
    for file in sorted(rows_by_file):
        offsets.append(f"({dialect.string(file)}, {start})")
        start += rows_by_file[file]
    q = dialect.quote
    return (
        f"(SELECT p.* EXCLUDE (file_row_number, filename), o.{q('offset')} + p.file_row_number AS {q(POSITION_COLUMN)}"
        f" FROM read_parquet({options}) AS p JOIN (VALUES {', '.join(offsets)}) AS o(file, {q('offset')})"
        " ON p.filename = o.file)"
    )


def parsed_sources(tree: Mapping[str, Any]) -> Sources:
    """The files and tables of a query parsed by DuckDB (``json_serialize_sql``): every string constant a
    table function is given (``read_parquet('a.parquet')``, lists and globs included) is a file, and
    every table it names a table, or a file where DuckDB would read it as one (``FROM 'a.parquet'``).
    Nothing for a query DuckDB could not parse."""
    if tree.get("error"):
        return Sources((), ())
    files: list[str] = []
    tables: list[str] = []
    for node in _nodes(tree):
        if node.get("type") == "BASE_TABLE":
            name = ".".join(str(part) for part in (node.get("schema_name"), node.get("table_name")) if part)
            tables.append(name)
            files.append(str(node.get("table_name") or ""))
        elif node.get("type") == "TABLE_FUNCTION":
            for leaf in _nodes(node.get("function")):
                literal = leaf.get("literal")
                if leaf.get("type") == "VALUE_CONSTANT" and isinstance(literal, dict):
                    if literal.get("kind") == "STRING":
                        files.append(str(literal.get("text")))
    return Sources(tuple(file for file in files if file), tuple(tables))


def _nodes(tree: object) -> Iterator[dict[str, object]]:
    """Every object of a parsed statement's JSON, depth first."""
    if isinstance(tree, dict):
        yield tree
        for value in tree.values():
            yield from _nodes(value)
    elif isinstance(tree, list):
        for value in tree:
            yield from _nodes(value)
