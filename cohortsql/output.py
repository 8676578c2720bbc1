"""Writing result tables: atomically to Parquet or CSV files, or into a DuckDB database file."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import duckdb
import polars as pl

from cohortsql.errors import CohortError
from cohortsql.sqltext import quote_identifier

FORMATS = (".parquet", ".csv")


def write_frame(frame: pl.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write `frame` as Parquet or CSV (by the file's suffix) so that a failure leaves no partial file."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in FORMATS:
        raise CohortError(f"cannot write {str(target)!r}: use a file name ending in .parquet or .csv")
    if not target.parent.is_dir():
        raise CohortError(f"cannot write {str(target)!r}: the directory {str(target.parent)!r} does not exist")
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(handle)
    try:
        if suffix == ".parquet":
            frame.write_parquet(temporary)
        else:
            frame.write_csv(temporary)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def sibling_path(path: str | os.PathLike[str], label: str) -> Path:
    """`out.parquet` -> `out_<label>.parquet`: where a second table of the same run goes."""
    target = Path(path)
    return target.with_name(f"{target.stem}_{label}{target.suffix}")


def write_tables(database: str | os.PathLike[str], tables: Mapping[str, pl.DataFrame]) -> None:
    """Create or replace each table in a DuckDB database file, all in one transaction."""
    try:
        connection = duckdb.connect(str(database))
    except duckdb.Error as error:
        raise CohortError(f"cannot open DuckDB database {str(database)!r}: {error}") from None
    try:
        connection.execute("BEGIN TRANSACTION")
        for index, (name, frame) in enumerate(tables.items()):
            view = f"cohortsql_output_{index}"
            connection.register(view, frame.to_arrow())
            connection.execute(
                f"CREATE OR REPLACE TABLE {quote_identifier(name)} AS SELECT * FROM {quote_identifier(view)}"
            )
            connection.unregister(view)
        connection.execute("COMMIT")
    except duckdb.Error as error:
        connection.execute("ROLLBACK")
        raise CohortError(f"cannot write tables into {str(database)!r}: {error}") from None
    finally:
        connection.close()
