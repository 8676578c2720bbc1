"""Spark SQL, which cohortsql writes natively and runs (classic and Connect sessions)."""

from __future__ import annotations

from collections.abc import Sequence

from cohortsql.dialects.base import Dialect, _refuse_nul
from cohortsql.errors import CohortError


class SparkDialect(Dialect):
    name = "spark"
    identifier_quote = "`"
    text_type = "STRING"
    sums_overflow_to_infinity = True

    def string(self, text: str) -> str:
        # Spark reads backslash escapes inside string literals.
        _refuse_nul(text, "text")
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

    def instant(self, text: str) -> str:
        return f"TIMESTAMP {text}"  # Spark's TIMESTAMP is an instant: it applies the offset

    def quantile_aggregate(self, expression: str, probability: float) -> str:
        return f"percentile(CAST({expression} AS DOUBLE), {self.number(probability)})"

    def epoch_days(self, expression: str) -> str:
        return f"unix_date({expression})"

    def epoch_micros(self, expression: str, *, time_zone: bool = False) -> str:
        return f"unix_micros({expression})"

    def md5_hash(self, text: str) -> str:
        return f"md5({text})"

    def md5_part(self, hash_sql: str, part: int) -> str:
        # md5() gives hexadecimal text, two digits per byte: the part's four bytes in reverse order.
        digits = ", ".join(f"substr({hash_sql}, {8 * part + 2 * byte + 1}, 2)" for byte in reversed(range(4)))
        return f"CAST(conv(concat({digits}), 16, 10) AS DOUBLE)"

    def row_hash(self, columns: Sequence[str]) -> str:
        # 64 bits (hash() gives 32): a sketch of distinct rows reads them as uniform over 2^64.
        return f"xxhash64({', '.join(columns)})"

    def scan_position(self) -> str:
        # Spark refuses row_number() without an order; monotonically increasing ids follow its scan.
        return "row_number() OVER (ORDER BY monotonically_increasing_id()) - 1"

    scan_order = "Spark's scan order (file order for one file; pass an id for a stable key)"

    def stable_row_number(self, columns: str) -> str:
        # A cached view may be computed again, its rows in another order: number them by their values.
        return f"row_number() OVER (ORDER BY {columns}) - 1"

    def failure(self, condition: str, message: str) -> str:
        return f"CAST(CASE WHEN {condition} THEN raise_error({self.string(message)}) END AS DOUBLE)"

    def code_outside_quotes(self, text: str, role: str) -> str:
        """`text` with string literals, quoted identifiers and comments blanked out, reading backslashes
        inside string literals as escapes (as Spark does)."""
        out = []
        index, length = 0, len(text)
        while index < length:
            char = text[index]
            if char in "'\"`":
                end = index + 1
                while end < length:
                    if char == "'" and text[end] == "\\":
                        end += 2
                        continue
                    if text[end] == char:
                        if end + 1 < length and text[end + 1] == char:  # a doubled quote stands for itself
                            end += 2
                            continue
                        break
                    end += 1
                if end >= length:
                    raise CohortError(f"{role} {text!r} has an unterminated quote {char}")
                out.append(" ")
                index = end + 1
            elif text.startswith("--", index):
                end = text.find("\n", index)
                index = length if end < 0 else end
            elif text.startswith("/*", index):
                end = text.find("*/", index + 2)
                if end < 0:
                    raise CohortError(f"{role} {text!r} has an unterminated comment")
                out.append(" ")
                index = end + 2
            else:
                out.append(char)
                index += 1
        return "".join(out)

    def read_file(self, path: str, file_format: str) -> str:
        if file_format != "parquet":
            raise CohortError(
                f"name the table the Spark SQL reads (--table): Spark reads {file_format} files without a header"
            )
        return f"parquet.{self.quote(path)}"


SPARK = SparkDialect()
