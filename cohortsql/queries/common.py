"""What every query shares: the aliases of subject and target rows, and small list renderers."""

from __future__ import annotations

from collections.abc import Mapping

from cohortsql.dialects import Dialect

SUBJECT_ALIAS = "s"


TARGET_ALIAS = "t"


def ordinals(count: int) -> str:
    return ", ".join(str(position) for position in range(1, count + 1))


def select_list(aggregates: Mapping[str, str], dialect: Dialect) -> str:
    return ",\n    ".join(f"{sql} AS {dialect.quote(alias)}" for alias, sql in aggregates.items())
