"""Spark's mask histogram without its hash aggregate of the pairs: each executor task takes its share
of the subjects as Arrow batches (``mapInArrow``) and builds one partial histogram against every
target of the batch in a compiled loop (numba where installed, numpy otherwise;
`cohortsql.numeric.pair_masks`); the driver sums the few tasks' histograms of a small cluster, a
Spark aggregate those of a larger one (`DRIVER_MERGE_TASKS`).

Why: Spark's hash aggregate of target-subject pairs is nearly all of its cost (one GROUP BY target,
mask of 1e8 pairs took 12.3 s on 2 cores, DuckDB 1.3 s), while this path took 1.7 s
(`benchmarks/bench_spark.py`). The targets travel with the function (they are one batch: a few thousand rows at
most); the subjects never leave their executors. The Python workers import cohortsql: on a cluster it
must be installed where the executors run (`cohortsql.engines.spark_functions.executors_import`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from cohortsql.engines.spark_functions import without_pandas_warning
from cohortsql.numeric import pair_masks
from cohortsql.numeric.pair_tests import PairTest

DRIVER_MERGE_TASKS = 4
"""Up to this many tasks' partial histograms are merged by the driver (`merged_histogram`), which then
receives at most this many times the histogram's cells; more, by a Spark aggregate. 1,000,000 x 100
targets x 12 windows on local[2] (655,000 partial cells, 353,000 merged): 0.9 s a histogram merged on
the driver, 1.2-1.5 s by Spark's aggregate."""


def merged_histogram(partials: DataFrame, sums: Sequence[str], d: int, tasks: int) -> dict[str, np.ndarray]:
    """The mask histogram (target, mask0, one array per sum) of the `tasks` tasks' `partial_histograms`
    (masks of `d` bits): up to `DRIVER_MERGE_TASKS` tasks' summed here
    (`cohortsql.numeric.pair_masks.merged_cells`: no shuffle, no second stage), more by a Spark aggregate."""
    if tasks > DRIVER_MERGE_TASKS:
        # The DataFrame's own sum (not pyspark.sql.functions'): the same call on classic and Connect sessions.
        merged = partials.groupBy("target", "mask0").sum(*sums).toDF("target", "mask0", *sums).toArrow()
        return {name: merged.column(name).to_numpy() for name in merged.column_names}
    cells = partials.toArrow()
    target, mask, totals = pair_masks.merged_cells(
        cells.column("target").to_numpy(),
        cells.column("mask0").to_numpy(),
        [cells.column(name).to_numpy() for name in sums],
        d,
    )
    return {"target": target.astype(np.int32), "mask0": mask} | dict(zip(sums, totals))


def partial_histograms(
    session: SparkSession,
    subjects: str,
    targets: pa.Table,
    tests: Sequence[PairTest],
    columns: Sequence[str],
    sums: Sequence[str],
    tasks: int,
) -> DataFrame:
    """Each task's mask histogram (target, mask0, one column per sum) of the `targets` (numbered by
    ``__cohort_batch``; their feature `columns`; at most `cohortsql.numeric.pair_masks.targets_per_pass`)
    against its share of the rows of query `subjects` (the feature `columns` and one column per sum,
    each row's measure), as a Spark DataFrame: a (target, mask) in as many rows as tasks reach it. The
    subjects' partitions are merged into `tasks` (the cluster's cores) without a shuffle, so that there
    are as few partial histograms to merge as there are cores: one per partition of 10,000 rows made
    the merge a hash aggregate of nearly every pair."""
    vocabulary = [pair_masks.vocabulary(targets.column(name), test) for name, test in zip(columns, tests)]
    encoded = pair_masks.Columns.of([targets.column(name) for name in columns], tests, vocabulary)
    numbers = targets.column("__cohort_batch").to_numpy()
    names, measures = list(columns), list(sums)

    def partial(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        histogram = pair_masks.histogram_of_batches(encoded, tests, vocabulary, names, measures, batches)
        target, mask, totals = histogram.cells()
        yield pa.record_batch(
            {"target": pa.array(numbers[target], pa.int32()), "mask0": pa.array(mask, pa.int64())}
            | {name: pa.array(totals[:, index]) for index, name in enumerate(measures)}
        )

    schema = ", ".join(["target int", "mask0 bigint", *(f"{name} double" for name in measures)])
    rows = session.sql(subjects).coalesce(tasks)
    with without_pandas_warning():
        return rows.mapInArrow(partial, schema)
