"""SQL engines behind one base class (`cohortsql.engines.base.Engine`), one module per backend.

The engine follows from the input (a Spark DataFrame runs on Spark), from ``connection=`` (a DuckDB
connection or a SparkSession), or from ``engine=`` by name; DuckDB is the default. Backends are
imported only when chosen, so Spark's packages are needed only to run on Spark.

Adding an engine: write ``cohortsql/engines/<name>.py`` with ``open_engine(connection, settings,
data)`` returning a subclass of `Engine` that implements its abstract methods (`data` is the input, for backends whose data
objects belong to a session of their own); add its name and the package its data and connection
types come from to `ENGINES`; add it to the engine fixture in ``tests/conftest.py`` so that the
correctness suite runs on it. (`ENGINES` lives in `cohortsql._typing`, which the command line reads
without loading any engine.)
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from cohortsql._typing import ENGINES, EngineName
from cohortsql.engines.base import Engine, EngineSettings
from cohortsql.engines.inputs import Input
from cohortsql.errors import CohortError

DEFAULT_ENGINE: EngineName = "duckdb"

__all__ = ["ENGINES", "Engine", "EngineName", "EngineSettings", "Input", "engine_for", "engine_of", "open_engine"]


def _module(name: str) -> ModuleType:
    try:
        return importlib.import_module(f"cohortsql.engines.{name}")
    except ImportError as error:
        if error.name and error.name.split(".")[0] == ENGINES[name]:
            raise CohortError(f"the {name} engine needs {ENGINES[name]}: pip install 'cohortsql[{name}]'") from None
        raise


def engine_of(value: object) -> str | None:
    """The engine whose module `value`'s type comes from, if any (without importing any backend)."""
    package = type(value).__module__.split(".")[0].lstrip("_")
    for name, distribution in ENGINES.items():
        if package == distribution:
            return name
    return None


def engine_for(data: Any, connection: Any, engine: str | None) -> str:
    """The name of the engine that runs a call: asked for, or implied by the connection or the data."""
    implied = [name for name in (engine_of(connection), engine_of(data)) if name is not None]
    if engine is not None:
        if engine not in ENGINES:
            raise CohortError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
        clash = [name for name in implied if name != engine]
        if clash:
            raise CohortError(f"engine={engine!r} cannot read a {clash[0]} connection or data; drop one of them")
        return engine
    if len(set(implied)) > 1:
        raise CohortError(f"the connection is a {implied[0]} one but the data belongs to {implied[1]}")
    return implied[0] if implied else DEFAULT_ENGINE


def open_engine(
    data: Any = None,
    *,
    engine: str | None = None,
    connection: Any = None,
    settings: EngineSettings | None = None,
) -> Engine:
    """Open the engine for `data` (see `engine_for`); close it when done (it drops what it created)."""
    name = engine_for(data, connection, engine)
    opened: Engine = _module(name).open_engine(connection, settings or EngineSettings(), data)
    return opened
