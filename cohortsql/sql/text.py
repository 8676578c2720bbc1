"""The SQL templates of ``sql/``, and the checks on SQL text that callers supply.

Names and values become SQL only through a `cohortsql.sql.dialects.Dialect` (quoting and literals).
The caller's own SQL enters in three places: a ``targets`` predicate, a ``sql:`` similarity and a
query given as the data. Each must be one expression (or one query): `check_expression` and
`check_query` refuse text that would end the statement and start another.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from cohortsql.errors import CohortError


def _template_directories() -> tuple[Path, ...]:
    here = Path(__file__).resolve().parent
    # In a wheel the templates are packaged as cohortsql/sql/templates; in a source checkout they are
    # the repository's top-level sql/ folder.
    return (here / "templates", here.parent.parent / "sql")


@functools.cache
def template(name: str, *, keep_comments: bool = False) -> str:
    """The text of the SQL template `sql/<name>.sql`, by default without its comment lines."""
    for directory in _template_directories():
        path = directory / f"{name}.sql"
        if path.is_file():
            lines = path.read_text().splitlines()
            body = [line for line in lines if keep_comments or not line.lstrip().startswith("--")]
            return "\n".join(body).strip()
    raise FileNotFoundError(f"SQL template {name}.sql is missing from the cohortsql installation")


def _code_outside_quotes(text: str, backslash_escapes: bool) -> str:
    """`text` with string literals, quoted identifiers and comments blanked out.

    Engines disagree on backslashes inside string literals (Spark reads them as escapes, DuckDB
    does not), so callers scan under both readings."""
    out = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char in "'\"`":
            end = index + 1
            while end < length:
                if backslash_escapes and char == "'" and text[end] == "\\":
                    end += 2
                    continue
                if text[end] == char:
                    if end + 1 < length and text[end + 1] == char:  # doubled quote: an escaped quote
                        end += 2
                        continue
                    break
                end += 1
            if end >= length:
                if backslash_escapes:  # the other reading decides; this one sees the rest as quoted
                    break
                raise CohortError(f"unterminated quote {char} in the SQL {text!r}")
            out.append(" ")
            index = end + 1
        elif text.startswith("--", index):
            end = text.find("\n", index)
            index = length if end < 0 else end
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            if end < 0:
                raise CohortError(f"unterminated comment in the SQL {text!r}")
            out.append(" ")
            index = end + 2
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _check_one_statement(text: str, role: str, *, expression: bool) -> None:
    if not isinstance(text, str) or not text.strip():
        raise CohortError(f"{role} must be SQL text, got {text!r}")
    for backslash_escapes in (False, True):
        code = _code_outside_quotes(text, backslash_escapes)
        if expression:
            if ";" in code:
                raise CohortError(f"{role} {text!r} holds a ';': it must be one SQL expression, not statements")
            depth = 0
            for char in code:
                depth += {"(": 1, ")": -1}.get(char, 0)
                if depth < 0:
                    break
            if depth != 0:
                raise CohortError(f"{role} {text!r} has unbalanced parentheses")
        elif ";" in code.rstrip().rstrip(";"):
            raise CohortError(f"{role} holds more than one statement; give one SELECT query")


def check_expression(text: str, role: str) -> str:
    """`text` (a ``targets`` predicate, a ``sql:`` similarity) when it is one SQL expression."""
    _check_one_statement(text, role, expression=True)
    return text.strip()


_QUERY_START = re.compile(r"^\s*\(*\s*(select|with|from|values)\b", re.IGNORECASE)
_COMMANDS = re.compile(
    r"\b(insert|update|delete|merge|create|drop|alter|attach|detach|copy|call|pragma|install|load|export|import"
    r"|truncate|grant|revoke|vacuum|checkpoint|set|reset|use)\b",
    re.IGNORECASE,
)
"""Words that start statements other than queries: a query given as data may not hold them outside quotes."""


def is_query(text: str) -> bool:
    """Whether `text` reads as a SQL query rather than a path or a table name."""
    return bool(_QUERY_START.match(text))


def check_query(text: str, role: str = "the data query") -> str:
    """`text` without a trailing ';' when it is exactly one query (SELECT, WITH, FROM or VALUES)."""
    if not is_query(text):
        raise CohortError(f"{role} must be a SELECT query, got {text[:60]!r}")
    _check_one_statement(text, role, expression=False)
    for backslash_escapes in (False, True):
        command = _COMMANDS.search(_code_outside_quotes(text, backslash_escapes))
        if command:
            raise CohortError(
                f"{role} may only read data, but it holds {command[0].upper()!r} (quote a column of that name)"
            )
    return text.strip().rstrip(";").strip()
