"""The base of every SQL dialect: the few constructs that are spelled differently on each engine.

Every query cohortsql runs is written once, in the SQL that DuckDB and Spark SQL share (CTEs,
``CASE``, ``count_if``, ``GROUP BY`` ordinals, ``IS NOT DISTINCT FROM``, ``md5``). What genuinely
differs lives here, one small class per dialect (the pattern of Splink's dialect classes): quoting,
string literals, exact quantiles, days since the epoch, and reading numbers out of an md5 hash.
A dialect is stateless; rendering with it is a pure function of its inputs.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import re
from collections.abc import Sequence
from typing import ClassVar

from cohortsql.errors import CohortError

_BARE_IDENTIFIER = re.compile(r"[^\W\d][\w$]*")
"""An unquoted name part: a letter or underscore, then letters, digits, underscores or dollar signs."""


class Dialect:
    """SQL shared by DuckDB and Spark; subclasses override what their engine spells differently."""

    name: ClassVar[str]
    """The dialect's name, as sqlglot knows it."""

    identifier_quote: ClassVar[str] = '"'
    text_type: ClassVar[str] = "VARCHAR"
    exact_quantiles: ClassVar[bool] = True
    """Whether the engine has an exact quantile aggregate; without one, printed SQL gets quantile
    windows' quantiles as literals computed from the data it was printed from."""
    sums_overflow_to_infinity: ClassVar[bool] = False
    """Whether a sum of DOUBLEs beyond the largest gives infinity (DuckDB, Spark), which a check of the
    sums reads after the fact, rather than stop the query with an error (PostgreSQL): then the largest
    |y| is checked before any sum of squares is taken, in a query of its own."""
    snapshot: ClassVar[tuple[str, ...] | None] = None
    """For a server cohortsql reaches through ADBC: the statements (in the server's own SQL) that make
    a new transaction read one snapshot of the data, run first in it (``()``: every transaction does);
    None when the server has no such transaction, and a call is refused rather than read data that
    changes between its queries."""
    identity_query: ClassVar[str | None] = None
    """For such a server: a query (its own SQL) of one row and column ``identity``, the server's own
    identity of the relation a quoted name (the ``{name}`` string literal) resolves to in the session,
    NULL when none does."""

    def code_outside_quotes(self, text: str, role: str) -> str:
        """The code of the caller's SQL `text` outside its string literals, quoted identifiers and
        comments, as this dialect's engine reads it (what a ``;`` or a parenthesis there means is the
        engine's); an unterminated quote or comment is a `CohortError` starting with `role`."""
        raise NotImplementedError

    def quote(self, identifier: str) -> str:
        """A column or table name as a quoted identifier (the only way names enter SQL); a name holding
        NUL, which SQL text cannot carry (C strings end there; PostgreSQL refuses it), is a `CohortError`."""
        _refuse_nul(identifier, "name")
        mark = self.identifier_quote
        return mark + identifier.replace(mark, mark * 2) + mark

    def quote_in_comment(self, identifier: str) -> str:
        """A name as a comment of printed SQL shows it: a JSON string of ASCII characters, so that no
        line break (``\\n``, ``\\r``, U+2028 ...) can end a ``--`` comment, and with ``/`` escaped, so that
        no ``*/`` can end a ``/* */`` one (a translator may turn one kind into the other)."""
        return json.dumps(identifier, ensure_ascii=True).replace("/", "\\/")

    def quote_path(self, name: str) -> str:
        """A possibly qualified table name (``schema.table``, parts quoted or not, as SQL writes it),
        each part quoted; text that is not such a name is a `CohortError`."""
        parts = self.name_parts(name)
        if parts is None:
            mark = self.identifier_quote
            raise CohortError(
                f"{name!r} is not a table name as SQL writes one; quote a part that holds spaces or other"
                f" characters, e.g. {mark}scores x{mark} or {mark}my schema{mark}.scores"
            )
        return ".".join(self.quote(part) for part in parts)

    def companion_name(self, name: str, label: str) -> str:
        """The table written beside table `name` for `label` (``scores`` -> ``scores_totals``): ``_label``
        appended to the name's last part, inside its quotes when that part is quoted (``"we""ird"`` ->
        ``"we""ird_totals"``), so that the companion is a name as SQL writes one whenever `name` is."""
        mark = self.identifier_quote
        return f"{name[:-1]}_{label}{mark}" if name.endswith(mark) else f"{name}_{label}"

    def fold(self, bare: str) -> str:
        """An unquoted name part as the engine stores it: DuckDB and Spark compare names in any case,
        PostgreSQL folds them to lower case, Snowflake to upper case."""
        return bare

    def name_parts(self, text: str) -> tuple[str, ...] | None:
        """The parts of a possibly qualified name as SQL reads it (``catalog.schema.table``; a part is a
        bare identifier, case-folded as the engine folds it, or quoted with `identifier_quote`, doubled
        inside), or None when `text` is not one such name (``scores x`` is a table and an alias to SQL,
        not a name)."""
        mark = self.identifier_quote
        parts: list[str] = []
        index = 0
        while True:
            if text.startswith(mark, index):
                end, part = index + 1, []
                while True:
                    close = text.find(mark, end)
                    if close < 0:
                        return None
                    part.append(text[end:close])
                    if text.startswith(mark, close + 1):  # a doubled quote stands for itself
                        part.append(mark)
                        end = close + 2
                        continue
                    break
                parts.append("".join(part))
                index = close + 1
            else:
                bare = _BARE_IDENTIFIER.match(text, index)
                if bare is None:
                    return None
                parts.append(self.fold(bare[0]))
                index = bare.end()
            if index == len(text):
                return tuple(parts) if 1 <= len(parts) <= 3 and all(parts) else None
            if text[index] != ".":
                return None
            index += 1

    def string(self, text: str) -> str:
        """A string literal."""
        _refuse_nul(text, "text")
        return "'" + text.replace("'", "''") + "'"

    def number(self, value: float) -> str:
        """A finite number as a DOUBLE literal that round-trips exactly."""
        value = float(value)
        if not math.isfinite(value):
            raise CohortError(f"cannot use the non-finite number {value} in SQL")
        return f"CAST({value!r} AS DOUBLE)"

    def is_nan(self, value: str) -> str:
        """Whether a floating-point value is NaN (NULL for NULL)."""
        return f"isnan({value})"

    def is_finite(self, value: str) -> str:
        """Whether a DOUBLE value is finite: false for NaN and the infinities (NULL for NULL)."""
        return f"abs({value}) < CAST('Infinity' AS DOUBLE)"

    def nan_as_null(self, column: str) -> str:
        """A column as DOUBLE with NaN read as NULL. Not ``nullif(x, 'NaN')``: on a Parquet column DuckDB
        2.0 drops that (the file's statistics leave NaN out, so it takes the column to have none) and a
        window's width came out NaN, which made every row similar."""
        value = f"CAST({column} AS DOUBLE)"
        return f"CASE WHEN {self.is_nan(value)} THEN NULL ELSE {value} END"

    def distinct_estimate(self, value: str) -> str:
        """An aggregate estimating how many distinct values `value` takes, in fixed memory where the
        engine has such an estimate (HyperLogLog)."""
        return f"approx_count_distinct({value})"

    def distinct_rows_estimate(self, columns: Sequence[str]) -> str:
        """An aggregate estimating how many distinct combinations the `columns` (SQL) take."""
        return self.distinct_estimate(self.row_hash(columns))

    def row_hash(self, columns: Sequence[str]) -> str:
        """One number per combination of the `columns` (SQL), the same for equal rows."""
        return f"hash({', '.join(columns)})"

    def optional_number(self, value: float | None) -> str:
        """A DOUBLE literal, or a typed NULL for a statistic of a column with no values."""
        return "CAST(NULL AS DOUBLE)" if value is None else self.number(value)

    def parameter(self, value: object) -> str:
        """A whole-table parameter as a literal of its own type (integers and decimals exact), NULL when missing."""
        return "CAST(NULL AS DOUBLE)" if value is None else self.literal(value)

    def literal(self, value: object) -> str:
        """A value of an id or a feature (integer, number, decimal, text, date, timestamp) as a literal."""
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return self.number(value)
        if isinstance(value, decimal.Decimal):
            exponent = value.as_tuple().exponent
            scale = -exponent if isinstance(exponent, int) and exponent < 0 else 0
            return f"CAST({self.string(str(value))} AS DECIMAL(38, {scale}))"
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, datetime.datetime):
            text = self.string(value.isoformat(sep=" "))
            return f"TIMESTAMP {text}" if value.tzinfo is None else self.instant(text)
        if isinstance(value, datetime.date):
            return f"DATE {self.string(value.isoformat())}"
        raise CohortError(f"cannot write the value {value!r} into SQL; use integers, numbers, text or dates")

    def instant(self, text: str) -> str:
        """A timestamp with its UTC offset (`text`, a string literal) as the instant it names. Not a
        TIMESTAMP literal: DuckDB and PostgreSQL read '2020-01-01 00:00:03+01:00' as 00:00:03 without a
        zone, and a target id of a column zoned Europe/Paris was not found (2026-11-29)."""
        return f"CAST({text} AS TIMESTAMPTZ)"

    def quantile_aggregate(self, expression: str, probability: float) -> str:
        """The engine's exact quantile aggregate, computed in DOUBLE."""
        raise NotImplementedError

    def epoch_days(self, expression: str) -> str:
        """A date as days since 1970-01-01 (an integer)."""
        raise NotImplementedError

    def epoch_micros(self, expression: str, *, time_zone: bool = False) -> str:
        """A timestamp as microseconds since 1970-01-01 (a BIGINT: differences are exact); `time_zone`:
        a timestamp with a time zone (an instant), whatever its precision."""
        raise NotImplementedError

    def md5_hash(self, text: str) -> str:
        """The md5 hash of `text`, in the form `md5_part` reads."""
        raise NotImplementedError

    def md5_part(self, hash_sql: str, part: int) -> str:
        """Part `part` (0-3) of an md5 hash as a DOUBLE: its bytes 4 part .. 4 part + 3 read as an
        unsigned little-endian 32-bit integer (the same number on every engine)."""
        raise NotImplementedError

    def scan_position(self) -> str:
        """Each row's 0-based position in the engine's scan order (standalone queries without an id)."""
        return "row_number() OVER () - 1"

    scan_order: ClassVar[str] = "the order in which the engine reads the table"

    def stable_row_number(self, columns: str) -> str:
        """0-based numbers of the rows of a relation the engine materializes, the same each time it is
        read: DuckDB stores the table, so its scan order serves."""
        return "row_number() OVER () - 1"

    def read_file(self, path: str, file_format: str) -> str:
        """A table expression reading a Parquet, CSV or JSON file."""
        return f"read_{file_format}({self.string(path)})"

    def failure(self, condition: str, message: str) -> str:
        """A DOUBLE that is NULL unless `condition` holds, where it stops the query with `message`:
        a text that is no number, cast to DOUBLE (every warehouse refuses the cast and quotes the
        text; the CASE depends on the data, so no planner folds the cast ahead of time)."""
        return f"CAST(CASE WHEN {condition} THEN {self.string(message)} END AS DOUBLE)"


def _refuse_nul(text: str, what: str) -> None:
    if "\0" in text:
        raise CohortError(f"the {what} {text!r} holds a NUL character, which SQL cannot carry: remove it")
