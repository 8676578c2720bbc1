"""PostgreSQL, a warehouse cohortsql prints SQL for (translated from DuckDB's by sqlglot)."""

from __future__ import annotations

from collections.abc import Sequence

from cohortsql.dialects.transpile import TranspiledDialect


class PostgresDialect(TranspiledDialect):
    name = "postgres"
    snapshot = ("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",)
    identity_query = "SELECT to_regclass({name})::oid::bigint AS identity"

    def fold(self, bare: str) -> str:
        return bare.lower()

    def epoch_micros(self, expression: str, *, time_zone: bool = False) -> str:
        # PostgreSQL's epoch is a NUMERIC with every microsecond (version 14 and later).
        return f"CAST(extract(epoch FROM {expression}) * 1000000 AS BIGINT)"

    def distinct_estimate(self, value: str) -> str:
        # PostgreSQL has no HyperLogLog aggregate of its own: an exact count (it sorts, spilling to disk).
        return f"count(DISTINCT {value})"

    def distinct_rows_estimate(self, columns: Sequence[str]) -> str:
        return self.distinct_estimate(f"ROW({', '.join(columns)})")
