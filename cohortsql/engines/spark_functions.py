"""Cohort Shapley values finished where Spark computed the histograms: on the executors, never on the
driver. `grouped_values` hands each group of targets' mask histograms, as one Arrow table, to
cohortsql's numpy stage (``applyInArrow``, classic and Connect sessions alike); `register_functions`
adds the SQL table function ``cohort_shapley_values`` that does the same for a histogram a query
computed (``SELECT * FROM cohort_shapley_values(TABLE(histogram) PARTITION BY target)``).

The Python workers import cohortsql: on a cluster it must be installed where the executors run.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from cohortsql.engines.base import ValuesOfHistograms
from cohortsql.errors import CohortError

TABLE_FUNCTION = "cohort_shapley_values"

MIN_GROUPS = 8
"""Groups of targets at least (when there are that many targets), so that every executor core works."""


@contextmanager
def without_pandas_warning() -> Iterator[None]:
    """PySpark's warning that it does not fully support pandas 3, silenced while Python functions are
    planned and run on the executors: cohortsql hands them Arrow, never pandas."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas", FutureWarning)
        yield


def executors_import(session: SparkSession) -> None:
    """Run a one-row job whose Python function (an Arrow batch in, out) needs cohortsql, pyarrow and
    numpy on an executor: it fails, with a ModuleNotFoundError inside, where they are missing."""
    with without_pandas_warning():
        session.range(1).mapInArrow(_imported, "id long").collect()


def _imported(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import cohortsql.engines.spark_functions  # noqa: F401 (what every function of this module needs)

    yield from batches


def grouped_values(
    frame: DataFrame, features: Sequence[str], targets: int, per_call: int, values: ValuesOfHistograms
) -> DataFrame:
    """``id, feature, shapley, shapley_squared`` from `frame`, the mask histograms of `targets` targets
    (columns target, mask0, w0, s0_0): targets hashed into groups of about `per_call`, each group's
    histograms finished by `values` in one call on an executor."""
    groups = max(math.ceil(targets / per_call), min(targets, MIN_GROUPS), 1)
    id_type = frame.schema["target"].dataType.simpleString()
    schema = f"id {id_type}, feature string, shapley double, shapley_squared double"
    names = list(features)

    def finish(table: pa.Table) -> pa.Table:
        return _finished(table, names, values)

    grouped = frame.selectExpr(f"pmod(hash(target), {groups}) AS __cohort_group", "target", "mask0", "w0", "s0_0")
    return grouped.groupBy("__cohort_group").applyInArrow(finish, schema)


def _finished(table: pa.Table, names: list[str], values: ValuesOfHistograms) -> pa.Table:
    """One group's histograms (any targets, rows in any order) as its targets' values, d rows each."""
    encoded = table.column("target").combine_chunks().dictionary_encode()
    ids, row = encoded.dictionary, encoded.indices.to_numpy(zero_copy_only=False)
    rows, d = len(ids), len(names)
    shapley, squared = values(
        row,
        table.column("mask0").to_numpy(),
        table.column("w0").to_numpy().astype(np.float64),
        table.column("s0_0").to_numpy(),
        rows,
        d,
    )
    return pa.table(
        {
            "id": ids.take(np.repeat(np.arange(rows), d)),
            "feature": pa.array(names * rows, type=pa.string()),
            "shapley": pa.array(shapley.reshape(-1)),
            "shapley_squared": pa.array(squared.reshape(-1)),
        }
    )


def register_functions(session: SparkSession, *, values: ValuesOfHistograms) -> None:
    """Add the table function ``cohort_shapley_values`` to `session`: one target's histogram (a
    partition of the printed histogram query's result, with its columns target, mask0, subjects,
    sum_y and features) in, its ``target, feature, shapley, shapley_squared`` rows out."""
    from pyspark.sql.functions import udtf
    from pyspark.sql.types import DoubleType, StringType, StructField, StructType
    from pyspark.sql.udtf import AnalyzeResult

    class CohortShapleyValues:
        """Collects one target's histogram rows; values them when its partition ends."""

        def __init__(self) -> None:
            self.target: Any = None
            self.names: list[str] = []
            self.rows: list[tuple[int, float, float]] = []

        @staticmethod
        def analyze(histogram: Any) -> AnalyzeResult:
            columns = {field.name: field.dataType for field in histogram.dataType.fields}
            missing = [name for name in ("target", "mask0", "subjects", "sum_y", "features") if name not in columns]
            if missing:
                raise CohortError(
                    f"cohort_shapley_values needs the columns of `cohortsql sql`'s histogram; missing {missing}"
                )
            return AnalyzeResult(
                StructType(
                    [
                        StructField("target", columns["target"]),
                        StructField("feature", StringType()),
                        StructField("shapley", DoubleType()),
                        StructField("shapley_squared", DoubleType()),
                    ]
                )
            )

        def eval(self, row: Any) -> Iterator[tuple[Any, ...]]:
            if self.target is None:
                self.target, self.names = row["target"], json.loads(row["features"])
            elif row["target"] != self.target:  # another target's rows would be valued as this one's
                raise CohortError("cohort_shapley_values needs one target per partition: PARTITION BY target")
            entry = (row["mask0"], row["subjects"], row["sum_y"])
            if any(value is None for value in entry):
                raise CohortError("cohort_shapley_values' histogram has a NULL mask, count or sum")
            self.rows.append((int(entry[0]), float(entry[1]), float(entry[2])))
            return iter(())

        def terminate(self) -> Iterator[tuple[Any, ...]]:
            if not self.rows:
                return
            masks, weights, sums = (np.array(column) for column in zip(*self.rows))
            shapley, squared = values(np.zeros(len(masks), dtype=np.int64), masks, weights, sums, 1, len(self.names))
            for position, name in enumerate(self.names):
                yield self.target, name, float(shapley[0, position]), float(squared[0, position])

    if type(session).__module__.startswith("pyspark.sql.connect."):  # `udtf` makes the classic kind
        from pyspark.sql.connect.udtf import UserDefinedTableFunction
        from pyspark.util import PythonEvalType

        function: Any = UserDefinedTableFunction(
            CohortShapleyValues, returnType=None, evalType=PythonEvalType.SQL_TABLE_UDF
        )
    else:
        function = udtf(CohortShapleyValues)
    session.udtf.register(TABLE_FUNCTION, function)
