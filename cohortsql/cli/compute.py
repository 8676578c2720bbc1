"""Commands that compute: each reads its options (flags over a config file), calls the Python API,
writes what was asked and prints a summary."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from cohortsql import _typing
from cohortsql.cli.examples import examples
from cohortsql.cli.failures import print_warnings_so_far
from cohortsql.cli.flags import A_TABLE, EXPLAINED, OUTPUTS, Flags
from cohortsql.cli.options import command, configured_engine, names, numbers, pick, request
from cohortsql.errors import CohortError

SHAPLEY_EPILOG = examples(
    "cohortsql shapley --config examples/boston.toml",
    (
        "cohortsql shapley examples/data/boston_predictions.parquet --prediction prediction"
        " --similar lstat=quantile:0.1 --similar rm=quantile:0.1 --features chas,rad --out explained.parquet"
        " --reasons 3"
    ),
    (
        "cohortsql shapley 'scores/*.parquet' --prediction score --id loan_id --features age,income"
        " --targets \"region = 'north'\" --sample 1000 --into-table explained --database results.duckdb"
    ),
    (
        "cohortsql shapley loans.parquet --prediction score --prediction default --weight w"
        " --features age,income --target-ids 17,42 --bootstrap 200 --seed 7"
    ),
    "cohortsql shapley big.parquet --prediction score --features age,income,region --dry-run",
)


@command(EXPLAINED, A_TABLE, _typing.ShapleyOptions, OUTPUTS, ("top", "reasons", "dry_run"))
def shapley(options: Flags) -> None:
    """Cohort Shapley values of every feature for every target; prints the most important features."""
    from cohortsql.api.estimate import estimate
    from cohortsql.api.local import cohort_shapley
    from cohortsql.cli.outputs import write, write_on_the_engine, written_on_the_engine
    from cohortsql.cli.summaries import shapley_summary

    arguments = request(options, _typing.ShapleyOptions)
    if _dry_run(options, estimate, **arguments):
        return
    count = options.get("reasons")
    if count is not None and (isinstance(count, bool) or count < 1):
        raise CohortError(f"--reasons must be at least 1, got {count}")
    if written_on_the_engine(options, arguments):
        typer.echo(write_on_the_engine(options, arguments))
        return
    result = cohort_shapley(options["data"], **arguments)
    tables = {"": result.local, "totals": result.totals, "paths": result.paths}
    if count:
        tables["reasons"] = result.reasons(count)
    tables |= _lattice_tables(arguments, result)
    written = write(options, tables, result.settings)
    warned = print_warnings_so_far()  # before the table whose rows they qualify
    typer.echo(shapley_summary(result, options["top"], count, warned) + written)


@command(EXPLAINED, A_TABLE, _typing.EffectsOptions, OUTPUTS, ("report", "dry_run"))
def effects(options: Flags) -> None:
    """Shapley effects: how much of the variance of the prediction each feature explains."""
    from cohortsql.api.effects import shapley_effects
    from cohortsql.api.estimate import estimate
    from cohortsql.cli.outputs import write
    from cohortsql.cli.summaries import effects_summary
    from cohortsql.report import check_report_path
    from cohortsql.results.effects import ShapleyEffects

    arguments = request(options, _typing.EffectsOptions)
    if _dry_run(options, estimate, **arguments):
        return
    report = options.get("report")
    if report:
        if not isinstance(arguments["prediction"], str):
            raise CohortError("a report shows the effects of one --prediction column: give one with --report")
        check_report_path(Path(report))  # before the work, not after it
    result = shapley_effects(options["data"], **arguments)
    tables = {"": result.effects} | _lattice_tables(arguments, result)
    written = write(options, tables, result.settings)
    if report and isinstance(result, ShapleyEffects):
        result.report(report)
        written += f"\nwrote {report}"
    warned = print_warnings_so_far()  # before the table whose rows they qualify
    typer.echo(effects_summary(result, warned) + written)


def _dry_run(options: Flags, planner: Callable[..., object], **arguments: Any) -> bool:
    """With --dry-run, print the plan `planner` gives for the data and these arguments, and say that
    the command is done (it computes nothing)."""
    if not options.get("dry_run"):
        return False
    typer.echo(str(planner(options["data"], **arguments)))
    return True


def _lattice_tables(arguments: dict[str, Any], result: Any) -> dict[str, Any]:
    """The tables beside --out that --interactions, --anchored and --group-values owen ask for, by label
    (of a `cohort_shapley`, `shapley_effects` or any game's result: they name them alike)."""
    asked = {
        "interactions": (arguments.get("interactions"), lambda: result.interaction_table),
        "anchored": (arguments.get("anchored"), lambda: result.anchored()),
        "owen": (arguments.get("group_values") == "owen", lambda: result.owen_table),
    }
    return {label: table() for label, (wanted, table) in asked.items() if wanted}


@command(("data", "similar", "features", "target_ids"), A_TABLE, _typing.UniquenessOptions, OUTPUTS, ("top",))
def uniqueness(options: Flags) -> None:
    """Uniqueness Shapley: which features make each row identifiable (a privacy audit; no prediction needed)."""
    from cohortsql.api.uniqueness import uniqueness_shapley
    from cohortsql.cli.outputs import write
    from cohortsql.cli.summaries import uniqueness_summary

    arguments = request(options, _typing.UniquenessOptions, explained=False)
    result = uniqueness_shapley(options["data"], **arguments)
    tables = {"": result.local, "totals": result.totals} | _lattice_tables(arguments, result)
    written = write(options, tables, result.settings)
    print_warnings_so_far()
    typer.echo(uniqueness_summary(result, options["top"]) + written)


@command(("data", "game", *EXPLAINED[1:]), A_TABLE, _typing.GameOptions, OUTPUTS, ("top",))
def game(options: Flags) -> None:
    """Shapley values of any game of cohorts (--game): uniqueness, k-anonymity:K, cohort-variance (which
    reads --prediction); prints the features by their mean value."""
    from cohortsql.api.games import game_shapley, reads_a_column
    from cohortsql.cli.outputs import write
    from cohortsql.cli.summaries import game_summary

    name = options.get("game")
    if not isinstance(name, str) or not name:
        raise CohortError("no --game given: name one, e.g. --game cohort-variance or --game k-anonymity:5")
    explained = reads_a_column(name)
    arguments = request(options, _typing.GameOptions, explained=explained)
    if explained:
        prediction = arguments["prediction"]
        if not isinstance(prediction, str):
            raise CohortError(f"--game {name} explains one --prediction column, got {len(prediction)}")
    elif options.get("prediction"):
        raise CohortError(f"--game {name} reads the cohorts' sizes alone: leave out --prediction")
    result = game_shapley(options["data"], game=name, **arguments)
    tables = {"": result.local, "totals": result.totals} | _lattice_tables(arguments, result)
    written = write(options, tables, result.settings)
    print_warnings_so_far()
    typer.echo(game_summary(result, options["top"]) + written)


@command(EXPLAINED, A_TABLE, ("model",), _typing.CompareOptions, OUTPUTS, ("top", "dry_run"))
def compare(options: Flags) -> None:
    """Cohort, baseline and all-baseline Shapley side by side (and squared), with the share of the model-based
    values that rests on realistic hybrid points. Needs the model (--model) as well as its predictions."""
    from cohortsql.api.compare import compare as compare_methods
    from cohortsql.api.estimate import estimate_compare
    from cohortsql.api.surfaces import load_model
    from cohortsql.cli.outputs import write
    from cohortsql.cli.summaries import comparison_summary

    arguments = request(options, _typing.CompareOptions)
    model = options.get("model")
    if not model:
        raise CohortError("no --model given: name the fitted model's pickle (or .joblib) file")
    loaded = load_model(model)
    if _dry_run(options, estimate_compare, model=loaded, **arguments):
        return
    result = compare_methods(options.get("data"), model=loaded, **arguments)
    tables = {"": result.local, "global": result.global_, "totals": result.totals}
    written = write(options, tables, result.cohort.settings | {"comparison": ["CS", "BS", "ABS"]})
    print_warnings_so_far()
    typer.echo(comparison_summary(result, options["top"]) + written)


AUDIT_EPILOG = examples(
    (
        "cohortsql audit mortgages.parquet --prediction denial --protected race"
        " --features dti,lvr,credit,insurance --report audit.html"
    ),
    (
        "cohortsql audit scores.parquet --prediction score --protected race --protected sex"
        " --features age,income,zip --id loan_id --model model.pkl --out audit.parquet --seed 7"
    ),
)


@command(
    EXPLAINED,
    ("protected",),
    A_TABLE,
    ("model", "threshold", "observed"),
    _typing.AuditOptions,
    ("out", "report", "dry_run"),
)
def audit(options: Flags) -> None:
    """Does the prediction lean on protected attributes, model inputs or not? Each attribute's share of
    the variance explained, each group's mean value and its share of the group's gap, with bootstrap
    intervals, and the features it acts through (with --model, the model's own baseline Shapley beside).
    Interaction values are always computed; by default {default:audit_bootstrap} Bayesian-bootstrap replicates (--bootstrap)
    and, with --model, {default:audit_baseline_sample} baselines (--baseline-sample); --dry-run estimates the time first. With
    --threshold or --observed, the decisions' fairness metrics over every row come after (as the
    fairness command gives them)."""
    from cohortsql.api.audit import audit as audit_prediction
    from cohortsql.api.surfaces import load_model
    from cohortsql.cli.outputs import write
    from cohortsql.report import check_report_path

    arguments = request(options, _typing.AuditOptions)
    protected = _protected(options, arguments, "an audit explains one --prediction column")
    model = options.get("model")
    if options.get("dry_run"):
        from cohortsql.api.audit import estimate_audit

        plan = estimate_audit(options["data"], protected=protected, **arguments)
        later = (
            "\nwith --model, the model's baseline Shapley comes on top (compare --dry-run times it)" if model else ""
        )
        typer.echo(f"{plan}{later}")
        return
    report = options.get("report")
    if report:
        check_report_path(Path(report))  # before the work, not after it
    found = audit_prediction(
        options["data"],
        protected=protected,
        model=load_model(model) if model else None,
        threshold=options.get("threshold"),
        observed=options.get("observed"),
        **arguments,
    )
    tables = {"": found.attributes, "groups": found.groups, "proxies": found.proxies}
    if found.fairness is not None:
        tables |= {"fairness": found.fairness.groups, "metrics": found.fairness.metrics}
    written = write(options, tables, found.cohort.settings | {"protected": list(protected)})
    if report:
        found.report(report)
        written += f"\nwrote {report}"
    print_warnings_so_far()
    typer.echo("\n".join(found.summary()) + written)


@command(("data", "features"), A_TABLE, _typing.CalibrationOptions, ("out", "plot"))
def calibrate(options: Flags) -> None:
    """The similarity threshold at which held-out rows are realistic, beside points drawn from the marginals."""
    from cohortsql.api.calibrate import calibrate as calibrate_threshold
    from cohortsql.cli.outputs import check_figure_path, refuse_inputs, write
    from cohortsql.cli.summaries import calibration_summary

    if not options.get("data"):
        raise CohortError("no DATA given: pass a file, FILE.duckdb:TABLE or a SQL query")
    chosen = names(options.get("features"))
    if not chosen:
        raise CohortError("no features given: use --features a,b,c")
    figure = options.get("plot")
    if figure:
        check_figure_path(Path(figure), "--plot")  # before the work, not after it
        refuse_inputs([Path(figure), *([Path(str(options["out"]))] if options.get("out") else [])], options)
    given = pick(options, *_typing.CalibrationOptions.__annotations__) | configured_engine(options)
    given["exact"] = names(options.get("exact"))
    for name in ("thresholds", "holdouts"):
        if name in given:
            given[name] = numbers(name, given[name])
    result = calibrate_threshold(options["data"], features=chosen, **given)
    written = write(options, {"": result.rates}, result.settings)
    if figure:
        from cohortsql.plot import calibration

        calibration(result).savefig(figure, dpi=100)
        written += f"\nwrote {figure}"
    print_warnings_so_far()
    typer.echo(calibration_summary(result) + written)


EFFECTS_EPILOG = examples(
    ("cohortsql effects examples/data/boston_predictions.parquet --prediction prediction --features lstat,rm,chas"),
    "cohortsql effects big.parquet --prediction score --features age,income,region --sample 0.01 --seed 1",
    (
        "cohortsql effects loans.parquet --prediction score --prediction default --weight w"
        " --features age,income --bootstrap 200 --seed 7"
    ),
)


UNIQUENESS_EPILOG = examples(
    "cohortsql uniqueness examples/data/titanic.csv --features sex,age,pclass --out uniqueness.parquet",
    "cohortsql uniqueness patients.parquet --id patient --features zip,birth_year,sex --similar age=exact",
)


GAME_EPILOG = examples(
    "cohortsql game loans.parquet --game cohort-variance --prediction score --features age,income,region",
    (
        "cohortsql game patients.parquet --game k-anonymity:5 --id patient --features zip,birth_year,sex"
        " --bootstrap 200 --seed 7 --out exposed.parquet"
    ),
)


COMPARE_EPILOG = examples(
    (
        "cohortsql compare titanic.parquet --prediction prediction --model titanic.pkl"
        " --model-output probability --similar age=range:0.1 --features pclass,sex,sibsp,parch"
        " --out compared.parquet"
    ),
    (
        "cohortsql compare scores.parquet --prediction score --model model.joblib --features age,income"
        " --sample 500 --baseline-sample 2000 --seed 1"
    ),
)


CALIBRATE_EPILOG = examples(
    (
        "cohortsql calibrate examples/data/boston_predictions.parquet"
        " --features crim,zn,indus,nox,rm,age,dis,tax,lstat --runs 20 --seed 1 --plot calibration.png"
    ),
    "cohortsql calibrate examples/data/titanic.csv --features pclass,sex,age,sibsp,parch --kind quantile",
)


INSERTION_EPILOG = examples(
    ("cohortsql shapley scores.parquet --prediction score --id loan --features age,income,region --out values.parquet"),
    (
        "cohortsql insertion-deletion scores.parquet --prediction score --id loan"
        " --features age,income,region --attributions values.parquet --out tests.parquet"
    ),
)


@command(EXPLAINED, A_TABLE, _typing.InsertionOptions, ("attributions", "out", "into_table", "database", "replace"))
def insertion_deletion(options: Flags) -> None:
    """The insertion and deletion tests of an attribution in cohorts: for each target, its features in the
    attribution's order, the cohort mean as they are required similar (insertion) and stop being required
    (deletion), and each curve's area against the straight line between its ends (ABC: larger is better)."""
    from cohortsql.api.integrated import insertion_deletion as tested
    from cohortsql.cli.outputs import write
    from cohortsql.formats.files import read_frame

    arguments = request(options, _typing.InsertionOptions)
    if arguments.pop("targets", None) is not None or arguments.pop("sample", None) is not None:
        raise CohortError("insertion-deletion tests the attributions' own targets: leave --targets and --sample out")
    if isinstance(arguments["prediction"], list):
        raise CohortError("insertion-deletion tests one --prediction column")
    given = options.get("attributions")
    if not given:
        raise CohortError("no --attributions given: name the table of id, feature and value to test")
    result = tested(options["data"], attributions=read_frame(given, "--attributions"), **arguments)
    written = write(options, {"": result.abc, "curves": result.curves}, result.settings)
    print_warnings_so_far()
    means = [float(result.abc[column].to_numpy().mean()) for column in ("insertion_abc", "deletion_abc")]
    lines = [
        f"{result.abc.height:,} targets x {len(result.features)} features: mean insertion ABC {means[0]:.4g},"
        f" mean deletion ABC {means[1]:.4g} (areas against the line between each curve's ends; larger is better)"
    ]
    typer.echo("\n".join(lines) + written)


FAIRNESS_EPILOG = examples(
    ("cohortsql fairness scores.parquet --prediction score --threshold 0.5 --protected sex --observed repaid"),
    (
        "cohortsql fairness decisions.parquet --prediction approved --protected race --protected age"
        " --protected-bins age=30,50 --out fairness.parquet"
    ),
)


@command(("data", "prediction"), ("protected", "threshold", "observed"), A_TABLE, _typing.FairnessOptions, ("out",))
def fairness(options: Flags) -> None:
    """Group fairness metrics of the decisions, over every row, in fairlearn's vocabulary: each group's
    selection rate (a score at or above --threshold is selected; without it --prediction holds 0/1
    decisions), with --observed its true and false positive rates, and between the groups the
    demographic-parity difference and ratio and the equalized-odds difference, with
    {default:audit_bootstrap} Bayesian-bootstrap replicates' intervals by default (--bootstrap)."""
    from cohortsql.api.fairness import fairness as fairness_metrics
    from cohortsql.cli.outputs import write

    arguments = request(options, _typing.FairnessOptions, compared=False)  # every row, nothing compared
    protected = _protected(options, arguments, "fairness reads one --prediction column")
    found = fairness_metrics(
        options["data"],
        protected=protected,
        threshold=options.get("threshold"),
        observed=options.get("observed"),
        **arguments,
    )
    written = write(options, {"": found.groups, "metrics": found.metrics}, found.settings)
    print_warnings_so_far()
    typer.echo("\n".join(found.summary()) + written)


def _protected(options: Flags, arguments: dict[str, Any], one_prediction: str) -> list[str]:
    """The --protected attributes (each named once), their --protected-bins put into the `arguments`,
    and one --prediction column (else the error `one_prediction`)."""
    given = options.get("protected")
    protected = names(",".join(given) if isinstance(given, list) else given)
    if not protected:
        raise CohortError("no --protected given: name the protected attribute's column (repeat it for several)")
    if isinstance(arguments["prediction"], list):
        raise CohortError(one_prediction)
    bins = options.get("protected_bins")
    if bins:
        arguments["protected_bins"] = protected_bins(bins)
    return protected


def protected_bins(texts: list[str]) -> dict[str, int | list[float]]:
    """--protected-bins NAME=E1,E2,... (edges) or NAME=quantiles:N, each name once: split at the last
    ``=`` (the spec never holds one), so that a name holding ``=`` is a name (``age=x=30,50``)."""
    bins: dict[str, int | list[float]] = {}
    for text in texts:
        name, equals, spec = (part.strip() for part in text.rpartition("="))
        if not equals or not name or not spec:
            raise CohortError(f"--protected-bins {text!r} is not NAME=E1,E2,... or NAME=quantiles:N, e.g. age=30,50")
        if name in bins:
            raise CohortError(f"--protected-bins names {name!r} twice: give each attribute once")
        count = spec.removeprefix("quantiles:")
        try:
            bins[name] = int(count) if count != spec else [float(edge) for edge in spec.split(",")]
        except ValueError:
            raise CohortError(
                f"--protected-bins {text!r}: {spec!r} is neither numbers separated by commas nor quantiles:N"
            ) from None
    return bins
