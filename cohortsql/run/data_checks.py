"""The checks of a call's data before any value is computed: the targets' condition, rows at all, case
weights (the relation of the rows they keep), explained values and ids, sums that overflow a DOUBLE and
powers that underflow one. Each refusal is one `CohortError` naming the column or value."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from cohortsql import queries
from cohortsql._typing import Row
from cohortsql.engines.base import Engine, fetch_record
from cohortsql.errors import CohortError
from cohortsql.run.table_statistics import TableStatistics


def check_condition(engine: Engine, relation: str, predicate: str) -> None:
    """The ``targets`` predicate reads the data's columns and is true or false (not a number or text,
    which an engine might read as true)."""
    schema = engine.fetch_arrow(
        queries.targets.predicate_type(relation, predicate), context=f"reading the data with targets {predicate!r}"
    ).schema
    kind = schema.field(0).type
    if not (pa.types.is_boolean(kind) or pa.types.is_null(kind)):
        raise CohortError(
            f"targets {predicate!r} must be a true/false condition over the data's columns; it gives {kind}"
        )


def check_not_empty(engine: Engine, relation: str) -> None:
    """Refuse data without rows, in those words."""
    row = fetch_record(engine, queries.statistics.has_rows(relation), context="reading the data")
    if not row["rows"]:
        raise CohortError("the data has no rows; cohort Shapley needs at least one subject")


SMALLEST_POWER = 1e-280
"""The highest power of |y - pilot| a run computes must reach this at the column's largest |y - pilot|:
nearer DOUBLE's smallest normal numbers (2.2e-308) its powers lose their digits (or vanish). Every run
that explains a column computes its squares (squared cohort Shapley values, Shapley effects, the
variance), so a column whose |y - pilot| stays below 1e-140 is refused, with the factor that rescales it."""


def rescaling_factor(largest: float) -> str:
    """The power of ten that brings a column's largest |y - pilot| to between 1 and 10, as text (``1e+170``)."""
    return f"1e{-math.floor(math.log10(largest)):+d}"


def _rescaled(outcome: str, largest: float) -> str:
    factor = rescaling_factor(largest)
    return (
        f"multiply {outcome!r} by {factor} (every value scales with it, squared ones with its square; shares"
        " and rankings do not change)"
    )


def check_powers_keep_their_digits(statistics: Row, outcomes: Sequence[str], powers: Sequence[int]) -> None:
    """Refuse an explained column so small in spread that the powers a run computes of it underflow:
    its squares at least (squared values, effects, the variance), and the higher powers a game reads,
    by each column's largest |y - pilot| (``largest:<index>`` of the statistics row)."""
    highest = max([2, *powers])
    for index, outcome in enumerate(outcomes):
        largest = statistics.get(f"largest:{index}")
        if largest is not None and 0 < float(largest) < SMALLEST_POWER ** (1 / highest):
            name = (
                "squares (squared cohort Shapley values, Shapley effects)" if highest == 2 else f"powers of {highest}"
            )
            raise CohortError(
                f"the explained column {outcome!r} varies by about {float(largest):.1g}: its {name} underflow a"
                f" DOUBLE and lose their digits; {_rescaled(outcome, float(largest))}"
            )


def check_finite(
    statistics: TableStatistics,
    row: Row,
    outcomes: Sequence[str],
    weight: str | None,
    powers: Sequence[int],
) -> None:
    """Refuse sums that overflowed a DOUBLE (weights near 1e308, or their products with y^2) rather
    than explain with NaN, naming the column and the factor that rescales it. A higher power's own
    variance (a sum of y^4) is never used: it may overflow."""
    variances = [variance for index, variance in enumerate(statistics.variances) if powers[index % len(powers)] == 1]
    sums = [statistics.total_weight, *statistics.centred_means, *variances]
    if all(np.isfinite(sums)):
        return
    if weight is not None and not math.isfinite(statistics.total_weight):
        raise overflowing_weights(weight)
    for index, outcome in enumerate(outcomes):
        largest = row.get(f"largest:{index}")
        if largest is not None and math.isfinite(float(largest)) and float(largest) > 1:
            raise CohortError(
                f"the explained column {outcome!r} reaches about {float(largest):.1g}: its sums of squares overflow"
                f" a DOUBLE; {_rescaled(outcome, float(largest))}"
            )
    if weight is not None:
        raise overflowing_weights(weight)
    raise CohortError(
        f"the explained columns {list(outcomes)} overflow a DOUBLE in their sums of squares; rescale them"
    )


def check_squares_fit(outcomes: Sequence[str], largest: Sequence[float | None]) -> None:
    """Refuse, before any sum is taken, an explained column whose squares overflow a DOUBLE (its largest
    finite |y|, `largest`, read with its pilot): an engine that stops an overflowing sum with an error
    (PostgreSQL) would otherwise say only "overflow", and one that gives infinity would explain with NaN."""
    for outcome, size in zip(outcomes, largest):
        if size is not None and math.isfinite(size) and size > SQUARES_FIT_BELOW:
            raise CohortError(
                f"the explained column {outcome!r} reaches about {size:.1g}: its sums of squares overflow"
                f" a DOUBLE; {_rescaled(outcome, size)}"
            )


SQUARES_FIT_BELOW = math.sqrt(float(np.finfo(np.float64).max)) / 2
"""Beyond this |y|, (y - pilot)^2 may overflow a DOUBLE (|y - pilot| reaches 2 |y|)."""


def overflowing_weights(weight: str) -> CohortError:
    return CohortError(
        f"weight column {weight!r}: its sums (with the explained values) overflow a DOUBLE;"
        " divide the weights by a constant (only their ratios matter)"
    )


def positive_rows(engine: Engine, source: str, weight: str, id_sql: str, id: str | None) -> str:
    """Check the case-weight column and return the relation of the rows of positive weight."""
    checks = fetch_record(
        engine,
        queries.statistics.weight_checks(source, weight, id_sql, engine.dialect),
        context=f"checking weight column {weight!r}",
    )
    if checks["bad_weights"]:
        where = "row" if id is None else f"{id} ="
        raise CohortError(
            f"weight column {weight!r} has {checks['bad_weights']} negative, NULL, NaN or infinite values"
            f" (the first at {where} {checks['first_bad_weight']!r}); weights must be finite and >= 0"
        )
    scaled = checks["scaled_total_weight"]
    total = None if scaled is None else float(scaled) / queries.statistics.WEIGHT_SCALE
    if total is not None and not math.isfinite(total):
        raise overflowing_weights(weight)
    if not checks["positive_rows"]:
        raise CohortError(
            f"weight column {weight!r} sums to {0 if total is None else total}: at least one row needs a positive weight"
        )
    return engine.create(
        queries.statistics.positive_weights(source, weight, engine.dialect),
        "weighted_rows",
        materialize=False,
        context="weighing rows",
    )


def check_table(statistics: Row, outcomes: Sequence[str], id: str | None) -> None:
    """Refuse an empty table, bad explained values, and ids that do not identify rows."""
    if statistics["subjects"] == 0:
        raise CohortError("the data has no rows; cohort Shapley needs at least one subject")
    for index, outcome in enumerate(outcomes):
        if statistics[f"bad_predictions:{index}"]:
            where = "row" if id is None else f"{id} ="
            raise CohortError(
                f"prediction column {outcome!r} has {statistics[f'bad_predictions:{index}']} NULL, NaN or infinite"
                f" values (the first at {where} {statistics[f'first_bad_prediction:{index}']!r}); drop or fill them"
            )
    if id is None:
        return
    if statistics["missing_ids"]:
        raise CohortError(f"id column {id!r} has {statistics['missing_ids']} NULL values; ids must identify rows")
    duplicates = statistics["duplicate_ids"]
    if duplicates:
        raise CohortError(f"id column {id!r} has {duplicates} duplicate values; ids must identify rows")
