"""What a command does with its flags: the `command` decorator that gives a command the flags of
its API option groups, and the API's keyword arguments from the merged options (`request`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cohortsql._typing import CONFIGURED_ENGINES, ENGINES, EVERY_OTHER
from cohortsql.api.declared import with_declared_defaults
from cohortsql.cli.config import merged_options
from cohortsql.cli.failures import _reported_failures
from cohortsql.cli.flags import API_ONLY, FLAGS, Flags
from cohortsql.errors import CohortError


def command(*groups: tuple[str, ...] | type) -> Callable[[Callable[[Flags], None]], Callable[..., None]]:
    """Make `body` (which takes the merged options) a typer command whose flags are those of `groups`.

    A group is a tuple of flag names or one of the API's option `TypedDict`s, which gives the flags of
    its keys: a new API option is on the command line once `FLAGS` declares it (or `API_ONLY` says it
    has no flag). ``--config`` and ``--debug`` come last; failures are reported by `_reported_failures`.
    """
    names = list(dict.fromkeys([name for group in groups for name in _flag_names(group)] + ["config", "debug"]))
    if "engine" in names:  # the settings a configured engine holds (`configured_engine`), beside --engine
        at = names.index("engine") + 1
        names[at:at] = [name for name in CONFIGURED if name not in names]
    parameters = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=FLAGS[name][0], default=FLAGS[name][1])
        for name in names
    ]

    def give(body: Callable[[Flags], None]) -> Callable[..., None]:
        def run(**given: Any) -> None:
            with (
                _reported_failures(bool(given.get("debug"))),
                _opened(merged_options(given, tuple(names))) as options,
            ):
                body(options)

        run.__signature__ = inspect.Signature(parameters, return_annotation=None)  # type: ignore[attr-defined]
        run.__annotations__ = {name: FLAGS[name][0] for name in names} | {"return": None}
        run.__name__, run.__qualname__ = body.__name__, body.__qualname__
        run.__doc__ = with_declared_defaults(body.__doc__ or "")
        run.__module__ = body.__module__
        return run

    return give


@contextmanager
def _opened(options: Flags) -> Iterator[Flags]:
    """The options as a command's body reads them: --table as its DATA, and --engine URI opened
    (`cohortsql.engines.connect`) as the run's ``connection``, closed when the command ends."""
    table = options.get("data_table")
    if table is not None:
        if options.get("data"):
            raise CohortError(f"give DATA or --table, not both (got {options.get('data')!r} and --table {table!r})")
        options = {**options, "data": table}
    engine = options.get("engine")
    if engine is None or "://" not in engine:
        yield options
        return
    from cohortsql.api.surfaces import connect

    connection = connect(engine)
    try:
        yield {**options, "engine": None, "connection": connection}
    finally:
        connection.close()


def _flag_names(group: tuple[str, ...] | type) -> list[str]:
    if isinstance(group, tuple):
        return list(group)
    keys = list(group.__annotations__)
    missing = [key for key in keys if key not in FLAGS and key not in API_ONLY]
    if missing:
        raise TypeError(f"{group.__name__} options {missing} have no flag: declare them in FLAGS or API_ONLY")
    return [key for key in keys if key in FLAGS]


def request(
    options: Flags, group: type | tuple[str, ...], *, explained: bool = True, compared: bool = True
) -> dict[str, Any]:
    """The API's keyword arguments from the merged options: the column(s) to explain when the command
    is `explained`, the similarity and the targets when it is `compared` (rows compared with targets),
    and those of `group` (an API option `TypedDict`, or names) that were given."""
    if not options.get("data"):
        raise CohortError("no DATA given: pass a file, FILE.duckdb:TABLE or a SQL query (or data = ... in --config)")
    if explained and not options.get("prediction"):
        raise CohortError("no --prediction given: name the column to explain")
    if options.get("targets") is not None and options.get("target_ids") is not None:
        raise CohortError("give one of --targets and --target-ids, not both")
    _check_engine_settings(options)
    if options.get("targets") is not None and not str(options["targets"]).strip():
        raise CohortError("--targets is empty: give a SQL condition, or leave it out to explain every row")
    database, out_path, prediction = options.get("database"), options.get("out"), options.get("prediction")
    if database:
        from cohortsql.cli.outputs import check_database, check_table_free

        check_database(Path(database))  # before the work, not after it
        check_table_free(options)
    outputs = [Path(str(options[name])) for name in ("report", "plot") if options.get(name)]
    if out_path:
        from cohortsql.formats.files import COMPANIONS, check_destination, sibling_path

        out = check_destination(Path(out_path))  # before the work, not after it
        outputs = [out, *(sibling_path(out, label) for label in COMPANIONS), *outputs]
    if outputs:
        from cohortsql.cli.outputs import refuse_inputs

        refuse_inputs(outputs, options)
    taken = group if isinstance(group, tuple) else tuple(group.__annotations__)
    arguments = pick(options, *(name for name in taken if name not in ("targets", "sample", "include")))
    if arguments.get("null_features") is not None:
        arguments["null_features"] = names(arguments["null_features"])
    if "engine" in taken:
        arguments |= configured_engine(options)
    if explained and prediction:
        arguments["prediction"] = _prediction(prediction)
    if not compared:
        return arguments
    ids, sample = _target_ids(options.get("target_ids")), _sample(options.get("sample"))
    if ids is not None and sample is not None:  # chosen ids explained beside the sample
        if "include" not in taken:
            raise CohortError(
                "--target-ids beside --sample explains chosen ids beside a random sample, which only commands that"
                " show each target's values do (shapley, audit); give one of them"
            )
        arguments["include"], ids = ids, None
    return arguments | dict(
        similarity=similarity(options.get("similar"), options.get("features")),
        targets=options.get("targets") or ids,
        sample=sample,
    )


CONFIGURED = tuple(setting for kind in CONFIGURED_ENGINES for setting in kind.settings.values())
"""The flags that configure the engine a command runs on (the API's ``engine=cohortsql.DuckDB(...)``
or ``engine=cohortsql.Spark(master=...)``): ``--memory-limit``, ``--temp-directory``, ``--spark-master``."""


def configured_engine(options: Flags) -> dict[str, Any]:
    """The API's ``engine=``, configured by the flags that were given (`CONFIGURED`); nothing when none
    was. `_check_engine_settings` has refused a flag of an engine other than the one that runs."""
    given: Mapping[str, object] = options
    for kind in CONFIGURED_ENGINES:
        fields = {field: given[setting] for field, setting in kind.settings.items() if given.get(setting) is not None}
        if fields:
            return {"engine": kind(**fields)}  # type: ignore[arg-type]
    return {}


ENGINE_SETTINGS = (*CONFIGURED, "database")
"""Flags that are settings of one engine or another (`cohortsql.engines.EngineSettings`)."""


def _check_engine_settings(options: Flags) -> None:
    """--engine names a registered engine (or a URI, opened before the command runs), and the flags
    that set up an engine are ones it reads."""
    from cohortsql.api.surfaces import engine_class, engine_for

    engine = options.get("engine")
    if engine is not None and engine not in ENGINES:
        # never echoed: a value that is not a name may be a connection string, password and all
        schemes = [f"{scheme}://..." for entry in ENGINES.values() for scheme in entry.schemes]
        keywords = " (key=value connection strings are not read: give a URI)" if "=" in engine else ""
        raise CohortError(
            f"--engine must be an engine name ({', '.join(ENGINES)}) or a URI starting {', '.join(schemes)};"
            f" the value given is neither{keywords}"
        )
    chosen = engine_class(engine_for(None, options.get("connection"), engine))
    given: Mapping[str, object] = options
    for setting in ENGINE_SETTINGS:
        if given.get(setting) is not None and setting not in chosen.reads_settings:
            raise CohortError(
                f"--{setting.replace('_', '-')} is not a setting of the {chosen.name} engine, which runs this command"
            )


def pick(options: Flags, *names: str) -> dict[str, Any]:
    """The options among `names` that were given (as the API's keyword arguments)."""
    given: Mapping[str, object] = options
    return {name: given[name] for name in names if given.get(name) is not None}


def _prediction(value: str | list[str]) -> str | list[str]:
    """--prediction: one column, or (repeated, or a list in the config) several."""
    if isinstance(value, list) and len(value) == 1:
        return value[0]
    return value


def _sample(sample: float | None) -> int | float | None:
    """--sample as a count (>= 1, whole) or a fraction (< 1)."""
    if sample is None or sample < 1:
        return sample
    if not float(sample).is_integer():
        raise CohortError(f"--sample {sample}: a count must be a whole number (or a fraction below 1)")
    return int(sample)


def similarity(similar: dict[str, str] | None, features: str | list[str] | None) -> dict[str, str | None]:
    """--features (default kinds; ``all``: every other column) then --similar FEATURE=KIND (``*=KIND``:
    every column not named otherwise), in the order given."""
    names = features.split(",") if isinstance(features, str) else list(features or [])
    kinds: dict[str, str | None] = {
        EVERY_OTHER if name.strip() == "all" else name.strip(): None for name in names if name.strip()
    }
    kinds.update(similar or {})
    if not kinds:
        raise CohortError("no features given: use --similar FEATURE=KIND or --features a,b,c")
    return kinds


def names(value: str | list[str] | None) -> list[str]:
    """A comma-separated list (or a config file's list) of names."""
    listed = value.split(",") if isinstance(value, str) else list(value or [])
    return [str(name).strip() for name in listed if str(name).strip()]


def numbers(name: str, value: str | list[Any] | None) -> list[float] | None:
    """A comma-separated list (or a config file's list) of numbers, None when not given."""
    if value is None:
        return None
    try:
        return [float(item) for item in (value.split(",") if isinstance(value, str) else value)]
    except (TypeError, ValueError):
        raise CohortError(f"--{name} must be comma-separated numbers, e.g. 0.1,0.2; got {value!r}") from None


def _target_ids(text: str | list[Any] | None) -> list[Any] | None:
    """--target-ids as given: the values are parsed by the id column's type (dates, text like 003, integers)."""
    if text is None:
        return None
    ids = [
        value.strip() if isinstance(value, str) else value
        for value in (text if isinstance(text, list) else text.split(","))
    ]
    ids = [value for value in ids if value != ""]
    if not ids:
        raise CohortError("--target-ids is empty: name at least one id, or leave it out to explain every row")
    return ids
