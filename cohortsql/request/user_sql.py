"""Checks of the caller's own SQL, which enters in three places: a ``targets`` predicate, a ``sql:``
similarity and a query given as the data. Each must be one expression (or one query) that cannot end
the statement it is placed in and start another.

The text is read the way each engine reads it, by each dialect's own reading
(`cohortsql.dialects.Dialect.code_outside_quotes`: DuckDB's lexer, Spark's backslash escapes); a data
query is checked by the engine that runs it, with its own parser (`Engine.check_query`).
"""

from __future__ import annotations

import re
from pathlib import Path

from cohortsql.dialects import NATIVE_DIALECTS
from cohortsql.errors import CohortError


def _readings(text: str, role: str) -> list[str]:
    """The code of `text` outside quotes and comments, as each engine that cohortsql renders SQL for
    reads it (the dialects it writes natively; the translated ones read it as DuckDB does first)."""
    if not isinstance(text, str) or not text.strip():
        raise CohortError(f"{role} must be SQL text, got {text!r}")
    return [dialect.code_outside_quotes(text, role) for dialect in NATIVE_DIALECTS.values()]


def check_expression(text: str, role: str) -> str:
    """`text` (a ``targets`` predicate, a ``sql:`` similarity) when, as every engine reads it, it is one
    SQL expression: no ``;`` and its parentheses balanced, never closing one it did not open. Text
    that may end in a line comment gets a line break, so that the comment ends where the expression does."""
    for code in _readings(text, role):
        if ";" in code:
            raise CohortError(f"{role} {text!r} holds a ';': it must be one SQL expression, not statements")
        depth = 0
        for char in code:
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth < 0:
                raise CohortError(f"{role} {text!r} has unbalanced parentheses (it closes one it did not open)")
        if depth != 0:
            raise CohortError(f"{role} {text!r} has unbalanced parentheses")
    return text.strip() + ("\n" if "--" in text else "")


_QUERY_START = re.compile(r"^\s*\(*\s*(select|with|from|values)(\s|\()", re.IGNORECASE)


def is_query(text: str) -> bool:
    """Whether `text` reads as a SQL query rather than a path or a table name: it starts with a query's
    first word and a space (``select.parquet`` and ``from/x.parquet`` are paths), and names no existing file."""
    return bool(_QUERY_START.match(text)) and not _names_a_file(text)


def _names_a_file(text: str) -> bool:
    try:
        return Path(text).exists()
    except (OSError, ValueError):  # too long for a file name, or holding a NUL byte
        return False


def query_text(text: object, role: str) -> str:
    """`text` without a trailing ';' when it reads as a query (see `is_query`); the engine that runs it
    then checks with its own parser that it is one query that only reads data (`Engine.check_query`)."""
    if not isinstance(text, str) or not is_query(text):
        raise CohortError(f"{role} must be a SELECT query, got {str(text)[:60]!r}")
    return text.strip().rstrip(";").strip()
