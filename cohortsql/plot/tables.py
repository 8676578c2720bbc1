"""What the figures draw from: a result, or the files `cohortsql shapley --out` wrote, read once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from cohortsql.errors import CohortError
from cohortsql.formats.files import one_outcome, read_frame, sibling_path
from cohortsql.results.baseline import BaselineShapleyResult
from cohortsql.results.cohort import CohortShapleyResult
from cohortsql.results.outcomes import CohortShapleyResults

Source = CohortShapleyResult | CohortShapleyResults | BaselineShapleyResult | str | os.PathLike[str]
"""A result, or the file `cohortsql shapley --out` wrote. Baseline Shapley results draw like cohort
Shapley ones, with f(x_t) for the cohort mean and the mean baseline prediction for the mean. A result
of several explained columns draws one of them (``outcome=``; ``--outcome`` on the command line)."""


class Tables(NamedTuple):
    """The three tables of a local result: values, per-target totals, refinement paths."""

    local: pl.DataFrame
    totals: pl.DataFrame
    paths: pl.DataFrame


def read_tables(source: Source, *, paths: bool = True, outcome: str | None = None) -> Tables:
    """The tables of a result object, or of the files ``cohortsql shapley --out FILE`` wrote (the
    refinement paths only when `paths`; an empty frame otherwise), of one explained column."""
    if isinstance(source, CohortShapleyResults):
        source = source[chosen_outcome(source.outcomes, outcome)]
    elif outcome is not None and isinstance(source, (CohortShapleyResult, BaselineShapleyResult)):
        source_outcome = getattr(source, "outcome", None)
        if outcome != source_outcome:
            raise CohortError(f"this result explains {source_outcome!r}, not {outcome!r}")
    if isinstance(source, CohortShapleyResult):
        return Tables(source.local, source.totals, source.paths if paths else pl.DataFrame())
    if isinstance(source, BaselineShapleyResult):
        totals = source.totals.with_columns(cohort_mean=pl.col("prediction"))
        return Tables(source.local, totals, pl.DataFrame(schema={"id": totals["id"].dtype, "feature": pl.String}))
    path = Path(source)
    role = f"plot, from the files `cohortsql shapley --out {path.name}` writes"
    labels = ("", "totals", "paths") if paths else ("", "totals")
    frames = [read_frame(sibling_path(path, label) if label else path, role) for label in labels]
    return Tables(*one_outcome(frames, outcome, repr(str(path))), *([] if paths else [pl.DataFrame()]))


def chosen_outcome(outcomes: tuple[str, ...], outcome: str | None) -> str:
    """`outcome`, or the only one; a `CohortError` names them when there are several and none was chosen."""
    if outcome is None and len(outcomes) > 1:
        raise CohortError(
            f"this result explains {len(outcomes)} columns ({', '.join(outcomes)}): draw one with outcome="
        )
    return outcomes[0] if outcome is None else outcome


def pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise CohortError("plots need matplotlib: pip install 'cohortsql[plot]'") from None
    return plt
