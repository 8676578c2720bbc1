"""The caller's SQL as sqlglot reads it, for an engine without a parser of its own in this process (a
warehouse): one query that only reads data, and the tables it names."""

from __future__ import annotations

from cohortsql.errors import CohortError


def checked_query(query: str, role: str, dialect: str, server: str) -> str:
    """`query` when sqlglot's parser for `dialect` reads one query, with no statement that writes inside
    it (a data-modifying CTE, ``SELECT ... INTO``); else a `CohortError` that starts with `role`. The
    server parses it again when cohortsql makes it a view."""
    import sqlglot
    from sqlglot import expressions

    try:
        statements = sqlglot.parse(query, read=dialect)
    except sqlglot.errors.SqlglotError as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise CohortError(f"{role} is not valid SQL for {server}: {first}") from None
    trees = [statement for statement in statements if statement is not None]
    if len(trees) != 1:
        raise CohortError(f"{role} holds more than one statement; give one SELECT query")
    tree = trees[0]
    writes = (expressions.DML, expressions.Create, expressions.Drop, expressions.Alter, expressions.Command)
    written = next((node for node in tree.walk() if isinstance(node, writes)), None)
    if tree.find(expressions.Into) is not None:
        raise CohortError(f"{role} may only read data, but it holds 'SELECT INTO' (which creates a table)")
    if not isinstance(tree, expressions.Query) or written is not None:
        raise CohortError(f"{role} may only read data, but it holds {type(written or tree).__name__.upper()!r}")
    return query


def tables_named(query: str, dialect: str) -> tuple[str, ...]:
    """The tables and views `query` names (``schema.table`` when qualified; its CTEs left out), as
    sqlglot reads `dialect`; none when it cannot read the query."""
    import sqlglot
    from sqlglot import expressions

    try:
        tree = sqlglot.parse_one(query, read=dialect)
    except sqlglot.errors.SqlglotError:
        return ()
    ctes = {cte.alias_or_name for cte in tree.find_all(expressions.CTE)}
    return tuple(
        ".".join(part.name for part in table.parts)
        for table in tree.find_all(expressions.Table)
        if table.name not in ctes
    )
