"""The `cohortsql` command line: explain a prediction table from the shell.

Commands: `run` (cohort Shapley values of every target), `global` (Shapley effects), `sql` (the
heavy step as SQL for a warehouse), `assemble` (results from that SQL's output) and `plot`. Every
failure a user can cause prints one line on stderr and exits with status 2 (``--debug`` shows the
traceback instead). Output files are written atomically.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from cohortsql.api import DIALECTS, METHODS, VARIANTS, cohort_shapley, histogram_sql, variance_shapley
from cohortsql.assemble import assemble as assemble_histogram
from cohortsql.engines import ENGINES, EngineSettings, open_engine, spark_session
from cohortsql.engines.base import database_table
from cohortsql.errors import CohortError
from cohortsql.output import sibling_path, write_frames
from cohortsql.result import CohortShapleyResult, ShapleyEffects
from cohortsql.sqltext import is_query

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

_PATH_KEYS = ("data", "out", "database", "temp_directory")

CONFIG_TYPES: dict[str, tuple[type, ...]] = {
    "data": (str,),
    "prediction": (str,),
    "id": (str,),
    "similar": (dict,),
    "features": (str, list),
    "targets": (str,),
    "target_ids": (str, list),
    "sample": (int, float),
    "seed": (int,),
    "method": (str,),
    "tolerance": (int, float),
    "max_permutations": (int,),
    "memory_limit": (str,),
    "temp_directory": (str,),
    "out": (str,),
    "into_table": (str,),
    "database": (str,),
    "replace": (bool,),
    "engine": (str,),
    "spark_master": (str,),
    "table": (str,),
    "dialect": (str,),
    "variant": (str,),
}
"""The type of every value a config file may hold (a key may be spelled as its flag: memory-limit)."""

Data = Annotated[
    str | None,
    typer.Argument(
        help="A parquet/csv/json path or glob, FILE.duckdb:TABLE, or a quoted SQL query.", show_default=False
    ),
]
Prediction = Annotated[str | None, typer.Option(help="The column to explain (a model's prediction or an outcome).")]
Id = Annotated[
    str | None, typer.Option("--id", help="The column that identifies rows (default: 0-based row position).")
]
Similar = Annotated[
    list[str] | None,
    typer.Option(
        "--similar",
        help="FEATURE=KIND, repeatable. Kinds: exact, abs:D, relative:D, range:R, quantile:R[:P], bins:K, sql:EXPR.",
    ),
]
Features = Annotated[str | None, typer.Option(help="Comma-separated features that get default kinds.")]
Targets = Annotated[str | None, typer.Option(help="SQL predicate over the data's columns choosing the targets.")]
TargetIds = Annotated[str | None, typer.Option(help="Comma-separated ids of the targets.")]
Sample = Annotated[float | None, typer.Option(help="A random sample of targets: a count (>= 1) or a fraction (< 1).")]
Seed = Annotated[int | None, typer.Option(help="Seed for the sample of targets and the permutations.")]
Method = Annotated[str | None, typer.Option(help=f"{' | '.join(METHODS)} (default exact).")]
Tolerance = Annotated[float | None, typer.Option(help="Permutation method: stop a target at this standard error.")]
MaxPermutations = Annotated[int | None, typer.Option(help="Permutation method: budget per target (default 200).")]
MemoryLimit = Annotated[
    str | None, typer.Option(help="DuckDB memory limit, e.g. 1GB; beyond it DuckDB spills to disk.")
]
TempDirectory = Annotated[Path | None, typer.Option(help="Where DuckDB spills.")]
Out = Annotated[
    Path | None,
    typer.Option(
        help="Write the results here (.parquet or .csv); `run` writes the per-target totals and refinement paths beside it (_totals, _paths)."
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
Progress = Annotated[
    bool | None, typer.Option("--progress/--no-progress", help="Progress on stderr (default: on a terminal).")
]
Debug = Annotated[bool, typer.Option(help="Show the traceback of a failure.")]
Table = Annotated[str | None, typer.Option(help="The table the SQL reads (default: the file DATA names).")]
Dialect = Annotated[str, typer.Option(help=f"{' | '.join(DIALECTS)}.")]
Variant = Annotated[
    str,
    typer.Option(
        help=f"{' | '.join(VARIANTS)}: one row per target and mask; the same with identical subjects merged"
        " first; or (exact/bins only) the cells, with no join."
    ),
]

REQUEST_KEYS = (
    "data",
    "prediction",
    "id",
    "similar",
    "features",
    "targets",
    "target_ids",
    "sample",
    "seed",
    "config",
    "engine",
    "spark_master",
)
OUTPUT_KEYS = ("out", "into_table", "database", "replace")
RUN_KEYS = REQUEST_KEYS + ("method", "tolerance", "max_permutations", "memory_limit", "temp_directory") + OUTPUT_KEYS
GLOBAL_KEYS = REQUEST_KEYS + ("memory_limit", "temp_directory") + OUTPUT_KEYS
SQL_KEYS = REQUEST_KEYS + ("table", "dialect", "variant")
ASSEMBLE_KEYS = ("similar", "features", "method", "seed", "tolerance", "max_permutations", "config", *OUTPUT_KEYS)


@app.callback()
def cohortsql() -> None:
    """Explain decisions in prediction tables with cohort Shapley values (Mase, Owen & Seiler)."""


@app.command(
    epilog=(
        "Examples:\n\n"
        "  cohortsql run --config examples/boston.toml\n\n"
        "  cohortsql run examples/data/boston_predictions.parquet --prediction prediction"
        " --similar lstat=quantile:0.1 --similar rm=quantile:0.1 --features chas,rad --out explained.parquet\n\n"
        "  cohortsql run 'scores/*.parquet' --prediction score --id loan_id --features age,income"
        " --targets \"region = 'north'\" --into-table explained --database results.duckdb"
    )
)
def run(
    data: Data = None,
    prediction: Prediction = None,
    id: Id = None,
    similar: Similar = None,
    features: Features = None,
    targets: Targets = None,
    target_ids: TargetIds = None,
    sample: Sample = None,
    seed: Seed = None,
    method: Method = None,
    tolerance: Tolerance = None,
    max_permutations: MaxPermutations = None,
    memory_limit: MemoryLimit = None,
    temp_directory: TempDirectory = None,
    out: Out = None,
    into_table: IntoTable = None,
    database: Database = None,
    replace: Replace = False,
    engine: EngineOption = None,
    spark_master: SparkMaster = None,
    config: Config = None,
    top: Top = 10,
    progress: Progress = None,
    debug: Debug = False,
) -> None:
    """Cohort Shapley values of every feature for every target; prints the most important features."""
    with _reported_failures(debug):
        options = _options(locals(), RUN_KEYS)
        result = cohort_shapley(
            options.get("data"),
            **_request(options),
            progress=progress,
            **_pick(options, "method", "tolerance", "max_permutations", "memory_limit", "temp_directory"),
        )
        written = _write(options, {"": result.local, "totals": result.totals, "paths": result.paths})
        typer.echo(summary(result, top) + written)


@app.command(
    name="global",
    epilog=(
        "Examples:\n\n"
        "  cohortsql global examples/data/boston_predictions.parquet --prediction prediction --features lstat,rm,chas\n\n"
        "  cohortsql global big.parquet --prediction score --features age,income,region --sample 0.01 --seed 1"
    ),
)
def global_(
    data: Data = None,
    prediction: Prediction = None,
    id: Id = None,
    similar: Similar = None,
    features: Features = None,
    targets: Targets = None,
    target_ids: TargetIds = None,
    sample: Sample = None,
    seed: Seed = None,
    memory_limit: MemoryLimit = None,
    temp_directory: TempDirectory = None,
    out: Out = None,
    into_table: IntoTable = None,
    database: Database = None,
    replace: Replace = False,
    engine: EngineOption = None,
    spark_master: SparkMaster = None,
    config: Config = None,
    debug: Debug = False,
) -> None:
    """Shapley effects: how much of the variance of the prediction each feature explains."""
    with _reported_failures(debug):
        options = _options(locals(), GLOBAL_KEYS)
        effects = variance_shapley(
            options.get("data"), **_request(options), **_pick(options, "memory_limit", "temp_directory")
        )
        written = _write(options, {"": effects.effects})
        typer.echo(effects_summary(effects) + written)


@app.command(
    epilog=(
        "Examples:\n\n"
        "  cohortsql sql examples/data/boston_predictions.parquet --prediction prediction --features lstat,rm"
        " --target-ids 3,17 --dialect spark --table analytics.boston_scores\n\n"
        "  cohortsql sql scores.parquet --prediction score --id loan --features region,band --variant cells"
    )
)
def sql(
    data: Data = None,
    prediction: Prediction = None,
    id: Id = None,
    similar: Similar = None,
    features: Features = None,
    targets: Targets = None,
    target_ids: TargetIds = None,
    sample: Sample = None,
    seed: Seed = None,
    table: Table = None,
    dialect: Dialect = "duckdb",
    variant: Variant = "histogram",
    engine: EngineOption = None,
    spark_master: SparkMaster = None,
    config: Config = None,
    debug: Debug = False,
) -> None:
    """Print the heavy step (the similarity-mask histogram, or the cells) as SQL to run where the data live.

    The query computes its own whole-table statistics; `cohortsql assemble` turns its result into
    the values `run` gives.
    """
    with _reported_failures(debug):
        options = _options(locals(), SQL_KEYS)
        typer.echo(
            histogram_sql(options.get("data"), **_request(options), **_pick(options, "table", "dialect", "variant"))
        )


@app.command(
    epilog=(
        "Examples:\n\n"
        "  cohortsql sql scores.parquet --prediction score --id loan --features age,region > histogram.sql\n\n"
        "  (run histogram.sql in the warehouse, save its result as histogram.parquet)\n\n"
        "  cohortsql assemble histogram.parquet --features age,region --out explained.parquet"
    )
)
def assemble(
    histogram: Annotated[
        Path | None, typer.Argument(help="The result of the `cohortsql sql` query (.parquet or .csv).")
    ] = None,
    similar: Similar = None,
    features: Features = None,
    method: Method = None,
    seed: Seed = None,
    tolerance: Tolerance = None,
    max_permutations: MaxPermutations = None,
    out: Out = None,
    into_table: IntoTable = None,
    database: Database = None,
    replace: Replace = False,
    config: Config = None,
    top: Top = 10,
    debug: Debug = False,
) -> None:
    """Cohort Shapley values from the result of `cohortsql sql`, computed in any warehouse.

    Name the features as for `cohortsql sql`, in the same order.
    """
    with _reported_failures(debug):
        options = _options(locals(), ASSEMBLE_KEYS)
        if histogram is None:
            raise CohortError("no HISTOGRAM given: pass the file the `cohortsql sql` query's result was saved to")
        result = assemble_histogram(
            histogram,
            similarity=_similarity(options.get("similar"), options.get("features")),
            **_pick(options, "method", "seed", "tolerance", "max_permutations"),
        )
        written = _write(options, {"": result.local, "totals": result.totals, "paths": result.paths})
        typer.echo(summary(result, top) + written)


PLOT_KINDS = ("stacked", "stacked-squared", "effects", "target", "path")


@app.command(
    epilog=(
        "Examples:\n\n"
        "  cohortsql run --config examples/boston.toml --out explained.parquet\n\n"
        "  cohortsql plot explained.parquet --kind stacked --out stacked.png\n\n"
        "  cohortsql plot explained.parquet --kind path --id 204 --out path.png"
    )
)
def plot(
    result: Annotated[
        Path, typer.Argument(help="The long table `cohortsql run --out` wrote (its _totals and _paths beside it).")
    ],
    kind: Annotated[str, typer.Option(help=f"{' | '.join(PLOT_KINDS)}.")] = "stacked",
    out: Annotated[Path | None, typer.Option(help="Where to write the figure (.png, .svg or .pdf).")] = None,
    id: Annotated[str | None, typer.Option("--id", help="The target, for --kind target and path.")] = None,
    debug: Debug = False,
) -> None:
    """Draw a figure of the results of `cohortsql run`."""
    with _reported_failures(debug):
        from cohortsql import plot as plots

        if kind not in PLOT_KINDS:
            raise CohortError(f"--kind must be one of {', '.join(PLOT_KINDS)}, got {kind!r}")
        if out is None:
            raise CohortError("no --out given: name the figure file, e.g. --out figure.png")
        if kind in ("target", "path"):
            if id is None:
                raise CohortError(f"--kind {kind} needs --id of a target")
            tables = plots.read_tables(result)
            target = _typed_id(id, tables.totals["id"].dtype)
            figure = (plots.target if kind == "target" else plots.path)(result, target)
        elif kind == "effects":
            figure = plots.effects(result)
        else:
            figure = plots.stacked(result, squared=kind == "stacked-squared")
        if not Path(out).parent.is_dir():
            raise CohortError(f"cannot write {str(out)!r}: the directory {str(Path(out).parent)!r} does not exist")
        figure.savefig(out, dpi=120)
        typer.echo(f"wrote {out}")


def _typed_id(text: str, dtype: Any) -> Any:
    """An --id given as text, converted to the type of the result's id column."""
    if dtype.is_integer():
        try:
            return int(text)
        except ValueError:
            raise CohortError(f"--id {text!r}: this result's ids are integers") from None
    return text


def summary(result: CohortShapleyResult, top: int) -> str:
    """A short report: the run's size and the features ranked by mean |CS| and by mean squared CS."""
    importance = result.global_
    by_value = importance.sort("mean_abs_shapley", descending=True).head(top)
    by_square = importance.sort("shapley_effect", descending=True).head(top)
    width = max(len(feature) for feature in result.features)
    lines = [
        f"{len(result.ids)} targets x {len(result.features)} features, {result.subjects} subjects,"
        f" mean {result.mean:.6g}, method {result.method}",
        "",
        f"{'by mean |shapley|':<{width + 14}}by mean shapley_squared",
    ]
    for left, right in zip(by_value.iter_rows(named=True), by_square.iter_rows(named=True)):
        lines.append(
            f"{left['feature']:<{width}}  {left['mean_abs_shapley']:<10.4g}  "
            f"{right['feature']:<{width}}  {right['shapley_effect']:.4g}"
        )
    return "\n".join(lines)


def effects_summary(effects: ShapleyEffects) -> str:
    """Shapley effects ranked, with their shares of the variance."""
    ranked = effects.effects.sort("shapley_effect", descending=True)
    width = max(len(feature) for feature in ranked["feature"])
    lines = [
        f"variance {effects.variance:.6g}; the cohorts on every feature explain {effects.explained:.6g}"
        f" ({effects.explained_share:.1%}); {effects.targets} targets of {effects.subjects} subjects, path {effects.path}",
        "",
        f"{'feature':<{width}}  {'effect':>10}  {'se':>10}  {'share':>7}",
    ]
    for row in ranked.iter_rows(named=True):
        lines.append(
            f"{row['feature']:<{width}}  {row['shapley_effect']:>10.4g}  {row['shapley_effect_se']:>10.2g}  {row['share']:>7.1%}"
        )
    return "\n".join(lines)


def _options(arguments: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The command's options: its config file's, overridden by the flags that were given."""
    flags = {key: arguments[key] for key in keys if key in arguments and key != "config"}
    flags["similar"] = dict(_split_similar(text) for text in arguments.get("similar") or [])
    return _merge_config(arguments.get("config"), flags, keys)


def _request(options: dict[str, Any]) -> dict[str, Any]:
    """The arguments every API function takes, from the merged options."""
    if not options.get("data"):
        raise CohortError("no DATA given: pass a file, FILE.duckdb:TABLE or a SQL query (or data = ... in --config)")
    if not options.get("prediction"):
        raise CohortError("no --prediction given: name the column to explain")
    chosen = [name for name in ("targets", "target_ids", "sample") if options.get(name) is not None]
    if len(chosen) > 1:
        raise CohortError(f"give one of --targets, --target-ids and --sample, not {' and '.join(chosen)}")
    sample = options.get("sample")
    if sample is not None and sample >= 1:
        if not float(sample).is_integer():
            raise CohortError(f"--sample {sample}: a count must be a whole number (or a fraction below 1)")
        sample = int(sample)
    engine = options.get("engine")
    if engine is not None and engine not in ENGINES:
        raise CohortError(f"--engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if options.get("spark_master") and engine != "spark":
        raise CohortError("--spark-master needs --engine spark")
    return dict(
        prediction=options["prediction"],
        similarity=_similarity(options.get("similar"), options.get("features")),
        id=options.get("id"),
        targets=options.get("targets") or _target_ids(options.get("target_ids")) or sample,
        seed=options.get("seed"),
        engine=engine,
        connection=spark_session(options.get("spark_master")) if engine == "spark" else None,
    )


def _pick(options: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: options[name] for name in names if options.get(name) is not None}


def _similarity(similar: dict[str, str] | None, features: str | list[str] | None) -> dict[str, str | None]:
    """--features (default kinds) then --similar FEATURE=KIND, in the order given."""
    names = features.split(",") if isinstance(features, str) else list(features or [])
    kinds: dict[str, str | None] = {name.strip(): None for name in names if name.strip()}
    if not isinstance(similar or {}, dict):
        raise CohortError('similar must be a table of FEATURE = KIND, e.g. [similar] age = "range:0.1"')
    kinds.update(similar or {})
    if not kinds:
        raise CohortError("no features given: use --similar FEATURE=KIND or --features a,b,c")
    return kinds


def _split_similar(text: str) -> tuple[str, str]:
    name, equals, kind = text.partition("=")
    if not equals or not name.strip() or not kind.strip():
        raise CohortError(f"--similar {text!r} is not FEATURE=KIND, e.g. --similar age=range:0.1")
    return name.strip(), kind.strip()


def _target_ids(text: str | list[Any] | None) -> list[Any] | None:
    """--target-ids as given: the values are parsed by the id column's type (dates, text like 003, integers)."""
    if text is None or isinstance(text, list):
        return text
    return [value.strip() for value in text.split(",") if value.strip()] or None


def _write(options: dict[str, Any], tables: dict[str, Any]) -> str:
    """--out (the first table at the path, others beside it) and --into-table; says what it wrote."""
    engine = options.get("engine") or "duckdb"
    if options.get("into_table") and engine == "duckdb" and not options.get("database"):
        raise CohortError("--into-table needs --database FILE.duckdb")
    if options.get("database") and not options.get("into_table"):
        raise CohortError("--database needs --into-table NAME")
    written: list[str] = []
    if options.get("out"):
        out = Path(options["out"])
        paths = {sibling_path(out, label) if label else out: frame for label, frame in tables.items()}
        write_frames(paths)
        written.extend(str(path) for path in paths)
    if options.get("into_table"):
        name = options["into_table"]
        names = {f"{name}_{label}" if label else name: frame.to_arrow() for label, frame in tables.items()}
        database = options.get("database")
        connection = spark_session(options.get("spark_master")) if engine == "spark" else None
        settings = EngineSettings(database=None if database is None else str(database))
        target = open_engine(engine=engine, connection=connection, settings=settings)
        try:
            target.write_tables(names, replace=bool(options.get("replace")), protected=_input_tables(options))
        finally:
            target.close()
        where = f"{database}: " if database else ""
        written.extend(f"{where}{table}" for table in names)
    return "".join(f"\nwrote {item}" for item in written)


def _input_tables(options: dict[str, Any]) -> tuple[str, ...]:
    """Tables that --into-table must never replace: the run's own input table in the same database."""
    data = str(options.get("data") or "")
    in_database = database_table(data)
    if in_database is not None and options.get("database"):
        database, table = in_database
        return (table,) if Path(database).resolve() == Path(options["database"]).resolve() else ()
    return (data,) if options.get("engine") == "spark" and not is_query(data) else ()


def _merge_config(config: Path | None, flags: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Options from the TOML file, overridden by every flag that was given."""
    options: dict[str, Any] = {}
    if config is not None:
        try:
            options = tomllib.loads(Path(config).read_text())
        except OSError as error:
            raise CohortError(f"cannot read config {str(config)!r}: {error.strerror}") from None
        except tomllib.TOMLDecodeError as error:
            raise CohortError(f"config {str(config)!r} is not valid TOML: {error}") from None
        options = {key.replace("-", "_"): value for key, value in options.items()}
        known = [key for key in keys if key != "config"]
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise CohortError(f"config {str(config)!r} has unknown keys {unknown}; known keys: {', '.join(known)}")
        for key, value in options.items():
            _check_config_value(config, key, value)
        for key in _PATH_KEYS:
            # Paths in a config file are relative to the file, so it works from any directory.
            value = options.get(key)
            if isinstance(value, str) and not is_query(value) and not Path(value).is_absolute():
                options[key] = str(Path(config).parent / value)
    for key, value in flags.items():
        if value in (None, [], {}):
            continue
        if isinstance(value, dict) and isinstance(options.get(key), dict):
            value = {**options[key], **value}  # e.g. one --similar flag overrides one feature's kind
        options[key] = value
    return options


def _check_config_value(config: Path, key: str, value: object) -> None:
    expected = CONFIG_TYPES[key]
    wrong = not isinstance(value, expected) or (isinstance(value, bool) and bool not in expected)
    if key == "similar" and isinstance(value, dict):
        wrong = not all(isinstance(kind, str) for kind in value.values())
    if key == "features" and isinstance(value, list):
        wrong = not all(isinstance(item, str) for item in value)
    if key == "target_ids" and isinstance(value, list):
        wrong = not all(isinstance(item, str | int) and not isinstance(item, bool) for item in value)
    if wrong:
        names = " or ".join(
            {
                str: "text",
                int: "a whole number",
                float: "a number",
                list: "a list",
                dict: "a table",
                bool: "true or false",
            }[kind]
            for kind in expected
        )
        if key == "similar":
            names = 'a table of FEATURE = "KIND" entries'
        raise CohortError(f"config {str(config)!r}: {key} must be {names}, got {value!r}")


@contextmanager
def _reported_failures(debug: bool) -> Iterator[None]:
    """Turn a failure into one line on stderr and exit status 2, unless --debug."""
    try:
        yield
    except (CohortError, OSError) as error:
        if debug:
            raise
        typer.echo(f"cohortsql: error: {error}", err=True)
        raise typer.Exit(2) from None


def main() -> None:
    """Entry point of the `cohortsql` script."""
    app()


if __name__ == "__main__":
    main()
