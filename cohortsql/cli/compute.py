"""Commands that compute: each reads its options (flags over a config file), calls the Python API,
writes what was asked and prints a summary."""

from __future__ import annotations

from typing import Any

import typer

from cohortsql.cli import options as flags
from cohortsql.cli.failures import _reported_failures
from cohortsql.cli.options import (
    Bootstrap,
    Confidence,
    Config,
    Data,
    Database,
    Debug,
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
    TargetIds,
    Targets,
    TempDirectory,
    Tolerance,
    Top,
    Weight,
)
from cohortsql.errors import CohortError

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
        result = calibrate_threshold(
            options["data"],
            features=chosen,
            exact=flags.names(options.get("exact")),
            **lists,
            **flags.pick(options, "kind", "runs", "seed"),
            **flags.pick(options, "engine", "spark_master"),
        )
        written = write(options, {"": result.rates}, result.settings)
        if options.get("plot"):
            from cohortsql.plot import calibration

            calibration(result).savefig(options["plot"], dpi=100)
            written += f"\nwrote {options['plot']}"
        typer.echo(calibration_summary(result) + written)


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
