"""cohortsql: exact cohort Shapley values over prediction tables, computed in DuckDB and numpy.

Mase, Owen & Seiler, "Explaining black box decisions by Shapley cohort refinement".
"""

from cohortsql.api import cohort_shapley, variance_shapley
from cohortsql.errors import CohortError
from cohortsql.result import CohortShapleyResult, ShapleyEffects
from cohortsql.similarity import (
    AbsoluteWindow,
    Bins,
    Exact,
    QuantileWindow,
    RangeWindow,
    RelativeWindow,
    Similarity,
    SqlPredicate,
    parse_similarity,
)

__all__ = [
    "AbsoluteWindow",
    "Bins",
    "CohortError",
    "CohortShapleyResult",
    "Exact",
    "QuantileWindow",
    "RangeWindow",
    "RelativeWindow",
    "Similarity",
    "ShapleyEffects",
    "SqlPredicate",
    "cohort_shapley",
    "parse_similarity",
    "variance_shapley",
]
