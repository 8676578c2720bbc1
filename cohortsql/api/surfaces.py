"""The one door from the surfaces (the command line, ``df.cohort``) to what lies below `api/`.

A surface imports `api/` and `results/` only (the layering of `docs/design.md`, held by
import-linter's contracts in ``pyproject.toml``). What a surface needs beyond the public calls is
named here, once: choosing, opening and connecting engines and the tables they read (the command
line's ``--engine``, ``--into-table``, ``--database``), the model file of the comparison commands,
whether a string is SQL, and the types of the arguments and plans the surfaces pass on. It imports
the engines, so the surfaces import it where they use it, never at the top of a module that
``--help`` reads.
"""

from __future__ import annotations

from cohortsql.engines import EngineSettings as EngineSettings
from cohortsql.engines import connect as connect
from cohortsql.engines import engine_class as engine_class
from cohortsql.engines import engine_for as engine_for
from cohortsql.engines import open_engine as open_engine
from cohortsql.engines.base import Engine as Engine
from cohortsql.engines.base import Sources as Sources
from cohortsql.engines.inputs import database_table as database_table
from cohortsql.games.base import Game as Game
from cohortsql.games.baseline.models import load_model as load_model
from cohortsql.request.arguments import RowMask as RowMask
from cohortsql.request.arguments import checked_targets as checked_targets
from cohortsql.request.similarity import SimilarityArgument as SimilarityArgument
from cohortsql.request.user_sql import is_query as is_query
from cohortsql.run.plans import ComparisonPlan as ComparisonPlan
from cohortsql.run.plans import Plan as Plan
