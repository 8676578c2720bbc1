"""What a command does with its flags: the `command` decorator that gives a command the flags of
its API option groups, and the API's keyword arguments from the merged options (`request`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cohortsql._typing import ENGINES, EVERY_OTHER
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
    parameters = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=FLAGS[name][0], default=FLAGS[name][1])
        for name in names
    ]

    def give(body: Callable[[Flags], None]) -> Callable[..., None]:
        def run(**given: Any) -> None:
            with _reported_failures(bool(given.get("debug"))):
                body(merged_options(given, tuple(names)))

        run.__signature__ = inspect.Signature(parameters, return_annotation=None)  # type: ignore[attr-defined]
        run.__annotations__ = {name: FLAGS[name][0] for name in names} | {"return": None}
        run.__name__, run.__qualname__, run.__doc__ = body.__name__, body.__qualname__, body.__doc__
        run.__module__ = body.__module__
        return run

    return give


def _flag_names(group: tuple[str, ...] | type) -> list[str]:
    if isinstance(group, tuple):
        return list(group)
    keys = list(group.__annotations__)
    missing = [key for key in keys if key not in FLAGS and key not in API_ONLY]
    if missing:
        raise TypeError(f"{group.__name__} options {missing} have no flag: declare them in FLAGS or API_ONLY")
    return [key for key in keys if key in FLAGS]


def request(options: Flags, group: type | tuple[str, ...], *, explained: bool = True) -> dict[str, Any]:
    """The API's keyword arguments from the merged options: the similarity, the column(s) to explain
    when the command is `explained`, and those of `group` (an API option `TypedDict`, or names) that
    were given."""
    if not options.get("data"):
        raise CohortError("no DATA given: pass a file, FILE.duckdb:TABLE or a SQL query (or data = ... in --config)")
    if explained and not options.get("prediction"):
        raise CohortError("no --prediction given: name the column to explain")
    if options.get("targets") is not None and options.get("target_ids") is not None:
        raise CohortError("give one of --targets and --target-ids, not both")
    if options.get("target_ids") is not None and options.get("sample") is not None:
        raise CohortError("--sample draws from every row or from --targets' rows, not from --target-ids")
    engine = options.get("engine")
    if engine is not None and engine not in ENGINES:
        raise CohortError(f"--engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if options.get("spark_master") and engine != "spark":
        raise CohortError("--spark-master needs --engine spark")
    if options.get("targets") is not None and not str(options["targets"]).strip():
        raise CohortError("--targets is empty: give a SQL condition, or leave it out to explain every row")
    database, out_path, prediction = options.get("database"), options.get("out"), options.get("prediction")
    if database:
        from cohortsql.cli.outputs import check_database, check_table_free

        check_database(Path(database))  # before the work, not after it
        if (options.get("engine") or "duckdb") == "duckdb":
            check_table_free(options)
    if out_path:
        from cohortsql.cli.outputs import refuse_inputs
        from cohortsql.results.files import COMPANIONS, check_destination, sibling_path

        out = check_destination(Path(out_path))  # before the work, not after it
        refuse_inputs([out, *(sibling_path(out, label) for label in COMPANIONS)], options)
    names = group if isinstance(group, tuple) else tuple(group.__annotations__)
    arguments = pick(options, *(name for name in names if name not in ("targets", "sample")))
    if explained and prediction:
        arguments["prediction"] = _prediction(prediction)
    return arguments | dict(
        similarity=similarity(options.get("similar"), options.get("features")),
        targets=options.get("targets") or _target_ids(options.get("target_ids")),
        sample=_sample(options.get("sample")),
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
