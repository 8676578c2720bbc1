"""Files Spark reads as a call's input (a path or glob given as the data): CSV and JSON as Spark infers
them, Parquet with, where rows need positions, each row numbered by its file (in path order) and the
file's own row index (`numbered_parquet`), which no scan order decides. The engine passes its `run`
(`SparkEngine._run`: one-line failures, cancellable jobs) for the jobs these start."""

from __future__ import annotations

import glob
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from cohortsql.engines.inputs import GLOB_CHARACTERS, POSITION_COLUMN, file_format
from cohortsql.errors import CohortError

Run = Callable[[Callable[[], Any], str], Any]
"""How the engine runs a Spark action: the action, then what it is doing (for its failure's message)."""

_FILE_COLUMN, _INDEX_COLUMN, _OFFSET_COLUMN = "__cohort_file", "__cohort_index", "__cohort_offset"


def read_path(session: SparkSession, path: str, positions: bool, run: Run) -> tuple[DataFrame, bool]:
    """The file or files at `path` (a local path or glob, or a URI Spark reads) and whether their rows
    are numbered (Parquet read with `positions`); a local path that names nothing is refused."""
    if "://" not in path and not (glob.glob(path) if GLOB_CHARACTERS & set(path) else Path(path).exists()):
        raise CohortError(f"no file or table named {path!r}; check the path")
    reader = file_format(path)
    read = session.read
    if reader == "csv":
        return run(lambda: read.csv(path, header=True, inferSchema=True), f"reading {path!r}"), False
    if reader == "json":
        return run(lambda: read.json(path), f"reading {path!r}"), False
    frame = run(lambda: read.parquet(path), f"reading {path!r}")
    if not positions:
        return frame, False
    return numbered_parquet(session, frame, run), True


def numbered_parquet(session: SparkSession, frame: DataFrame, run: Run) -> DataFrame:
    """Rows numbered by file (in path order) and by the file's own row index: no scan order involved."""
    # SQL strings, not pyspark.sql.functions: their columns are the classic or the Connect kind
    # depending on the process, not on the session the frame belongs to.
    located = frame.selectExpr("*", f"_metadata.file_path AS {_FILE_COLUMN}", f"_metadata.row_index AS {_INDEX_COLUMN}")
    counts = run(lambda: located.groupBy(_FILE_COLUMN).count().collect(), "counting the rows of each Parquet file")
    offsets, start = [], 0
    for row in sorted(counts, key=lambda row: row[_FILE_COLUMN]):
        offsets.append((row[_FILE_COLUMN], start))
        start += row["count"]
    table = session.createDataFrame(offsets, f"{_FILE_COLUMN} string, {_OFFSET_COLUMN} bigint")
    return (
        located.join(table.hint("broadcast"), _FILE_COLUMN)
        .selectExpr("*", f"{_OFFSET_COLUMN} + {_INDEX_COLUMN} AS {POSITION_COLUMN}")
        .drop(_FILE_COLUMN, _INDEX_COLUMN, _OFFSET_COLUMN)
    )
