"""The commands. Each reads its options (flags over a config file), calls the Python API and prints a summary.

The vocabulary is the Python API's: `shapley` is `cohortsql.cohort_shapley` (local values), `effects`
is `cohortsql.shapley_effects` (global). `run` and `global` are the earlier names of the same commands.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from cohortsql.cli import options as flags
from cohortsql.cli.options import (
    Bootstrap,
    Confidence,
    Config,
    Data,
    Database,
    Debug,
    Dialect,
    DryRun,
    EngineOption,
    Features,
    Id,
    IntoTable,
    MaxPermutations,
    MemoryLimit,
    MethodOption,
    Out,
    PathOption,
    Prediction,
    Progress,
    Reasons,
    Replace,
    Sample,
    Seed,
    SparkMaster,
    Table,
    TargetIds,
    Targets,
    TempDirectory,
    Tolerance,
    Top,
    Variant,
    Weight,
)
from cohortsql.errors import CohortError, CohortWarning

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT), as shells report it."""


APP_HELP = (
    "Explain decisions in prediction tables with cohort Shapley values (Mase, Owen & Seiler), using only"
    " rows that exist. Data may be Parquet, CSV or JSON files, a DuckDB table (FILE.duckdb:TABLE)"
    " or a SQL query; `cohortsql COMMAND --help` shows its options and examples."
)


@app.callback(help=APP_HELP)
def cohortsql() -> None:
    """The commands' group (its help is APP_HELP: one paragraph, which the terminal wraps)."""


SHAPLEY_EPILOG = (
    "Examples:\n\n"
    "  cohortsql shapley --config examples/boston.toml\n\n"
    "  cohortsql shapley examples/data/boston_predictions.parquet --prediction prediction"
    " --similar lstat=quantile:0.1 --similar rm=quantile:0.1 --features chas,rad --out explained.parquet --reasons 3\n\n"
    "  cohortsql shapley 'scores/*.parquet' --prediction score --id loan_id --features age,income"
    " --targets \"region = 'north'\" --sample 1000 --into-table explained --database results.duckdb\n\n"
    "  cohortsql shapley loans.parquet --prediction score --prediction default --weight w --features age,income"
    " --target-ids 17,42 --bootstrap 200 --seed 7\n\n"
    "  cohortsql shapley big.parquet --prediction score --features age,income,region --dry-run"
)


def shapley(
    data: Data = None,
    prediction: Prediction = None,
    id: Id = None,
    weight: Weight = None,
    similar: flags.Similar = None,
    features: Features = None,
    targets: Targets = None,
    target_ids: TargetIds = None,
    sample: Sample = None,
    seed: Seed = None,
    bootstrap: Bootstrap = None,
    confidence: Confidence = None,
    method: MethodOption = None,
    path: PathOption = None,
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
    reasons: Reasons = None,
    dry_run: DryRun = False,
    progress: Progress = None,
    debug: Debug = False,
) -> None:
    """Cohort Shapley values of every feature for every target; prints the most important features."""
    with _reported_failures(debug):
        from cohortsql.api.estimate import estimate
        from cohortsql.api.local import cohort_shapley
        from cohortsql.cli.outputs import write
        from cohortsql.cli.summaries import shapley_summary

        options = flags.options(locals(), flags.SHAPLEY_KEYS)
        request = flags.request(options)
        computing = flags.pick(options, "method", "path", "memory_limit", "temp_directory")
        if dry_run:
            typer.echo(
                str(
                    estimate(
                        options["data"], **request, **computing, **flags.pick(options, "max_permutations", "bootstrap")
                    )
                )
            )
            return
        count = options.get("reasons")
        if count is not None and (isinstance(count, bool) or count < 1):
            raise CohortError(f"--reasons must be at least 1, got {count}")
        result = cohort_shapley(
            options["data"],
            **request,
            **computing,
            **flags.pick(options, "tolerance", "max_permutations", "bootstrap", "confidence"),
            progress=progress,
        )
        tables = {"": result.local, "totals": result.totals, "paths": result.paths}
        if count:
            tables["reasons"] = result.reasons(count)
        written = write(options, tables, result.settings)
        typer.echo(shapley_summary(result, top, count) + written)


def effects(
    data: Data = None,
    prediction: Prediction = None,
    id: Id = None,
    weight: Weight = None,
    similar: flags.Similar = None,
    features: Features = None,
    targets: Targets = None,
    target_ids: TargetIds = None,
    sample: Sample = None,
    seed: Seed = None,
    bootstrap: Bootstrap = None,
    confidence: Confidence = None,
    path: PathOption = None,
    memory_limit: MemoryLimit = None,
    temp_directory: TempDirectory = None,
    out: Out = None,
    into_table: IntoTable = None,
    database: Database = None,
    replace: Replace = False,
    engine: EngineOption = None,
    spark_master: SparkMaster = None,
    config: Config = None,
    dry_run: DryRun = False,
    progress: Progress = None,
    debug: Debug = False,
) -> None:
    """Shapley effects: how much of the variance of the prediction each feature explains."""
    with _reported_failures(debug):
        from cohortsql.api.effects import shapley_effects
        from cohortsql.api.estimate import estimate
        from cohortsql.cli.outputs import write
        from cohortsql.cli.summaries import effects_summary

        options = flags.options(locals(), flags.EFFECTS_KEYS)
        request = flags.request(options)
        computing = flags.pick(options, "path", "memory_limit", "temp_directory")
        if dry_run:
            typer.echo(str(estimate(options["data"], **request, **computing)))
            return
        result = shapley_effects(
            options["data"], **request, **computing, **flags.pick(options, "bootstrap", "confidence"), progress=progress
        )
        written = write(options, {"": result.effects}, result.settings)
        typer.echo(effects_summary(result) + written)


def uniqueness(
    data: Data = None,
    id: Id = None,
    weight: Weight = None,
    similar: flags.Similar = None,
    features: Features = None,
    targets: Targets = None,
    target_ids: TargetIds = None,
    sample: Sample = None,
    seed: Seed = None,
    path: PathOption = None,
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
    """Uniqueness Shapley: which features make each row identifiable (a privacy audit; no prediction needed)."""
    with _reported_failures(debug):
        from cohortsql.api.uniqueness import uniqueness_shapley
        from cohortsql.cli.outputs import write
        from cohortsql.cli.summaries import uniqueness_summary

        options = flags.options(locals(), flags.UNIQUENESS_KEYS)
        request = flags.request(options, explained=False)
        result = uniqueness_shapley(
            options["data"],
            **request,
            **flags.pick(options, "path", "memory_limit", "temp_directory"),
            progress=progress,
        )
        written = write(options, {"": result.local, "totals": result.totals}, result.settings)
        typer.echo(uniqueness_summary(result, top) + written)


def compare(
    data: Data = None,
    prediction: Prediction = None,
    model: flags.ModelFile = None,
    id: Id = None,
    similar: flags.Similar = None,
    features: Features = None,
    targets: Targets = None,
    target_ids: TargetIds = None,
    sample: Sample = None,
    seed: Seed = None,
    model_input: flags.ModelInputOption = None,
    model_output: flags.ModelOutputOption = None,
    baseline_sample: flags.BaselineSample = None,
    realistic: flags.Realistic = None,
    method: MethodOption = None,
    max_permutations: MaxPermutations = None,
    tolerance: Tolerance = None,
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
    """Cohort, baseline and all-baseline Shapley side by side (and squared), with the share of the model-based
    values that rests on realistic hybrid points. Needs the model (--model) as well as its predictions."""
    with _reported_failures(debug):
        from cohortsql.api.compare import compare as compare_methods
        from cohortsql.cli.outputs import write
        from cohortsql.cli.summaries import comparison_summary
        from cohortsql.games.baseline.models import load_model

        options = flags.options(locals(), flags.COMPARE_KEYS)
        request = flags.request(options)
        if not options.get("model"):
            raise CohortError("no --model given: name the fitted model's pickle (or .joblib) file")
        result = compare_methods(
            options["data"],
            model=load_model(options["model"]),
            **request,
            **flags.pick(
                options,
                "model_input",
                "model_output",
                "baseline_sample",
                "realistic",
                "method",
                "max_permutations",
                "tolerance",
                "memory_limit",
                "temp_directory",
            ),
            progress=progress,
        )
        tables = {"": result.local, "global": result.global_, "totals": result.totals}
        written = write(options, tables, result.cohort.settings | {"comparison": "CS, BS, ABS"})
        typer.echo(comparison_summary(result, top) + written)


def calibrate(
    data: Data = None,
    features: Features = None,
    exact: flags.Exact = None,
    kind: flags.CalibrationKindOption = None,
    thresholds: flags.Thresholds = None,
    holdouts: flags.Holdouts = None,
    runs: flags.Runs = None,
    seed: Seed = None,
    out: Out = None,
    plot: flags.PlotOut = None,
    engine: EngineOption = None,
    spark_master: SparkMaster = None,
    config: Config = None,
    debug: Debug = False,
) -> None:
    """The similarity threshold at which held-out rows are realistic, beside points drawn from the marginals."""
    with _reported_failures(debug):
        from cohortsql.api.calibrate import calibrate as calibrate_threshold
        from cohortsql.cli.outputs import write
        from cohortsql.cli.summaries import calibration_summary

        options = flags.options(locals(), flags.CALIBRATE_KEYS)
        if not options.get("data"):
            raise CohortError("no DATA given: pass a file, FILE.duckdb:TABLE or a SQL query")
        chosen = flags.names(options.get("features"))
        if not chosen:
            raise CohortError("no features given: use --features a,b,c")
        lists: dict[str, Any] = {
            name: values for name in ("thresholds", "holdouts") if (values := flags.numbers(name, options.get(name)))
        }
        engine_name = options.get("engine")
        connection = None
        if engine_name == "spark":
            from cohortsql.engines import spark_session

            connection = spark_session(options.get("spark_master"))
        result = calibrate_threshold(
            options["data"],
            features=chosen,
            exact=flags.names(options.get("exact")),
            **lists,
            **flags.pick(options, "kind", "runs", "seed"),
            engine=engine_name,
            connection=connection,
        )
        written = write(options, {"": result.rates}, result.settings)
        if options.get("plot"):
            from cohortsql.plot import calibration

            calibration(result).savefig(options["plot"], dpi=100)
            written += f"\nwrote {options['plot']}"
        typer.echo(calibration_summary(result) + written)


def report(
    result: Annotated[
        Path, typer.Argument(help="The long table `cohortsql shapley --out` wrote (its _totals and _paths beside it).")
    ],
    out: Annotated[Path, typer.Option(help="The report, a self-contained .html file.")],
    global_: Annotated[
        Path | None,
        typer.Option("--global", help="The table `cohortsql effects --out` wrote, for the effects' standard errors."),
    ] = None,
    target_ids: TargetIds = None,
    debug: Debug = False,
) -> None:
    """A self-contained HTML report to share: settings, diagnostics, effects, drivers, every target's reasons."""
    with _reported_failures(debug):
        from cohortsql.report import ReportTables, write_report

        chosen = [value.strip() for value in target_ids.split(",") if value.strip()] if target_ids else None
        written = write_report(ReportTables.of_files(result, global_), out, chosen)
        typer.echo(f"wrote {written}")


EFFECTS_EPILOG = (
    "Examples:\n\n"
    "  cohortsql effects examples/data/boston_predictions.parquet --prediction prediction --features lstat,rm,chas\n\n"
    "  cohortsql effects big.parquet --prediction score --features age,income,region --sample 0.01 --seed 1\n\n"
    "  cohortsql effects loans.parquet --prediction score --prediction default --weight w --features age,income"
    " --bootstrap 200 --seed 7"
)
UNIQUENESS_EPILOG = (
    "Examples:\n\n"
    "  cohortsql uniqueness examples/data/titanic.csv --features sex,age,pclass --out uniqueness.parquet\n\n"
    "  cohortsql uniqueness patients.parquet --id patient --features zip,birth_year,sex --similar age=exact"
)
COMPARE_EPILOG = (
    "Examples:\n\n"
    "  cohortsql compare titanic.parquet --prediction prediction --model titanic.pkl --model-output probability"
    " --similar age=range:0.1 --features pclass,sex,sibsp,parch --out compared.parquet\n\n"
    "  cohortsql compare scores.parquet --prediction score --model model.joblib --features age,income"
    " --sample 500 --baseline-sample 2000 --seed 1"
)
CALIBRATE_EPILOG = (
    "Examples:\n\n"
    "  cohortsql calibrate examples/data/boston_predictions.parquet --features crim,zn,indus,nox,rm,age,dis,tax,lstat"
    " --runs 20 --seed 1 --plot calibration.png\n\n"
    "  cohortsql calibrate examples/data/titanic.csv --features pclass,sex,age,sibsp,parch --kind quantile"
)

app.command("shapley", epilog=SHAPLEY_EPILOG)(shapley)
app.command("effects", epilog=EFFECTS_EPILOG)(effects)
app.command("uniqueness", epilog=UNIQUENESS_EPILOG)(uniqueness)
app.command("compare", epilog=COMPARE_EPILOG)(compare)
app.command("calibrate", epilog=CALIBRATE_EPILOG)(calibrate)
app.command(
    "report",
    epilog="Example:\n\n  cohortsql shapley --config examples/boston.toml --out boston.parquet\n\n"
    "  cohortsql report boston.parquet --target-ids 204 --out boston.html",
)(report)
app.command("run", epilog=SHAPLEY_EPILOG, help="The earlier name of `shapley`.")(shapley)
app.command("global", epilog=EFFECTS_EPILOG, help="The earlier name of `effects`.")(effects)


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
    similar: flags.Similar = None,
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
    the values `shapley` gives.
    """
    with _reported_failures(debug):
        from cohortsql.api.sql import histogram_sql

        options = flags.options(locals(), flags.SQL_KEYS)
        typer.echo(
            histogram_sql(
                options.get("data"),
                **flags.request(options),
                **flags.pick(options, "table", "dialect", "variant"),
            )
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
    similar: flags.Similar = None,
    features: Features = None,
    method: MethodOption = None,
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
        from cohortsql.api.assemble import assemble as assemble_histogram
        from cohortsql.cli.outputs import write
        from cohortsql.cli.summaries import shapley_summary

        options = flags.options(locals(), flags.ASSEMBLE_KEYS)
        if histogram is None:
            raise CohortError("no HISTOGRAM given: pass the file the `cohortsql sql` query's result was saved to")
        result = assemble_histogram(
            histogram,
            similarity=flags.similarity(options.get("similar"), options.get("features")),
            **flags.pick(options, "method", "seed", "tolerance", "max_permutations"),
        )
        written = write(options, {"": result.local, "totals": result.totals, "paths": result.paths}, result.settings)
        typer.echo(shapley_summary(result, top, None) + written)


PLOT_KINDS = ("stacked", "stacked-squared", "effects", "target", "path", "beeswarm")


@app.command(
    epilog=(
        "Examples:\n\n"
        "  cohortsql shapley --config examples/boston.toml --out explained.parquet\n\n"
        "  cohortsql plot explained.parquet --kind stacked --out stacked.png\n\n"
        "  cohortsql plot explained.parquet --kind path --id 204 --out path.png"
    )
)
def plot(
    result: Annotated[
        Path,
        typer.Argument(
            help="The long table `cohortsql shapley --out` wrote (its _totals and _paths beside it);"
            " for --kind effects also the table `cohortsql effects --out` wrote."
        ),
    ],
    kind: Annotated[str, typer.Option(help=f"{' | '.join(PLOT_KINDS)}.")] = "stacked",
    out: Annotated[Path | None, typer.Option(help="Where to write the figure (.png, .svg or .pdf).")] = None,
    id: Annotated[str | None, typer.Option("--id", help="The target, for --kind target and path.")] = None,
    debug: Debug = False,
) -> None:
    """Draw a figure of the results of `cohortsql shapley` (or, for --kind effects, `cohortsql effects`)."""
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
        elif kind == "beeswarm":
            figure = plots.beeswarm(result)
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


@contextmanager
def _reported_failures(debug: bool) -> Iterator[None]:
    """One line on stderr per warning; a failure as one line and status 2, Ctrl-C as one line and 130.

    Warnings are printed once their recorder is gone: printing one while it records (as
    `warnings.showwarning` does for other categories) would record it again, without end."""
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CohortWarning)
            # PySpark warns at import that pandas 3 is not fully supported; cohortsql hands it Arrow.
            warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas", FutureWarning)
            yield
    except (CohortError, OSError) as error:
        if debug:
            raise
        _print_warnings(caught)
        typer.echo(f"cohortsql: error: {error}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        if debug:
            raise
        typer.echo("cohortsql: interrupted; nothing was written", err=True)
        raise typer.Exit(INTERRUPTED) from None
    _print_warnings(caught)


def _print_warnings(caught: list[warnings.WarningMessage]) -> None:
    seen: set[str] = set()
    for warning in caught:
        text = str(warning.message)
        if issubclass(warning.category, CohortWarning) and text not in seen:
            seen.add(text)
            typer.echo(f"cohortsql: warning: {text}", err=True)
        elif not issubclass(warning.category, CohortWarning):
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)


def main() -> None:
    """Entry point of the `cohortsql` script."""
    app()
