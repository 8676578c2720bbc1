"""The SQL templates of ``sql/``: one SELECT per named step, filled in by `cohortsql.queries`.

Names and values become SQL only through a `cohortsql.dialects.Dialect` (quoting and literals);
the caller's own SQL is checked by `cohortsql.request.user_sql`.
"""

from __future__ import annotations

import functools
from pathlib import Path


def _template_directories() -> tuple[Path, ...]:
    here = Path(__file__).resolve().parent
    # In a wheel the templates are packaged as cohortsql/queries/sql; in a source checkout they are
    # the repository's top-level sql/ folder.
    return (here / "sql", here.parent.parent / "sql")


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
