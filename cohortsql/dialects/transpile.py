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

    def nan_as_null(self, column: str) -> str:
        # sqlglot turns isnan into IS_NAN, which PostgreSQL and Snowflake lack; both (and DuckDB) hold NaN = NaN.
        value = f"CAST({column} AS DOUBLE)"
        return f"CASE WHEN {value} = CAST('NaN' AS DOUBLE) THEN NULL ELSE {value} END"
