"""DuckDB's SQL, which cohortsql writes natively and runs (the default engine)."""

from __future__ import annotations

import re
from typing import ClassVar

from cohortsql.dialects.base import Dialect
from cohortsql.errors import CohortError

_DOLLAR_TAG = re.compile(r"^\$[A-Za-z_]*\$")


class DuckDBDialect(Dialect):
    name = "duckdb"
    snapshot: ClassVar[tuple[str, ...] | None] = ()  # a DuckDB transaction reads one snapshot (MVCC)
    sums_overflow_to_infinity = True

    def code_outside_quotes(self, text: str, role: str) -> str:
        """The operators of `text` as DuckDB's own lexer (`duckdb.tokenize`) reads it, strings,
        identifiers and comments left out: it knows every quoting rule of DuckDB's SQL (``'...'``,
        ``E'...'``, ``$$...$$`` and ``$tag$...$tag$``, quoted identifiers, comments), which a
        hand-written scanner would not (a dollar-quoted string holding a quote once hid a ``COPY``
        statement from one)."""
        import duckdb  # the lexer only: no connection, no query

        tokens = duckdb.tokenize(text)
        starts = [position for position, _ in tokens]
        ends = [*starts[1:], len(text)]
        code = []
        for start, end, (_, kind) in zip(starts, ends, tokens):
            token, kind_name = text[start:end].strip(), str(kind).rsplit(".", 1)[-1]
            if _unterminated(token, kind_name):
                raise CohortError(f"{role} {text!r} has an unterminated quote or comment")
            if kind_name == "operator":
                code.append(token)
        return " ".join(code)

    # DuckDB 2.0.1 takes a Parquet column's statistics (whose minimum and maximum leave NaN out, as the
    # format says) to mean it holds no NaN: over read_parquet, count_if(isnan(x)) and a filter on
    # abs(x) < 'Infinity' skip its NaN (a file of 45 NaN in 500 rows counted none, and a NaN prediction
    # passed the finiteness check). isfinite has no such shortcut: every test of NaN goes through it.
    def is_nan(self, value: str) -> str:
        return f"(NOT isfinite({value}) AND NOT isinf({value}))"

    def is_finite(self, value: str) -> str:
        return f"isfinite({value})"

    def failure(self, condition: str, message: str) -> str:
        return f"CAST(CASE WHEN {condition} THEN error({self.string(message)}) END AS DOUBLE)"

    def quantile_aggregate(self, expression: str, probability: float) -> str:
        return f"quantile_cont(CAST({expression} AS DOUBLE), {self.number(probability)})"

    def epoch_days(self, expression: str) -> str:
        return f"({expression} - DATE '1970-01-01')"

    def epoch_micros(self, expression: str, *, time_zone: bool = False) -> str:
        # epoch_us has no TIMESTAMPTZ_NS overload; the cast to TIMESTAMPTZ keeps the instant (to the
        # microsecond) and needs no time zone. A plain TIMESTAMP_NS takes epoch_us as it is: cast to
        # TIMESTAMPTZ it would be read in the session's time zone.
        return f"epoch_us(CAST({expression} AS TIMESTAMPTZ))" if time_zone else f"epoch_us({expression})"

    def md5_hash(self, text: str) -> str:
        # The 16 bytes as one little-endian 128-bit integer: parts are shifts and masks (3x faster than text).
        return f"md5_number({text})"

    def md5_part(self, hash_sql: str, part: int) -> str:
        return f"CAST(({hash_sql} >> {32 * part}) & 4294967295 AS DOUBLE)"


DUCKDB = DuckDBDialect()


def _unterminated(token: str, kind: str) -> bool:
    """Whether a string, quoted identifier or block comment of DuckDB's lexer runs to the end of the text."""
    if kind == "comment":
        return token.startswith("/*") and not (len(token) >= 4 and token.endswith("*/"))
    if kind not in ("string_const", "identifier"):
        return False
    body = token[1:] if token[:1] in "eEbBxX" and token[1:2] == "'" else token
    tag = _DOLLAR_TAG.match(body)
    if tag:
        return len(body) < 2 * len(tag[0]) or not body.endswith(tag[0])
    if body[:1] in ("'", '"', "`"):
        return len(body) < 2 or not body.endswith(body[0])
    return False
