"""The fairness metrics' one query: rows counted by protected value, decision and observed outcome."""

from __future__ import annotations

from cohortsql.dialects import Dialect
from cohortsql.queries.templates import template


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
