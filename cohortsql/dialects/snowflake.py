"""Snowflake, a warehouse cohortsql prints SQL for (translated from DuckDB's by sqlglot)."""

from __future__ import annotations

from cohortsql.dialects.transpile import TranspiledDialect


class SnowflakeDialect(TranspiledDialect):
    name = "snowflake"

    def fold(self, bare: str) -> str:
        return bare.upper()

    def epoch_days(self, expression: str) -> str:
        return f"datediff('day', DATE '1970-01-01', {expression})"

    def epoch_micros(self, expression: str, *, time_zone: bool = False) -> str:
        return f"date_part(epoch_microsecond, {expression})"
