"""The command line's options: their declarations, the TOML config file, and the API arguments they make.

A config file holds any option under its flag's name (``memory_limit`` or ``memory-limit``); flags
override it; paths in it are relative to the file. Every value is checked for its type here, so a
wrong one is a one-line error naming the key.
"""

from __future__ import annotations

import inspect
import tomllib
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from cohortsql._typing import DIALECTS, ENGINES, METHODS, MODEL_INPUTS, MODEL_OUTPUTS, PATHS, VARIANTS
from cohortsql.cli.failures import _reported_failures
from cohortsql.errors import CohortError
from cohortsql.sql.user import is_query

Data = Annotated[
    str | None,
    typer.Argument(
        help="A parquet/csv/json path or glob, FILE.duckdb:TABLE, a table name (--engine spark), or a quoted SQL query.",
        show_default=False,
    ),
]
Histogram = Annotated[
    Path | None, typer.Argument(help="The result of the `cohortsql sql` query (.parquet or .csv).", show_default=False)
]
Prediction = Annotated[
    list[str] | None,
    typer.Option(
        help="The column to explain (a model's prediction or an outcome); repeat it to explain several"
        " columns over the same cohorts in one pass."
    ),
]
Weight = Annotated[
    str | None, typer.Option(help="A column of case weights (>= 0; an integer weight counts as that many rows).")
]
Bootstrap = Annotated[
    int | None,
    typer.Option(help="B Bayesian-bootstrap replicates, in the same pass: intervals of every value (try 200)."),
]
Confidence = Annotated[float | None, typer.Option(help="The bootstrap intervals' coverage (default 0.95).")]
Id = Annotated[
    str | None, typer.Option("--id", help="The column that identifies rows (default: 0-based row position).")
]
Similar = Annotated[
    list[str] | None,
    typer.Option(
        "--similar",
        help="FEATURE=KIND, repeatable. Kinds: exact, abs:D[unit], relative:D, range:R, quantile:R[:P], bins:K, sql:EXPR.",
    ),
]
Features = Annotated[str | None, typer.Option(help="Comma-separated features that get default kinds.")]
Targets = Annotated[str | None, typer.Option(help="SQL predicate over the data's columns choosing the targets.")]
TargetIds = Annotated[str | None, typer.Option(help="Comma-separated ids of the targets (read in the id's type).")]
Sample = Annotated[
    float | None,
    typer.Option(
        help="A random sample of the targets (of --targets' rows, or every row): a count (>= 1) or a fraction (< 1)."
    ),
]
Seed = Annotated[
    int | None, typer.Option(help="Seed for the sample of targets, the permutations and the bootstrap replicates.")
]
MethodOption = Annotated[str | None, typer.Option("--method", help=f"{' | '.join(METHODS)} (default exact).")]
PathOption = Annotated[
    str | None, typer.Option("--path", help=f"How exact cohorts are found: {' | '.join(PATHS)} (default auto).")
]
Tolerance = Annotated[float | None, typer.Option(help="Permutation method: stop a target at this standard error.")]
MaxPermutations = Annotated[int | None, typer.Option(help="Permutation method: budget per target (default 200).")]
MemoryLimit = Annotated[
    str | None, typer.Option(help="DuckDB memory limit, e.g. 1GB; beyond it DuckDB spills to disk.")
]
TempDirectory = Annotated[Path | None, typer.Option(help="Where DuckDB spills.")]
Out = Annotated[
    Path | None,
    typer.Option(
        help="Write the results here (.parquet or .csv); `shapley` writes the per-target totals and refinement"
        " paths beside it (_totals, _paths, and _reasons with --reasons)."
    ),
]
IntoTable = Annotated[
    str | None,
    typer.Option(help="Also write the results into this table (of --database on DuckDB, of the catalog on Spark)."),
]
Database = Annotated[Path | None, typer.Option(help="DuckDB database file for --into-table.")]
Replace = Annotated[bool, typer.Option(help="Let --into-table replace existing tables of the same names.")]
EngineOption = Annotated[
    str | None, typer.Option("--engine", help=f"{' | '.join(ENGINES)} (default duckdb; spark for Spark tables).")
]
SparkMaster = Annotated[
    str | None,
    typer.Option(help="Spark master URL (default local[*]; with SPARK_REMOTE set and no master: Spark Connect)."),
]
Config = Annotated[Path | None, typer.Option(help="TOML file with any of these options; flags override it.")]
Top = Annotated[int, typer.Option(help="How many features the summary lists.")]
ModelFile = Annotated[
    Path | None,
    typer.Option(
        "--model",
        help="The fitted model, saved with pickle (or joblib: .joblib). Loading it runs code stored in the file:"
        " only load files you trust.",
    ),
]
ModelInputOption = Annotated[
    str | None,
    typer.Option("--model-input", help=f"How the model reads rows: {' | '.join(MODEL_INPUTS)} (default pandas)."),
]
ModelOutputOption = Annotated[
    str | None,
    typer.Option("--model-output", help=f"{' | '.join(MODEL_OUTPUTS)}: predict, or predict_proba's second column."),
]
BaselineSample = Annotated[
    int | None, typer.Option(help="All-baseline Shapley over this many rows drawn at random (default: every row).")
]
Exact = Annotated[str | None, typer.Option(help="Comma-separated numeric features to compare exactly (not by window).")]
CalibrationKindOption = Annotated[
    str | None, typer.Option("--kind", help="range | quantile: the width a threshold is a share of (default range).")
]
Thresholds = Annotated[str | None, typer.Option(help="Comma-separated thresholds (default 0.05, 0.10, ..., 1.00).")]
Holdouts = Annotated[str | None, typer.Option(help="Comma-separated shares of rows held out (default 0.1,0.2,0.3).")]
Runs = Annotated[int | None, typer.Option(help="Random splits (and marginal draws) per holdout share (default 100).")]
MarginalSamples = Annotated[int | None, typer.Option(help="Points drawn from the marginals per run (default 1000).")]
MaxRows = Annotated[
    int | None, typer.Option(help="Calibrate a larger table on a random sample of this many rows (default 20000).")
]
PlotOut = Annotated[Path | None, typer.Option("--plot", help="Save the calibration figure here (.png, .svg, .pdf).")]
Realistic = Annotated[
    bool | None,
    typer.Option("--realistic/--no-realistic", help="Split BS and ABS by realistic hybrid points (default on)."),
]
Reasons = Annotated[
    int | None, typer.Option(help="Give each target's top N features in words (printed for the first targets).")
]
DryRun = Annotated[bool, typer.Option(help="Print the plan and a time estimate from a pilot batch; compute nothing.")]
Progress = Annotated[
    bool | None,
    typer.Option("--progress/--no-progress", help="Progress on stderr (default: on a terminal, for long runs)."),
]
Debug = Annotated[bool, typer.Option(help="Show the traceback of a failure.")]
OutcomeOption = Annotated[
    str | None,
    typer.Option("--outcome", help="Of a run that explained several columns (--prediction repeated), the one to show."),
]
Table = Annotated[str | None, typer.Option(help="The table the SQL reads (default: the file DATA names).")]
Dialect = Annotated[str, typer.Option(help=f"{' | '.join(DIALECTS)}.")]
Variant = Annotated[
    str,
    typer.Option(
        help=f"{' | '.join(VARIANTS)}: one row per target and mask; the same with identical subjects merged"
        " first; or (exact/bins only) the cells, with no join."
    ),
]

FLAGS: dict[str, tuple[Any, Any]] = {
    "data": (Data, None),
    "histogram": (Histogram, None),
    "prediction": (Prediction, None),
    "model": (ModelFile, None),
    "id": (Id, None),
    "weight": (Weight, None),
    "similar": (Similar, None),
    "features": (Features, None),
    "targets": (Targets, None),
    "target_ids": (TargetIds, None),
    "sample": (Sample, None),
    "seed": (Seed, None),
    "bootstrap": (Bootstrap, None),
    "confidence": (Confidence, None),
    "method": (MethodOption, None),
    "path": (PathOption, None),
    "tolerance": (Tolerance, None),
    "max_permutations": (MaxPermutations, None),
    "model_input": (ModelInputOption, None),
    "model_output": (ModelOutputOption, None),
    "baseline_sample": (BaselineSample, None),
    "realistic": (Realistic, None),
    "exact": (Exact, None),
    "kind": (CalibrationKindOption, None),
    "thresholds": (Thresholds, None),
    "holdouts": (Holdouts, None),
    "runs": (Runs, None),
    "marginal_samples": (MarginalSamples, None),
    "max_rows": (MaxRows, None),
    "table": (Table, None),
    "dialect": (Dialect, "duckdb"),
    "variant": (Variant, "histogram"),
    "memory_limit": (MemoryLimit, None),
    "temp_directory": (TempDirectory, None),
    "engine": (EngineOption, None),
    "spark_master": (SparkMaster, None),
    "progress": (Progress, None),
    "out": (Out, None),
    "plot": (PlotOut, None),
    "into_table": (IntoTable, None),
    "database": (Database, None),
    "replace": (Replace, False),
    "top": (Top, 10),
    "reasons": (Reasons, None),
    "dry_run": (DryRun, False),
    "config": (Config, None),
    "debug": (Debug, False),
}
"""Every flag of the computing commands: its declaration and default, by the API's name for it."""

API_ONLY = frozenset({"connection", "batch_rows", "baseline"})
"""API options with no flag: a live connection, the model's batch size, and baseline Shapley's
baselines (the command line's `compare` uses the mean and every row)."""

EXPLAINED = ("data", "prediction", "similar", "features", "target_ids")
"""The flags that say what is explained (beside an API option group's)."""
OUTPUTS = ("out", "into_table", "database", "replace")
"""Where a computing command writes its tables."""
_DISPLAY = ("top", "dry_run", "config", "debug")
"""Flags of one invocation that a config file does not hold."""


def command(*groups: tuple[str, ...] | type) -> Callable[[Callable[[dict[str, Any]], None]], Callable[..., None]]:
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

    def give(body: Callable[[dict[str, Any]], None]) -> Callable[..., None]:
        def run(**given: Any) -> None:
            with _reported_failures(bool(given.get("debug"))):
                body(options(given, tuple(names)))

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


def api_keys(group: type) -> frozenset[str]:
    """The names an API option group (a `TypedDict`) takes."""
    return frozenset(group.__annotations__)


_PATH_KEYS = ("data", "histogram", "out", "database", "temp_directory", "model", "plot")

_COMMA_LISTS = ("features", "target_ids", "exact", "thresholds", "holdouts")
"""Flags given as comma-separated text, which a config file may also give as a list."""


def _config_types(name: str, flag: Any) -> tuple[type, ...]:
    """The types a config file may give for a flag: its declared type's (a path is text, a whole
    number is a number too, a repeatable flag a list or one value)."""
    if name == "similar":
        return (dict,)
    if name in _COMMA_LISTS:
        return (str, list)
    declared = typing.get_args(flag)[0]  # Annotated[T, typer.Option(...)]
    optional = typing.get_origin(declared) in (typing.Union, types.UnionType)
    kind = next(kind for kind in typing.get_args(declared) if kind is not type(None)) if optional else declared
    if typing.get_origin(kind) is list:
        return (str, list)
    return {Path: (str,), float: (int, float)}.get(kind, (kind,))


CONFIG_TYPES: dict[str, tuple[type, ...]] = {
    name: _config_types(name, flag) for name, (flag, _) in FLAGS.items() if name not in _DISPLAY
}
"""The type of every value a config file may hold."""

_TYPE_NAMES = {
    str: "text",
    int: "a whole number",
    float: "a number",
    list: "a list",
    dict: "a table",
    bool: "true or false",
}


def options(arguments: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The command's options: its config file's, overridden by the flags that were given."""
    flags = {key: arguments[key] for key in keys if key in arguments and key != "config"}
    flags["similar"] = dict(_split_similar(text) for text in arguments.get("similar") or [])
    return _merge_config(arguments.get("config"), flags, keys)


def request(options: dict[str, Any], group: type | tuple[str, ...], *, explained: bool = True) -> dict[str, Any]:
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
    if options.get("database"):
        from cohortsql.cli.outputs import check_database

        check_database(Path(options["database"]))  # before the work, not after it
    if options.get("out"):
        from cohortsql.cli.outputs import refuse_inputs
        from cohortsql.results.files import check_destination, sibling_path

        out = check_destination(Path(options["out"]))  # before the work, not after it
        refuse_inputs([out, *(sibling_path(out, label) for label in _SIBLINGS)], options)
    names = group if isinstance(group, tuple) else tuple(group.__annotations__)
    arguments = pick(options, *(name for name in names if name not in ("targets", "sample")))
    if explained:
        arguments["prediction"] = _prediction(options["prediction"])
    return arguments | dict(
        similarity=similarity(options.get("similar"), options.get("features")),
        targets=options.get("targets") or _target_ids(options.get("target_ids")),
        sample=_sample(options.get("sample")),
    )


_SIBLINGS = ("totals", "paths", "reasons", "global")
"""The labels of the tables a command writes beside --out."""


def pick(options: dict[str, Any], *names: str) -> dict[str, Any]:
    """The options among `names` that were given."""
    return {name: options[name] for name in names if options.get(name) is not None}


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
    """--features (default kinds) then --similar FEATURE=KIND, in the order given."""
    names = features.split(",") if isinstance(features, str) else list(features or [])
    kinds: dict[str, str | None] = {name.strip(): None for name in names if name.strip()}
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


def _split_similar(text: str) -> tuple[str, str]:
    name, equals, kind = text.partition("=")
    if not equals or not name.strip() or not kind.strip():
        raise CohortError(f"--similar {text!r} is not FEATURE=KIND, e.g. --similar age=range:0.1")
    return name.strip(), kind.strip()


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


def _merge_config(config: Path | None, flags: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Options from the TOML file, overridden by every flag that was given."""
    merged: dict[str, Any] = {}
    if config is not None:
        try:
            loaded = tomllib.loads(Path(config).read_text(encoding="utf-8"))
        except OSError as error:
            raise CohortError(f"cannot read config {str(config)!r}: {error.strerror}") from None
        except tomllib.TOMLDecodeError as error:
            raise CohortError(f"config {str(config)!r} is not valid TOML: {error}") from None
        except UnicodeDecodeError:
            raise CohortError(f"config {str(config)!r} is not UTF-8 text (a TOML file is)") from None
        merged = {key.replace("-", "_"): value for key, value in loaded.items()}
        known = [key for key in keys if key not in _DISPLAY]
        unknown = sorted(set(merged) - set(known))
        if unknown:
            raise CohortError(f"config {str(config)!r} has unknown keys {unknown}; known keys: {', '.join(known)}")
        for key, value in merged.items():
            _check_config_value(config, key, value)
        for key in _PATH_KEYS:
            # Paths in a config file are relative to the file, so it works from any directory.
            value = merged.get(key)
            if isinstance(value, str) and not is_query(value) and not Path(value).is_absolute():
                merged[key] = str(Path(config).parent / value)
    for key, value in flags.items():
        if value in (None, [], {}):
            continue
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            value = {**merged[key], **value}  # e.g. one --similar flag overrides one feature's kind
        merged[key] = value
    return merged


def _check_config_value(config: Path, key: str, value: object) -> None:
    expected = CONFIG_TYPES[key]
    wrong = not isinstance(value, expected) or (isinstance(value, bool) and bool not in expected)
    if key == "similar" and isinstance(value, dict):
        wrong = not all(isinstance(kind, str) for kind in value.values())
    if key in ("features", "prediction") and isinstance(value, list):
        wrong = not value or not all(isinstance(item, str) for item in value)
    if key == "target_ids" and isinstance(value, list):
        wrong = not all(isinstance(item, str | int) and not isinstance(item, bool) for item in value)
    if wrong:
        names = " or ".join(_TYPE_NAMES[kind] for kind in expected)
        if key == "similar":
            names = 'a table of FEATURE = "KIND" entries'
        raise CohortError(f"config {str(config)!r}: {key} must be {names}, got {value!r}")
