"""BigQuery, a warehouse cohortsql prints SQL for (translated from DuckDB's by sqlglot)."""

from __future__ import annotations

from cohortsql.dialects.duckdb import DuckDBDialect
from cohortsql.dialects.transpile import TranspiledDialect


class BigQueryDialect(TranspiledDialect):
    name = "bigquery"
    exact_quantiles = False  # PERCENTILE_CONT is only a window function there

    def nan_as_null(self, column: str) -> str:
        return DuckDBDialect.nan_as_null(self, column)  # isnan becomes BigQuery's IS_NAN

    def epoch_days(self, expression: str) -> str:
        return f"unix_date({expression})"

    def epoch_micros(self, expression: str) -> str:
        return f"unix_micros({expression})"
