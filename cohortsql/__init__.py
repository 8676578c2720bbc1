"""cohortsql: exact cohort Shapley values over prediction tables, computed in SQL (DuckDB, Spark) and numpy.

Mase, Owen & Seiler, "Explaining black box decisions by Shapley cohort refinement".

Importing cohortsql is cheap: the computations (and numpy, polars, pyarrow, the engines) load on
first use, so that the command line answers ``--help`` at once. ``df.cohort`` is registered on
polars frames as soon as polars is imported, before or after cohortsql.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cohortsql.api.local import (
        cohort_shapley,
        estimate,
        histogram_sql,
        shapley_effects,
        uniqueness_shapley,
        variance_shapley,
    )
    from cohortsql.api.assemble import assemble
    from cohortsql.results.baseline import BaselineShapleyResult
    from cohortsql.games.calibration import Calibration
    from cohortsql.api.baseline import baseline_shapley, calibrate, compare
    from cohortsql.results.comparison import Comparison
    from cohortsql.errors import CohortError, CohortWarning
    from cohortsql.results.outcomes import CohortShapleyResults, ShapleyEffectsResults
    from cohortsql.results.cohort import CohortShapleyResult, ShapleyEffects
    from cohortsql.results.uniqueness import UniquenessResult
    from cohortsql.spec.similarity import (
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

_PUBLIC = {
    "cohort_shapley": "cohortsql.api.local",
    "shapley_effects": "cohortsql.api.local",
    "variance_shapley": "cohortsql.api.local",
    "uniqueness_shapley": "cohortsql.api.local",
    "estimate": "cohortsql.api.local",
    "histogram_sql": "cohortsql.api.local",
    "assemble": "cohortsql.api.assemble",
    "baseline_shapley": "cohortsql.api.baseline",
    "compare": "cohortsql.api.baseline",
    "calibrate": "cohortsql.api.baseline",
    "Calibration": "cohortsql.games.calibration",
    "Comparison": "cohortsql.results.comparison",
    "BaselineShapleyResult": "cohortsql.results.baseline",
    "CohortError": "cohortsql.errors",
    "CohortWarning": "cohortsql.errors",
    "CohortShapleyResult": "cohortsql.results.cohort",
    "ShapleyEffects": "cohortsql.results.cohort",
    "CohortShapleyResults": "cohortsql.results.outcomes",
    "ShapleyEffectsResults": "cohortsql.results.outcomes",
    "UniquenessResult": "cohortsql.results.uniqueness",
    "AbsoluteWindow": "cohortsql.spec.similarity",
    "Bins": "cohortsql.spec.similarity",
    "Exact": "cohortsql.spec.similarity",
    "QuantileWindow": "cohortsql.spec.similarity",
    "RangeWindow": "cohortsql.spec.similarity",
    "RelativeWindow": "cohortsql.spec.similarity",
    "Similarity": "cohortsql.spec.similarity",
    "SqlPredicate": "cohortsql.spec.similarity",
    "parse_similarity": "cohortsql.spec.similarity",
}

__all__ = [
    "AbsoluteWindow",
    "Bins",
    "CohortError",
    "CohortShapleyResult",
    "CohortShapleyResults",
    "CohortWarning",
    "Exact",
    "QuantileWindow",
    "RangeWindow",
    "RelativeWindow",
    "ShapleyEffects",
    "ShapleyEffectsResults",
    "Similarity",
    "SqlPredicate",
    "UniquenessResult",
    "BaselineShapleyResult",
    "Calibration",
    "Comparison",
    "assemble",
    "baseline_shapley",
    "calibrate",
    "cohort_shapley",
    "compare",
    "estimate",
    "histogram_sql",
    "parse_similarity",
    "shapley_effects",
    "uniqueness_shapley",
    "variance_shapley",
]


def __getattr__(name: str) -> Any:
    """Load a public name's module on first use (PEP 562)."""
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cohortsql' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])


class _AfterPolars(importlib.abc.MetaPathFinder):
    """Registers ``df.cohort`` right after polars is imported, whenever that happens."""

    def find_spec(self, name: str, path: Any = None, target: ModuleType | None = None) -> Any:
        if name != "polars":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            original(module)
            importlib.import_module("cohortsql.polars")

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if "polars" in sys.modules:
    importlib.import_module("cohortsql.polars")
elif not any(isinstance(finder, _AfterPolars) for finder in sys.meta_path):
    sys.meta_path.insert(0, _AfterPolars())
