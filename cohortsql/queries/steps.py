"""Named steps: the SELECTs a computation is made of, each reading those before it by name. The
library creates each as a relation of its own; the self-contained query `cohortsql sql` prints
renders them as the CTEs of one ``WITH`` (the pattern of Splink's ``CTEPipeline``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class Step(NamedTuple):
    """A named SELECT: the library creates it as a relation, the self-contained query as a CTE."""

    name: str
    select: str


def with_query(steps: Sequence[Step], result: str) -> str:
    """The steps as one statement: ``WITH a AS (...), b AS (...) <result>``, each step reading those before it."""
    ctes = ",\n".join(f"{step.name} AS (\n{step.select}\n)" for step in steps)
    return f"WITH {ctes}\n{result}"
