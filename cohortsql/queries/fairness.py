"""Rows grouped by a protected attribute: the fairness metrics' cells (rows counted by protected value,
decision and observed outcome) and the audit's measures over every row per protected value."""

from __future__ import annotations

from cohortsql.dialects import Dialect
from cohortsql.queries.measures import drawn, measure_sums
from cohortsql.queries.templates import template
from cohortsql.request.measures import Measures


def zero_or_one(value: str, *, boolean: bool) -> str:
    """1 where `value` (SQL) is 1 or true, 0 where it is 0 or false, else 2 (NULL included)."""
    if boolean:
        return f"CASE WHEN {value} THEN 1 WHEN NOT {value} THEN 0 ELSE 2 END"
    return f"CASE WHEN {value} = 1 THEN 1 WHEN {value} = 0 THEN 0 ELSE 2 END"


def fairness_cells(
    source: str,
    protected: str,
    prediction: str,
    *,
    threshold: float | None,
    prediction_is_boolean: bool,
    outcome: str | None,
    outcome_is_boolean: bool,
    weight: str | None,
    dialect: Dialect,
) -> str:
    """SELECT the cells (``level``, ``decision``, ``observed``, ``count``, ``weight``,
    ``weight_squared``) of `source`'s rows of positive weight: the decision is the `prediction` at or
    above `threshold`, or the prediction itself as 0/1 (or a boolean); ``observed`` the `outcome` as
    0/1, or 0 without one. Names are quoted here."""
    column = dialect.quote(prediction)
    if threshold is None:
        decision = zero_or_one(column, boolean=prediction_is_boolean)
    else:
        decision = f"CASE WHEN {column} >= {dialect.number(threshold)} THEN 1 ELSE 0 END"
    observed = "0" if outcome is None else zero_or_one(dialect.quote(outcome), boolean=outcome_is_boolean)
    weighed = "1.0" if weight is None else f"CAST({dialect.quote(weight)} AS DOUBLE)"
    return template("fairness_cells").format(
        level=dialect.quote(protected),
        decision=decision,
        observed=observed,
        weight=weighed,
        source=source,
        kept="TRUE" if weight is None else f"{weighed} > 0",
    )


def level_measures(subjects: str, protected: str, measures: Measures, dialect: Dialect) -> str:
    """SELECT ``level`` (each value of column `protected`), ``rows`` and the sums of every weighting's
    weight and weighted explained value over the rows of `subjects` (a SELECT of the subjects beside
    the data's own columns) with that value (see ``sql/level_measures.sql``); the bootstrap draws are
    the run's own (the same md5 of the same ids), so a replicate here and in the run reweighs each row
    alike."""
    return template("level_measures").format(
        level=dialect.quote(protected),
        sums=measure_sums(measures, "subjects"),
        subjects=drawn(f"({subjects}) AS rows_", measures, dialect),
    )
