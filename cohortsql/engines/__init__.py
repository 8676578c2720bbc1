"""SQL engines behind one base class (`cohortsql.engines.base.Engine`), one module per backend, and
the registry that finds them (`ENGINES`, in `cohortsql._typing`).

The engine follows from the input (a Spark DataFrame runs on Spark), from ``connection=`` (a DuckDB
connection, a SparkSession, an ADBC connection), or from ``engine=`` by name; DuckDB is the default.
Backends are imported only when chosen, so Spark's packages are needed only to run on Spark. Nothing
outside this package asks which engine it holds: an engine says what it can do (`Engine`'s policy
attributes) and checks the caller's SQL with its own parser.

Adding an engine: write ``cohortsql/engines/<name>.py`` whose ``ENGINE`` is a subclass of `Engine`,
and add its line to `ENGINES` (with the package its connections come from). Its dialect, if new, is
``cohortsql/dialects/<name>.py`` and a line of that registry. Tests: its name in the engine fixture
of ``tests/conftest.py``, so that the correctness suite runs on it.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from cohortsql._typing import ENGINES, EngineName
from cohortsql.engines.base import Engine, EngineSettings
from cohortsql.engines.inputs import Input
from cohortsql.errors import CohortError

DEFAULT_ENGINE: EngineName = "duckdb"

__all__ = [
    "ENGINES",
    "Engine",
    "EngineName",
    "EngineSettings",
    "Input",
    "connect",
    "engine_class",
    "engine_for",
    "engine_of",
    "open_engine",
]


def engine_class(name: str) -> type[Engine]:
    """The `Engine` subclass registered as `name` (its module imported now); a `CohortError` that
    says what to install when its package is missing."""
    if name not in ENGINES:
        raise CohortError(f"engine must be one of {', '.join(ENGINES)}, got {name!r}")
    entry = ENGINES[name]
    try:
        module = importlib.import_module(f"cohortsql.engines.{name}")
    except ImportError as error:
        if error.name and error.name.split(".")[0] == entry.package:
            install = f"pip install 'cohortsql[{entry.extra}]'" if entry.extra else "pip install cohortsql"
            raise CohortError(f"the {name} engine needs {entry.package}: {install}") from None
        raise
    found: type[Engine] = module.ENGINE
    return found


def engine_of(value: object) -> str | None:
    """The engine whose package `value`'s type comes from, if any (without importing any backend)."""
    package = type(value).__module__.split(".")[0].lstrip("_")
    for name, entry in ENGINES.items():
        if package == entry.package:
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
    """Open the engine for `data` (see `engine_for`); close it when done (it drops what it created).
    A setting the engine does not read (another engine's) is refused."""
    chosen = engine_class(engine_for(data, connection, engine))
    settings = settings or EngineSettings()
    foreign = [
        field.name
        for field in dataclasses.fields(settings)
        if getattr(settings, field.name) != field.default and field.name not in chosen.reads_settings
    ]
    if foreign:
        read = ", ".join(sorted(chosen.reads_settings)) or "none of them"
        raise CohortError(
            f"{foreign[0]} is not a setting of the {chosen.name} engine, which runs this call (it reads {read}):"
            " leave it out, or size the engine in its own configuration"
        )
    return chosen.open(connection, settings, data)


def connect(uri: str) -> Any:
    """A connection to the database `uri` names (``postgresql://user@host/db``), opened by the engine
    whose scheme it is (`cohortsql._typing.EngineEntry.schemes`); the caller closes it."""
    scheme = uri.partition("://")[0].lower() if "://" in uri else ""
    for name, entry in ENGINES.items():
        if scheme in entry.schemes:
            return engine_class(name).connect(uri)
    known = [f"{scheme}://" for entry in ENGINES.values() for scheme in entry.schemes]
    raise CohortError(
        "no engine reads URIs of that scheme: give an engine name"
        f" ({', '.join(ENGINES)})" + (f" or a URI starting {', '.join(known)}" if known else "")
    )
