"""cohortsql: exact cohort Shapley values over prediction tables, computed in DuckDB and numpy.

Mase, Owen & Seiler, "Explaining black box decisions by Shapley cohort refinement".
"""

from cohortsql import namespace as namespace  # noqa: F401  (registers df.cohort on polars frames)
from cohortsql.api import cohort_shapley, histogram_sql, variance_shapley
from cohortsql.assemble import assemble
from cohortsql.errors import CohortError, CohortWarning
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
    "CohortWarning",
    "CohortShapleyResult",
    "Exact",
    "QuantileWindow",
    "RangeWindow",
    "RelativeWindow",
    "Similarity",
    "ShapleyEffects",
    "SqlPredicate",
    "assemble",
    "cohort_shapley",
    "histogram_sql",
    "parse_similarity",
    "variance_shapley",
]
