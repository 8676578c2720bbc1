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
    from cohortsql._typing import DuckDB as DuckDB
    from cohortsql._typing import Spark as Spark
    from cohortsql.api.anonymity import kanonymity_shapley as kanonymity_shapley
    from cohortsql.api.assemble import assemble as assemble
    from cohortsql.api.audit import audit as audit
    from cohortsql.api.audit import estimate_audit as estimate_audit
    from cohortsql.api.baseline import baseline_shapley as baseline_shapley
    from cohortsql.api.calibrate import calibrate as calibrate
    from cohortsql.api.compare import compare as compare
    from cohortsql.api.effects import shapley_effects as shapley_effects
    from cohortsql.api.effects import variance_shapley as variance_shapley
    from cohortsql.api.estimate import estimate as estimate
    from cohortsql.api.estimate import estimate_compare as estimate_compare
    from cohortsql.api.fairness import fairness as fairness
    from cohortsql.api.games import game_shapley as game_shapley
    from cohortsql.api.local import cohort_shapley as cohort_shapley
    from cohortsql.api.printed import histogram_sql as histogram_sql
    from cohortsql.api.printed import sql_query as sql_query
    from cohortsql.api.register import register as register
    from cohortsql.api.table import shapley_table as shapley_table
    from cohortsql.api.uniqueness import uniqueness_shapley as uniqueness_shapley
    from cohortsql.errors import CohortError as CohortError
    from cohortsql.errors import CohortWarning as CohortWarning
    from cohortsql.games.base import Cohorts as Cohorts
    from cohortsql.games.base import Game as Game
    from cohortsql.request.similarity import AbsoluteWindow as AbsoluteWindow
    from cohortsql.request.similarity import Bins as Bins
    from cohortsql.request.similarity import Exact as Exact
    from cohortsql.request.similarity import QuantileWindow as QuantileWindow
    from cohortsql.request.similarity import RangeWindow as RangeWindow
    from cohortsql.request.similarity import RelativeWindow as RelativeWindow
    from cohortsql.request.similarity import Similarity as Similarity
    from cohortsql.request.similarity import SqlPredicate as SqlPredicate
    from cohortsql.request.similarity_text import parse_similarity as parse_similarity
    from cohortsql.results.audit import AuditResult as AuditResult
    from cohortsql.results.baseline import BaselineShapleyResult as BaselineShapleyResult
    from cohortsql.results.calibration import Calibration as Calibration
    from cohortsql.results.cohort import CohortShapleyResult as CohortShapleyResult
    from cohortsql.results.comparison import Comparison as Comparison
    from cohortsql.results.effects import ShapleyEffects as ShapleyEffects
    from cohortsql.results.fairness import FairnessResult as FairnessResult
    from cohortsql.results.outcomes import CohortShapleyResults as CohortShapleyResults
    from cohortsql.results.outcomes import ShapleyEffectsResults as ShapleyEffectsResults
    from cohortsql.results.uniqueness import GameResult as GameResult
    from cohortsql.results.uniqueness import UniquenessResult as UniquenessResult

_PUBLIC = {
    # the methods, one module each
    "cohort_shapley": "cohortsql.api.local",
    "shapley_effects": "cohortsql.api.effects",
    "variance_shapley": "cohortsql.api.effects",
    "uniqueness_shapley": "cohortsql.api.uniqueness",
    "kanonymity_shapley": "cohortsql.api.anonymity",
    "game_shapley": "cohortsql.api.games",
    "baseline_shapley": "cohortsql.api.baseline",
    "compare": "cohortsql.api.compare",
    "audit": "cohortsql.api.audit",
    "estimate_audit": "cohortsql.api.audit",
    "fairness": "cohortsql.api.fairness",
    "insertion_deletion": "cohortsql.api.integrated",
    "calibrate": "cohortsql.api.calibrate",
    "estimate": "cohortsql.api.estimate",
    "estimate_compare": "cohortsql.api.estimate",
    "sql_query": "cohortsql.api.printed",
    "histogram_sql": "cohortsql.api.printed",
    "assemble": "cohortsql.api.assemble",
    "register": "cohortsql.api.register",
    "shapley_table": "cohortsql.api.table",
    # their results
    "CohortShapleyResult": "cohortsql.results.cohort",
    "CohortShapleyResults": "cohortsql.results.outcomes",
    "ShapleyEffects": "cohortsql.results.effects",
    "ShapleyEffectsResults": "cohortsql.results.outcomes",
    "UniquenessResult": "cohortsql.results.uniqueness",
    "GameResult": "cohortsql.results.uniqueness",
    "BaselineShapleyResult": "cohortsql.results.baseline",
    "Comparison": "cohortsql.results.comparison",
    "AuditResult": "cohortsql.results.audit",
    "FairnessResult": "cohortsql.results.fairness",
    "InsertionDeletion": "cohortsql.results.insertion",
    "Calibration": "cohortsql.results.calibration",
    # games of cohorts (game_shapley(game=...))
    "Game": "cohortsql.games.base",
    "Cohorts": "cohortsql.games.base",
    # similarity kinds
    "AbsoluteWindow": "cohortsql.request.similarity",
    "Bins": "cohortsql.request.similarity",
    "Exact": "cohortsql.request.similarity",
    "QuantileWindow": "cohortsql.request.similarity",
    "RangeWindow": "cohortsql.request.similarity",
    "RelativeWindow": "cohortsql.request.similarity",
    "Similarity": "cohortsql.request.similarity",
    "SqlPredicate": "cohortsql.request.similarity",
    "parse_similarity": "cohortsql.request.similarity_text",
    # configured engines (engine=DuckDB(memory_limit="1GB"))
    "DuckDB": "cohortsql._typing",
    "Spark": "cohortsql._typing",
    # errors
    "CohortError": "cohortsql.errors",
    "CohortWarning": "cohortsql.errors",
}
"""Every public name and the module that defines it: loaded on first use (PEP 562)."""

__all__ = sorted(_PUBLIC)


_SUBMODULES = ("datasets", "plot")
"""Public submodules, reachable as attributes (``cohortsql.plot.stacked``) without their own import."""


def __getattr__(name: str) -> Any:
    """Load a public name's module on first use (PEP 562)."""
    if name in _SUBMODULES:
        return importlib.import_module(f"cohortsql.{name}")
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cohortsql' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC, *_SUBMODULES])


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
