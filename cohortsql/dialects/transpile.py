"""SQL for warehouses cohortsql does not run itself: DuckDB's syntax, rendered with the warehouse's
own choices (`cohortsql.dialects.TRANSPILED_DIALECTS`), translated by sqlglot (``pip install
'cohortsql[sql]'``). Comment lines (the query's header) are kept as they are."""

from __future__ import annotations

from cohortsql.dialects.base import Dialect
from cohortsql.dialects.duckdb import DuckDBDialect
from cohortsql.errors import CohortError


def transpile(sql: str, dialect: str) -> str:
    """`sql`, written for DuckDB with `dialect`'s choices, in `dialect`'s syntax, its leading ``--``
    comment lines first; it must be one statement."""
    try:
        import sqlglot
    except ImportError:
        raise CohortError(f"dialect {dialect!r} needs sqlglot: pip install 'cohortsql[sql]'") from None
    lines = sql.split("\n")  # not splitlines: a name may hold \r or U+2028, which it would cut
    leading = next((index for index, line in enumerate(lines) if not line.startswith("--")), len(lines))
    comments, body = "\n".join(lines[:leading]), "\n".join(lines[leading:])
    statements = sqlglot.transpile(body, read="duckdb", write=dialect, pretty=True)
    if len(statements) != 1:  # cohortsql writes one statement: anything else is text that escaped its quoting
        raise CohortError(f"the query for {dialect} is not one statement; report this as a bug of cohortsql")
    return comments + "\n" + statements[0]


class TranspiledDialect(DuckDBDialect):
    """A warehouse cohortsql prints SQL for but does not run itself: the SQL is rendered in DuckDB's
    syntax, with this class's choices wherever sqlglot would turn a DuckDB function into one the
    warehouse lacks, then transpiled (`cohortsql.dialects.transpile`)."""

    failure = Dialect.failure  # PostgreSQL has no error function a query can call
    is_finite = Dialect.is_finite  # PostgreSQL's isfinite takes dates and timestamps, not numbers
    sums_overflow_to_infinity = False  # PostgreSQL stops an overflowing sum with an error
    snapshot = Dialect.snapshot  # none, unless the warehouse's dialect says how (PostgreSQL does)

    def md5_hash(self, text: str) -> str:
        return f"md5({text})"  # hexadecimal text on every warehouse

    def md5_part(self, hash_sql: str, part: int) -> str:
        # Each hexadecimal digit's value is its place in '0123456789abcdef' (strpos: no warehouse-specific
        # conversion of hexadecimal text); byte 4 part + k weighs 256^k (little-endian), as on DuckDB.
        digits = []
        for byte in range(4):
            for half, weight in ((0, 16), (1, 1)):
                position = 2 * (4 * part + byte) + half + 1
                digit = f"strpos('0123456789abcdef', substr({hash_sql}, {position}, 1)) - 1"
                digits.append(f"CAST({digit} AS BIGINT) * {weight * 256**byte}")
        return f"CAST({' + '.join(digits)} AS DOUBLE)"

    def is_nan(self, value: str) -> str:
        # sqlglot turns isnan into IS_NAN, which PostgreSQL and Snowflake lack; both (and DuckDB) hold NaN = NaN.
        return f"{value} = CAST('NaN' AS DOUBLE)"
