"""Linear-interpolated quantiles (numpy's default, DuckDB's quantile_cont, Spark's percentile) from the
few order statistics a sort that spills brings back, unweighted or with case weights read as
repetitions. Pure Python.
"""

from __future__ import annotations

import math

from cohortsql._typing import Row


def interpolated_quantile(rows: list[Row], probability: float) -> float | None:
    """The linear-interpolated quantile (numpy's default, DuckDB's quantile_cont, Spark's percentile)
    from rows of ``order_index``, ``value`` and ``n`` holding the order statistics it needs."""
    if not rows:
        return None
    values = {row["order_index"]: float(row["value"]) for row in rows}
    position = (rows[0]["n"] - 1) * probability
    low = math.floor(position)
    lower = values[low]
    upper = values.get(low + 1, lower)
    return lower + (upper - lower) * (position - low)


def weighted_quantile(rows: list[Row], probability: float) -> float | None:
    """The linear-interpolated quantile of the table with every row repeated `weight` times, from rows
    of ``value``, ``before``, ``upto`` (the positions it holds) and ``total`` (see ``sql/weighted_order_statistics.sql``)."""
    if not rows:
        return None
    position = (rows[0]["total"] - 1) * probability
    low = math.floor(position)

    def at(place: float) -> float | None:
        return next((float(row["value"]) for row in rows if row["before"] <= place < row["upto"]), None)

    lower = at(low)
    if lower is None:
        raise RuntimeError(f"no row holds position {low} of the weighted order statistics")
    upper = at(low + 1)
    upper = lower if upper is None else upper
    return lower + (upper - lower) * (position - low)
