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


def _template_directories() -> tuple[Path, ...]:
    package = Path(__file__).resolve().parent
    # In a wheel the templates are packaged as cohortsql/sql; in a source checkout they are ../sql.
    return (package / "sql", package.parent / "sql")


@functools.cache
def template(name: str) -> str:
    """The text of the SQL template `sql/<name>.sql`, with its leading comment lines removed."""
    for directory in _template_directories():
        path = directory / f"{name}.sql"
        if path.is_file():
            lines = path.read_text().splitlines()
            body = [line for line in lines if not line.lstrip().startswith("--")]
            return "\n".join(body).strip()
    raise FileNotFoundError(f"SQL template {name}.sql is missing from the cohortsql installation")
