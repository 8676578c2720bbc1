"""Spark's check that ids are unique without its grouped aggregate, two ways by the table's size:

- up to `DRIVER_ID_ROWS` rows of ids of a fixed width (`counted_here`), the rows' ids and hashes of
  their predictor values are read into this process as Arrow and counted here: polars counts the ids
  held more than once (`cohortsql.engines.id_counts`), a sketch of the hashes
  (`cohortsql.numeric.distinct_sketch`) estimates the distinct predictor rows
  (`cohortsql.run.preparation.COMPRESS_BELOW`);
- beyond, or for text ids, they are spread over the tasks by id (``repartition``: equal ids meet in one
  task); each task counts the ids it holds more than once and keeps a sketch of its distinct hashes;
  the driver sums the counts and merges the sketches (`duplicate_ids`).

Why: Spark's GROUP BY id with a HyperLogLog of the rows' hashes, 1,000,000 rows on local[2], took
0.73 s against 0.52 s on the executors (medians of 8, alternated in one session;
`benchmarks/bench_spark.py` prints the ways): each task's hash aggregate of ids it sees once is most of
Spark's time. Read here, the same rows took 0.30-0.42 s against the executors' 0.60-0.90 s on a busier
machine (medians of 7, alternated twice, ids in order and shuffled): no shuffle and no Python worker.
The executors' Python workers import cohortsql, as for the histogram (`cohortsql.engines.spark_histogram`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    BinaryType,
    DataType,
    DateType,
    DecimalType,
    IntegralType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from cohortsql._typing import Row
from cohortsql.engines.id_counts import repeated_ids
from cohortsql.engines.spark_functions import without_pandas_warning
from cohortsql.numeric import distinct_sketch

DRIVER_ID_ROWS = 4_000_000
"""Rows whose ids (of a fixed width: `fixed_width_alike`) are read into this process to be counted: at
most 24 bytes a row (a decimal id and a hash), 96 MB, and polars' count about 8 bytes an id more."""

EXECUTOR_ID_ROWS = 100_000
"""Rows from which the executors check that ids are unique (`duplicate_ids`) when this process does
not (text ids; more than `DRIVER_ID_ROWS` rows), tables whose mask histograms are built there too
from about 50 targets (`cohortsql.engines.spark.EXECUTOR_HISTOGRAM_PAIRS`). Warm, they are
quicker at every size (local[2], medians of 6 to 8 alternated: 506 rows 0.18 s against 0.26 s, 100,000
rows 0.23 s against 0.28 s, 1,000,000 rows 0.52 s against 0.73 s), but their first start in a session
took 1.3 s: a small table would pay it for the check alone."""

IDS_PER_TASK = 4_000_000
"""Ids one task holds at once (32 MB of BIGINTs and as much of hashes): a table of more rows is spread
over more tasks than the cluster has cores."""


def compares_ids_alike(kind: DataType) -> bool:
    """Whether polars' equality of ids of this Spark type (read through Arrow) is Spark's: integers,
    decimals, dates, timestamps, bytes and text of the binary collation. Not floating point (Spark's
    GROUP BY puts -0.0 with 0.0 and every NaN together) nor text of another collation (``UTF8_LCASE``
    groups 'A' with 'a')."""
    if isinstance(kind, StringType):
        return getattr(kind, "collation", "UTF8_BINARY") == "UTF8_BINARY"
    return isinstance(kind, IntegralType | DecimalType | DateType | TimestampType | TimestampNTZType | BinaryType)


def fixed_width_alike(kind: DataType) -> bool:
    """Whether ids of this Spark type compare alike (`compares_ids_alike`) and take a fixed width in
    Arrow (at most 16 bytes): integers, decimals, dates and timestamps, not text or bytes."""
    return compares_ids_alike(kind) and not isinstance(kind, StringType | BinaryType)


def counted_here(session: SparkSession, ids: str) -> Row | None:
    """``duplicate_ids`` and, when query `ids` hashes the rows, ``distinct_rows``, as `duplicate_ids`
    gives them, of query `ids` read into this process (for tables of at most `DRIVER_ID_ROWS` rows);
    None when its ids are not `fixed_width_alike`."""
    frame = session.sql(ids)
    if not fixed_width_alike(frame.schema[0].dataType):
        return None
    read = frame.toArrow()
    sketches = [distinct_sketch.smallest_hashes(read.column(1).to_numpy())] if read.num_columns > 1 else None
    return _counts(repeated_ids(read.column(0)), sketches)


def _counts(repeated: int, sketches: list[np.ndarray] | None) -> Row:
    """The check's row: the repeated ids, and the distinct rows the `sketches` estimate (None: unhashed)."""
    row: Row = {"duplicate_ids": repeated}
    if sketches is not None:
        row["distinct_rows"] = distinct_sketch.distinct_estimate(sketches)
    return row


def duplicate_ids(session: SparkSession, ids: str, *, rows: int, tasks: int) -> Row | None:
    """``duplicate_ids`` (how many rows repeat another row's id) and, when query `ids` hashes the rows,
    ``distinct_rows`` (the sketch's estimate of distinct row hashes) of query `ids` (an id column, then
    perhaps a BIGINT hash column: `cohortsql.queries.statistics.ids_and_row_hashes`) of about `rows` rows,
    spread over at least `tasks` tasks. None when polars would not compare the ids as Spark does
    (`compares_ids_alike`): the caller's grouped query counts them."""
    frame = session.sql(ids)
    if not compares_ids_alike(frame.schema[0].dataType):
        return None
    hashed = len(frame.columns) > 1

    def counted(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        held, hashes = [], []
        for batch in batches:
            held.append(batch.column(0))
            if hashed:
                hashes.append(batch.column(1).to_numpy())
        sketch = distinct_sketch.smallest_hashes(np.concatenate(hashes)) if hashes else np.zeros(0, np.uint64)
        yield pa.record_batch(
            {
                "repeated": pa.array([repeated_ids(pa.chunked_array(held)) if held else 0], pa.int64()),
                "sketch": pa.array([sketch.tobytes()], pa.binary()),
            }
        )

    spread = frame.repartition(max(tasks, math.ceil(rows / IDS_PER_TASK)), frame.columns[0])
    with without_pandas_warning():
        parts = spread.mapInArrow(counted, "repeated bigint, sketch binary").toArrow()
    sketches = [np.frombuffer(part.as_buffer(), dtype=np.uint64) for part in parts.column("sketch")]
    repeated = int(pc.sum(parts.column("repeated")).as_py() or 0)
    return _counts(repeated, sketches if hashed else None)
