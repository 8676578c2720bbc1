"""Writing a command's results: files beside --out (all or nothing) and tables of --into-table.

Every file and table carries the run's settings: as Parquet key-value metadata, and as a row of the
``cohortsql_runs`` table of the database the tables go to.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cohortsql.errors import CohortError
from cohortsql.sql.user import is_query

if TYPE_CHECKING:
    import polars as pl


def write(options: dict[str, Any], tables: dict[str, pl.DataFrame], settings: dict[str, str]) -> str:
    """--out (the first table at the path, the others beside it) and --into-table; says what it wrote."""
    from cohortsql.engines import EngineSettings, open_engine
    from cohortsql.results.files import sibling_path, write_frames

    engine = options.get("engine") or "duckdb"
    if options.get("into_table") and engine == "duckdb" and not options.get("database"):
        raise CohortError("--into-table needs --database FILE.duckdb")
    if options.get("database") and not options.get("into_table"):
        raise CohortError("--database needs --into-table NAME")
    written: list[str] = []
    if options.get("out"):
        out = Path(options["out"])
        paths = {sibling_path(out, label) if label else out: frame for label, frame in tables.items()}
        write_frames(paths, settings)
        written.extend(str(path) for path in paths)
    if options.get("into_table"):
        name = options["into_table"]
        named = {f"{name}_{label}" if label else name: frame.to_arrow() for label, frame in tables.items()}
        database = options.get("database")
        target = open_engine(
            engine=engine,
            settings=EngineSettings(
                database=None if database is None else str(database), spark_master=options.get("spark_master")
            ),
        )
        try:
            target.write_tables(
                named, replace=bool(options.get("replace")), protected=_input_tables(options), settings=settings
            )
        finally:
            target.close()
        where = f"{database}: " if database else ""
        written.extend(f"{where}{table}" for table in named)
    return "".join(f"\nwrote {item}" for item in written)


def _input_tables(options: dict[str, Any]) -> tuple[str, ...]:
    """Tables that --into-table must never replace: the run's own input table in the same database."""
    from cohortsql.engines.inputs import database_table

    data = str(options.get("data") or "")
    in_database = database_table(data)
    if in_database is not None and options.get("database"):
        database, table = in_database
        return (table,) if Path(database).resolve() == Path(options["database"]).resolve() else ()
    return (data,) if options.get("engine") == "spark" and not is_query(data) else ()
