"""The only places where names and values become SQL text, and where the `sql/` templates are read.

Identifiers are always quoted by `quote_identifier`; numbers are rendered by `render_number`;
strings by `render_string`. Custom `sql:` similarity predicates are the user's own SQL and the only
raw text that enters a query.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

from cohortsql.errors import CohortError


def quote_identifier(name: str) -> str:
    """Render a column or table name as a double-quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def render_number(value: float) -> str:
    """Render a finite number as a DOUBLE literal that round-trips exactly."""
    value = float(value)
    if not math.isfinite(value):
        raise CohortError(f"cannot use the non-finite number {value} in a similarity window")
    return f"CAST({value!r} AS DOUBLE)"


def render_string(value: str) -> str:
    """Render a string as a single-quoted SQL literal."""
    return "'" + value.replace("'", "''") + "'"


def render_literal(value: object) -> str:
    """Render an id value (integer, number or text) as a SQL literal."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise CohortError(f"cannot write the id {value!r} into SQL; ids must be integers, numbers or text")
    if isinstance(value, int):
        return str(value)
    return render_number(value) if isinstance(value, float) else render_string(value)


def _template_directories() -> tuple[Path, ...]:
    package = Path(__file__).resolve().parent
    # In a wheel the templates are packaged as cohortsql/sql; in a source checkout they are ../sql.
    return (package / "sql", package.parent / "sql")


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
