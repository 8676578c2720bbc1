"""BigQuery, a warehouse cohortsql prints SQL for (translated from DuckDB's by sqlglot)."""

from __future__ import annotations

from collections.abc import Sequence

from cohortsql.dialects.duckdb import DuckDBDialect
from cohortsql.dialects.transpile import TranspiledDialect


class BigQueryDialect(TranspiledDialect):
    name = "bigquery"
    exact_quantiles = False  # PERCENTILE_CONT is only a window function there

    def nan_as_null(self, column: str) -> str:
        return DuckDBDialect.nan_as_null(self, column)  # isnan becomes BigQuery's IS_NAN

    def epoch_days(self, expression: str) -> str:
        return f"unix_date({expression})"

    def epoch_micros(self, expression: str, *, time_zone: bool = False) -> str:
        return f"unix_micros({expression})"

    def distinct_rows_estimate(self, columns: Sequence[str]) -> str:
        # BigQuery has no hash of several values: the row as text (NULL as a control character no value
        # of a feature is expected to hold), hashed, then counted by HyperLogLog.
        parts = ", ".join(f"coalesce(CAST({column} AS VARCHAR), chr(30))" for column in columns)
        return self.distinct_estimate(f"md5(concat_ws(chr(31), {parts}))")
