"""DuckDB's SQL, which cohortsql writes natively and runs (the default engine)."""

from __future__ import annotations

from cohortsql.dialects.base import Dialect


class DuckDBDialect(Dialect):
    name = "duckdb"

    def failure(self, condition: str, message: str) -> str:
        return f"CAST(CASE WHEN {condition} THEN error({self.string(message)}) END AS DOUBLE)"

    def quantile_aggregate(self, expression: str, probability: float) -> str:
        return f"quantile_cont(CAST({expression} AS DOUBLE), {self.number(probability)})"

    def epoch_days(self, expression: str) -> str:
        return f"({expression} - DATE '1970-01-01')"

    def epoch_micros(self, expression: str) -> str:
        return f"epoch_us({expression})"

    def md5_hash(self, text: str) -> str:
        # The 16 bytes as one little-endian 128-bit integer: parts are shifts and masks (3x faster than text).
        return f"md5_number({text})"

    def md5_part(self, hash_sql: str, part: int) -> str:
        return f"CAST(({hash_sql} >> {32 * part}) & 4294967295 AS DOUBLE)"


DUCKDB = DuckDBDialect()
