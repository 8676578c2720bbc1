"""Writing result tables atomically to Parquet or CSV files (tables in a database go through an engine)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import polars as pl

from cohortsql.errors import CohortError

FORMATS = (".parquet", ".csv")


def read_frame(path: str | os.PathLike[str], role: str) -> pl.DataFrame:
    """A Parquet or CSV file (by its suffix) as a frame; `role` says what it is for, in errors."""
    source = Path(path)
    suffix = source.suffix.lower()
    if suffix not in FORMATS:
        raise CohortError(f"cannot read {str(source)!r}: {role} reads .parquet or .csv files")
    if not source.is_file():
        raise CohortError(f"no file {str(source)!r}: {role} needs it")
    try:
        return pl.read_parquet(source) if suffix == ".parquet" else pl.read_csv(source)
    except (pl.exceptions.PolarsError, OSError) as error:
        raise CohortError(f"cannot read {str(source)!r} ({role}): {str(error).splitlines()[0]}") from None


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
