"""Checks of the caller's own SQL, which enters in three places: a ``targets`` predicate, a ``sql:``
similarity and a query given as the data. Each must be one expression (or one query) that cannot end
the statement it is placed in and start another.

The text is read the way each engine reads it. DuckDB's own lexer (`duckdb.tokenize`) and parser
(`duckdb.extract_statements`) know every quoting rule of DuckDB's SQL (``'...'``, ``E'...'``,
``$$...$$`` and ``$tag$...$tag$``, quoted identifiers, comments), which a hand-written scanner would
not: a dollar-quoted string that holds a quote once hid a ``COPY`` statement from one. Spark reads
backslashes inside string literals as escapes, so the text is also scanned under that reading.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from cohortsql.errors import CohortError

_DOLLAR_TAG = re.compile(r"^\$[A-Za-z_]*\$")


def _duckdb_tokens(text: str) -> list[tuple[str, str]]:
    """(token text, token kind) as DuckDB's lexer splits `text`; kinds: identifier, numeric_const,
    string_const, operator, keyword, comment."""
    import duckdb

    tokens = duckdb.tokenize(text)
    starts = [position for position, _ in tokens]
    kinds = [str(kind).rsplit(".", 1)[-1] for _, kind in tokens]
    ends = [*starts[1:], len(text)]
    return [(text[start:end].strip(), kind) for start, end, kind in zip(starts, ends, kinds)]


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


def _duckdb_code(text: str, role: str) -> str:
    """The operators of `text` as DuckDB's lexer reads it (strings, identifiers and comments left out)."""
    code = []
    for token, kind in _duckdb_tokens(text):
        if _unterminated(token, kind):
            raise CohortError(f"{role} {text!r} has an unterminated quote or comment")
        if kind == "operator":
            code.append(token)
    return " ".join(code)


def _spark_code(text: str, role: str) -> str:
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


def _readings(text: str, role: str) -> list[str]:
    """The code of `text` outside quotes and comments, as DuckDB reads it and as Spark does."""
    if not isinstance(text, str) or not text.strip():
        raise CohortError(f"{role} must be SQL text, got {text!r}")
    return [_duckdb_code(text, role), _spark_code(text, role)]


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
_COMMANDS = re.compile(
    r"\b(insert|update|delete|merge|create|drop|alter|attach|detach|copy|call|pragma|install|load|export|import"
    r"|truncate|grant|revoke|vacuum|checkpoint|set|reset|use|begin|declare|execute)\b",
    re.IGNORECASE,
)
"""Words that start statements other than queries: a Spark data query may not hold them outside quotes."""


def is_query(text: str) -> bool:
    """Whether `text` reads as a SQL query rather than a path or a table name: it starts with a query's
    first word and a space (``select.parquet`` and ``from/x.parquet`` are paths), and names no existing file."""
    return bool(_QUERY_START.match(text)) and not _names_a_file(text)


def _names_a_file(text: str) -> bool:
    try:
        return Path(text).exists()
    except (OSError, ValueError):  # too long for a file name, or holding a NUL byte
        return False


def check_query(text: str, role: str = "the data query", *, engine: Literal["duckdb", "spark"] = "duckdb") -> str:
    """`text` without a trailing ';' when it is exactly one query (SELECT, WITH, FROM or VALUES), as
    the `engine` that runs it reads it: DuckDB's parser must find one SELECT statement; for Spark,
    the text outside quotes (backslash escapes read as Spark does) holds no ``;`` and no word that
    starts another kind of statement."""
    if not isinstance(text, str) or not is_query(text):
        raise CohortError(f"{role} must be a SELECT query, got {str(text)[:60]!r}")
    query = text.strip().rstrip(";").strip()
    if engine == "duckdb":
        import duckdb

        try:
            statements = duckdb.extract_statements(query)
        except duckdb.Error as error:
            raise CohortError(f"{role} is not valid SQL: {str(error).splitlines()[0]}") from None
        if len(statements) != 1:
            raise CohortError(f"{role} holds more than one statement; give one SELECT query")
        if statements[0].type != duckdb.StatementType.SELECT:
            raise CohortError(f"{role} may only read data, but it holds {statements[0].type.name!r}")
        return query
    code = _spark_code(query, role)
    if ";" in code:
        raise CohortError(f"{role} holds more than one statement; give one SELECT query")
    command = _COMMANDS.search(code)
    if command:
        raise CohortError(
            f"{role} may only read data, but it holds {command[0].upper()!r} (quote a column of that name)"
        )
    return query
