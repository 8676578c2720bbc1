"""PostgreSQL, a warehouse cohortsql prints SQL for (translated from DuckDB's by sqlglot)."""

from __future__ import annotations

from cohortsql.dialects.transpile import TranspiledDialect


class PostgresDialect(TranspiledDialect):
    name = "postgres"

    def epoch_micros(self, expression: str) -> str:
        # PostgreSQL's epoch is a NUMERIC with every microsecond (version 14 and later).
        return f"CAST(extract(epoch FROM {expression}) * 1000000 AS BIGINT)"
