"""SQL for warehouses cohortsql does not run itself: DuckDB's syntax, rendered with the warehouse's
own choices (`cohortsql.sql.dialects.TRANSPILED_DIALECTS`), translated by sqlglot (``pip install
'cohortsql[sql]'``). Comment lines (the query's header) are kept as they are."""

from __future__ import annotations

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
