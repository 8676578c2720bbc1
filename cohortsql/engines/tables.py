"""Result tables an engine writes: the query form of one, the record of runs, and the checks that
refuse to write over an input or an existing table."""

from __future__ import annotations

from typing import NamedTuple

from cohortsql.errors import CohortError

RUNS_TABLE = "cohortsql_runs"
"""Where `Engine.write_tables` records each run that wrote tables: when, which tables, its settings (JSON)."""


class Select(NamedTuple):
    """A query of the engine, as a table to write (`Engine.write_tables`): the engine runs it into the
    table, and none of its rows pass through this process."""

    sql: str


def check_writable(names: list[str], existing: list[str], *, replace: bool, protected: tuple[str, ...]) -> None:
    """Refuse to write over the run's input, the runs record, or (without `replace`) any existing table.
    Names are compared as the engines resolve them: in any case, with or without the default schema."""
    kept = {resolved_name(name) for name in protected}
    refused = [name for name in names if resolved_name(name) in kept | {RUNS_TABLE}]
    if refused:
        reason = "it is this run's input" if resolved_name(refused[0]) in kept else "it records cohortsql's runs"
        raise CohortError(f"will not write over table {refused[0]!r}: {reason}")
    if existing and not replace:
        raise CohortError(f"table {existing[0]!r} already exists; pass --replace to replace it, or choose another name")


def resolved_name(name: str) -> str:
    """A table name as DuckDB and Spark resolve it by default: case-insensitive, ``main.`` / ``default.`` implied."""
    plain = name.strip().strip('"`').lower()
    for schema in ("main.", "default.", "spark_catalog.default."):
        plain = plain.removeprefix(schema)
    return plain
