"""SQL for warehouses cohortsql does not run itself: DuckDB's syntax, rendered with the warehouse's
own choices (`cohortsql.sql.dialects.TRANSPILED_DIALECTS`), translated by sqlglot (``pip install
'cohortsql[sql]'``). Comment lines (the query's header) are kept as they are."""

from __future__ import annotations

from cohortsql.errors import CohortError


def transpile(sql: str, dialect: str) -> str:
    """`sql`, written for DuckDB with `dialect`'s choices, in `dialect`'s syntax, its leading ``--``
    comment lines first."""
    try:
        import sqlglot
    except ImportError:
        raise CohortError(f"dialect {dialect!r} needs sqlglot: pip install 'cohortsql[sql]'") from None
    lines = sql.splitlines()
    comments = "\n".join(line for line in lines if line.startswith("--"))
    body = "\n".join(line for line in lines if not line.startswith("--"))
    return comments + "\n" + sqlglot.transpile(body, read="duckdb", write=dialect, pretty=True)[0]
