"""Writing a command's results: files beside --out (all or nothing) and tables of --into-table.

Every file and table carries the run's settings: as Parquet key-value metadata, and as a row of the
``cohortsql_runs`` table of the database the tables go to.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cohortsql._typing import RUN_OPTIONS
from cohortsql.cli.flags import Flags
from cohortsql.errors import CohortError

if TYPE_CHECKING:
    import polars as pl

    from cohortsql.api.surfaces import Engine, Sources
    from cohortsql.formats.settings import Settings


def write(options: Flags, tables: dict[str, pl.DataFrame], settings: Settings) -> str:
    """--out (the first table at the path, the others beside it) and --into-table; says what it wrote.
    Nothing is written after a Ctrl-C, even one whose exception a library swallowed."""
    from cohortsql.interrupts import check_not_interrupted

    check_not_interrupted()
    from cohortsql.formats.files import sibling_path, write_set

    name, database, out_path = options.get("into_table"), options.get("database"), options.get("out")
    if name:
        check_tables_kept(options)
    if database and not name:
        raise CohortError("--database needs --into-table NAME")
    if database:
        check_database(Path(database))
    written: list[str] = []
    if out_path:
        out = Path(out_path)
        refuse_inputs([sibling_path(out, label) if label else out for label in tables], options)
        written.extend(str(path) for path in write_set(out, tables, settings))
    if name:
        target = run_engine(options, database=True)
        named = {
            target.dialect.companion_name(name, label) if label else name: frame.to_arrow()
            for label, frame in tables.items()
        }
        try:
            target.write_tables(
                named, replace=bool(options.get("replace")), protected=_input_tables(options), settings=settings
            )
        finally:
            target.close()
        where = f"{database}: " if database else ""
        written.extend(f"{where}{table}" for table in named)
    return "".join(f"\nwrote {item}" for item in written)


ON_THE_ENGINE = ("prediction", "similarity", "id", "targets", "sample", "seed", "weight", *RUN_OPTIONS)
"""What `cohortsql.shapley_table` takes: a run asking for nothing else is computed and written by Spark."""


def written_on_the_engine(options: Flags, arguments: dict[str, Any]) -> bool:
    """Whether `shapley` writes its values through `cohortsql.shapley_table`: --into-table on an engine
    that writes results where it computes them (Spark, a warehouse), no --out or --reasons, one
    explained column and only the options that takes (the exact values)."""
    from cohortsql.api.surfaces import engine_class, engine_for

    plain = set(arguments) <= set(ON_THE_ENGINE) and isinstance(arguments.get("prediction"), str)
    if not (options.get("into_table") and not options.get("out") and not options.get("reasons") and plain):
        return False
    chosen = engine_class(engine_for(options.get("data"), options.get("connection"), options.get("engine")))
    return chosen.writes_results_in_place


def write_on_the_engine(options: Flags, arguments: dict[str, Any]) -> str:
    """--into-table NAME where the values are computed (`cohortsql.shapley_table`'s ``into``): the
    values (id, feature, shapley, shapley_squared) computed and written by the engine, nothing per
    target in this process; the run is recorded, and the summary is each feature's mean |shapley| and
    mean shapley_squared (the Shapley effect of the targets)."""
    from cohortsql.api.table import shapley_table

    name = str(options.get("into_table"))
    shapley_table(options.get("data"), into=name, replace=bool(options.get("replace")), **arguments)
    engine = run_engine(options)
    try:
        summary = engine.fetch_arrow(
            f"SELECT feature, count(*) AS targets, avg(abs(shapley)) AS mean_abs, avg(shapley_squared) AS effect"
            f" FROM {engine.dialect.quote_path(name)} GROUP BY feature ORDER BY effect DESC",
            context=f"summarizing table {name!r}",
        ).to_pylist()
    finally:
        engine.close()
    lines = [
        f"{summary[0]['targets'] if summary else 0} targets x {len(summary)} features,"
        f" computed and written by {engine.name}"
    ]
    lines += ["feature  mean |shapley|  mean shapley_squared (effect)"]
    lines += [f"{row['feature']}  {row['mean_abs']:.6g}  {row['effect']:.6g}" for row in summary]
    return "\n".join(lines) + f"\nwrote {name}"


def check_table_free(options: Flags) -> None:
    """Before the work: --into-table's name may be written into --database's DuckDB file: it does not
    exist unless --replace, and it is not the run's input. (The tables beside it, name_<label>, depend
    on what the command writes and are checked when it writes; on Spark the whole check waits for the
    session the run opens.)"""
    name, database = options.get("into_table"), options.get("database")
    if not name or not database or not Path(database).exists():
        return
    target = run_engine(options, database=True)
    try:
        target.check_writable([name], replace=bool(options.get("replace")), protected=_input_tables(options))
    finally:
        target.close()


def input_files(options: Flags) -> list[Path]:
    """The files the run reads: the data's file or every file of its glob, a DuckDB database's file,
    the histogram `assemble` reads, or every file a data query reads (as its engine finds them)."""
    from cohortsql.api.surfaces import database_table

    data = str(options.get("data") or options.get("histogram") or "")
    if not data:
        return []
    files: list[Path] = []
    for name in _data_sources(options, data).files:
        in_database = database_table(name)
        if in_database is not None:
            files.append(Path(in_database[0]))
        else:
            files.extend(Path(match) for match in (glob.glob(name) if glob.has_magic(name) else [name]))
    return [path for path in files if path.is_file()]


def _data_sources(options: Flags, data: str) -> Sources:
    """The files and tables `data` reads (a query's, as the engine that runs it parses or plans it; a
    name is a table of the engine's, or a file)."""
    engine = run_engine(options)
    try:
        return engine.sources(data)
    finally:
        engine.close()


def run_engine(options: Flags, *, database: bool = False) -> Engine:
    """An engine as the run's options name it (--engine or its connection, --spark-master; with
    `database`, the --database its tables are written to); close it when done."""
    from cohortsql.api.surfaces import EngineSettings, open_engine

    written_to = options.get("database") if database else None
    settings = EngineSettings(
        database=None if written_to is None else str(written_to), spark_master=options.get("spark_master")
    )
    return open_engine(engine=options.get("engine"), connection=options.get("connection"), settings=settings)


def check_tables_kept(options: Flags) -> None:
    """--into-table on an engine whose tables need a setting to outlive the run (DuckDB's --database:
    without it, its database is in memory) is refused before any work."""
    from cohortsql.api.surfaces import engine_class, engine_for

    chosen = engine_class(engine_for(options.get("data"), options.get("connection"), options.get("engine")))
    kept_by = chosen.tables_kept_by
    given: Mapping[str, object] = options
    if kept_by is not None and not given.get(kept_by):
        raise CohortError(
            f"--into-table needs --{kept_by.replace('_', '-')} on {chosen.name}: its tables are lost when the run ends"
        )


def refuse_inputs(outputs: Iterable[Path], options: Flags) -> None:
    """Refuse to write any output over a file the run reads: its data (a file, every file of a glob, a
    DuckDB database, every file a data query reads), its histogram, its model file, the attributions it
    tests; before any work."""
    read = [Path(str(options[name])) for name in ("model", "attributions") if options.get(name)]
    refuse_overwriting(outputs, [*input_files(options), *read])


def refuse_overwriting(outputs: Iterable[Path], inputs: Iterable[Path]) -> None:
    """The one guard of every file a command writes: none may be a file the command reads (the same
    file by device and inode: a link or another spelling of its name counts), nor another of its
    outputs (a report written where the results go would replace them)."""
    sources = [path for path in inputs if path.is_file()]
    seen: list[Path] = []
    for output in outputs:
        if output.exists() and any(os.path.samefile(output, source) for source in sources):
            raise CohortError(f"cannot write {str(output)!r}: it is an input of this run (a file it reads)")
        if any(_same_destination(output, other) for other in seen):
            raise CohortError(f"cannot write {str(output)!r} twice: two outputs of this run name the same file")
        seen.append(output)


def _same_destination(one: Path, other: Path) -> bool:
    if one.exists() and other.exists():
        return os.path.samefile(one, other)
    return one.resolve() == other.resolve()


def check_figure_path(path: Path, flag: str) -> Path:
    """`path` when a figure can be saved there: a format matplotlib writes, in an existing directory."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise CohortError("figures need matplotlib: pip install 'cohortsql[plot]'") from None
    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    if path.suffix.lower().lstrip(".") not in formats:
        raise CohortError(f"{flag} {str(path)!r}: name a figure file ending in one of .{', .'.join(formats)}")
    if not path.parent.is_dir():
        raise CohortError(f"cannot write {str(path)!r}: the directory {str(path.parent)!r} does not exist")
    return path


DUCKDB_MAGIC = b"DUCK"
"""The bytes at offset 8 of a DuckDB database file."""


def check_database(database: Path) -> None:
    """--database is a new file or a DuckDB database (an existing CSV would be opened as a throw-away
    in-memory database, and nothing written would be kept)."""
    if database.is_dir():
        raise CohortError(f"--database {str(database)!r} is a directory: name a .duckdb file")
    if not database.parent.is_dir():
        raise CohortError(f"--database {str(database)!r}: the directory {str(database.parent)!r} does not exist")
    if database.exists():
        with database.open("rb") as file:
            header = file.read(12)
        if header[8:12] != DUCKDB_MAGIC:
            raise CohortError(
                f"--database {str(database)!r} is not a DuckDB database: name a .duckdb file or a new path"
            )


def _input_tables(options: Flags) -> tuple[str, ...]:
    """Tables that --into-table must never replace: the run's own input table in the same database
    (the same file by device and inode, however it is named or linked)."""
    from cohortsql.api.surfaces import database_table

    data = str(options.get("data") or "")
    in_database, written_to = database_table(data), options.get("database")
    if in_database is not None:
        database, table = in_database
        output = Path(written_to) if written_to else None
        same = output is not None and output.exists() and Path(database).exists() and os.path.samefile(database, output)
        return (table,) if same else ()
    return _data_sources(options, data).tables
