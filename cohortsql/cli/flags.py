"""The command line's flags, declared once: each flag's typer declaration and default under the API's
name for it (`FLAGS`), and the groups commands share. A command's flags derive from these and from
the API's option `TypedDict`s (`cohortsql.cli.options.command`).
"""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Annotated, Any, TypedDict

import typer

from cohortsql._typing import DIALECTS, ENGINES, METHODS, MODEL_INPUTS, MODEL_OUTPUTS, PATHS, VARIANTS
from cohortsql.api.declared import with_declared_defaults

Data = Annotated[
    str | None,
    typer.Argument(
        help="A parquet/csv/json path or glob, FILE.duckdb:TABLE, a table name (--engine spark or a URI), or a quoted SQL query.",
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
Confidence = Annotated[
    float | None, typer.Option(help="The bootstrap intervals' coverage (default {default:confidence}).")
]
Id = Annotated[
    str | None, typer.Option("--id", help="The column that identifies rows (default: 0-based row position).")
]
Similar = Annotated[
    list[str] | None,
    typer.Option(
        "--similar",
        help="FEATURE=KIND, repeatable (*=KIND: every column not named otherwise). Kinds: exact, abs:D[unit],"
        " relative:D, range:R, quantile:R[:P], bins:K, sql:EXPR.",
    ),
]
Features = Annotated[
    str | None,
    typer.Option(
        help="Comma-separated features that get default kinds; all: every column but the id, weight and explained ones."
    ),
]
Targets = Annotated[str | None, typer.Option(help="SQL predicate over the data's columns choosing the targets.")]
TargetIds = Annotated[
    str | None,
    typer.Option(
        help="Comma-separated ids of the targets (read in the id's type); beside --sample, ids explained with the"
        " sample that count in no average over targets (shapley, audit)."
    ),
]
Sample = Annotated[
    float | None,
    typer.Option(
        help="A random sample of the targets (of --targets' rows, or every row): a count (>= 1) or a fraction (< 1)."
    ),
]
Seed = Annotated[
    int | None, typer.Option(help="Seed for the sample of targets, the permutations and the bootstrap replicates.")
]
MethodOption = Annotated[
    str | None, typer.Option("--method", help=f"{' | '.join(METHODS)} (default {{default:method}}).")
]
PathOption = Annotated[
    str | None,
    typer.Option("--path", help=f"How exact cohorts are found: {' | '.join(PATHS)} (default {{default:path}})."),
]
Tolerance = Annotated[float | None, typer.Option(help="Permutation method: stop a target at this standard error.")]
MaxPermutations = Annotated[
    int | None, typer.Option(help="Permutation method: budget per target (default {default:max_permutations}).")
]
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
Replace = Annotated[
    bool | None,
    typer.Option("--replace/--no-replace", help="Let --into-table replace existing tables of the same names."),
]
EngineOption = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help=f"{' | '.join(name for name in ENGINES if not ENGINES[name].schemes)} (default duckdb; spark for Spark"
        " tables), or a warehouse's URI: "
        + ", ".join(f"{scheme}://..." for entry in ENGINES.values() for scheme in entry.schemes)
        + " (credentials from the URI or the driver's environment; never printed).",
    ),
]
SparkMaster = Annotated[
    str | None,
    typer.Option(help="Spark master URL (default local[*]; with SPARK_REMOTE set and no master: Spark Connect)."),
]
Config = Annotated[Path | None, typer.Option(help="TOML file with any of these options; flags override it.")]
GameName = Annotated[
    str | None,
    typer.Option(
        "--game",
        help="The game: NAME or NAME:PARAMETER, e.g. uniqueness, k-anonymity:5 or cohort-variance (cohortsql.game_shapley).",
    ),
]
Top = Annotated[int | None, typer.Option(help="How many features the summary lists (default {top}).")]
Protected = Annotated[
    list[str] | None,
    typer.Option(
        help="A protected attribute to audit (a column; it need not be a model input); repeat it, or"
        " separate names with commas, for several."
    ),
]
ReportOut = Annotated[
    Path | None, typer.Option("--report", help="Also write the HTML report here (.html), with its Audit section.")
]
Threshold = Annotated[
    float | None,
    typer.Option(
        help="fairness: the score at or above which a row is selected (default: --prediction holds 0/1 decisions)."
    ),
]
Observed = Annotated[
    str | None,
    typer.Option(
        help="fairness: the column of observed outcomes (0/1 or booleans), for true and false positive rates."
    ),
]
ProtectedBins = Annotated[
    list[str] | None,
    typer.Option(
        "--protected-bins",
        help="NAME=E1,E2,... (the groups' edges: under E1, E1 to E2, ..., E2 and over) or NAME=quantiles:N,"
        " repeatable: how a numeric protected attribute's targets are grouped (default: quartiles).",
    ),
]
ModelTargets = Annotated[
    int | None,
    typer.Option(
        help="With --model: how many targets (a random sample) the model's baseline Shapley covers (default {default:model_targets})."
    ),
]
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
    typer.Option(
        "--model-input", help=f"How the model reads rows: {' | '.join(MODEL_INPUTS)} (default {{default:model_input}})."
    ),
]
ModelOutputOption = Annotated[
    str | None,
    typer.Option("--model-output", help=f"{' | '.join(MODEL_OUTPUTS)}: predict, or predict_proba's second column."),
]
ModelToleranceOption = Annotated[
    float | None,
    typer.Option(
        "--model-tolerance",
        help="How far the model may differ from the --prediction column on the targets (relative; default {default:model_tolerance};"
        " inf skips the check).",
    ),
]
BaselineSample = Annotated[
    int | None,
    typer.Option(
        help="All-baseline Shapley over this many rows drawn at random (default: every row for baseline;"
        " {default:audit_baseline_sample} for the audit's model)."
    ),
]
Exact = Annotated[str | None, typer.Option(help="Comma-separated numeric features to compare exactly (not by window).")]
CalibrationKindOption = Annotated[
    str | None,
    typer.Option("--kind", help="range | quantile: the width a threshold is a share of (default {default:kind})."),
]
Thresholds = Annotated[str | None, typer.Option(help="Comma-separated thresholds (default {default:thresholds}).")]
Holdouts = Annotated[
    str | None, typer.Option(help="Comma-separated shares of rows held out (default {default:holdouts}).")
]
Runs = Annotated[
    int | None, typer.Option(help="Random splits (and marginal draws) per holdout share (default {default:runs}).")
]
MarginalSamples = Annotated[
    int | None, typer.Option(help="Points drawn from the marginals per run (default {default:marginal_samples}).")
]
MaxRows = Annotated[
    int | None,
    typer.Option(help="Calibrate a larger table on a random sample of this many rows (default {default:max_rows})."),
]
PlotOut = Annotated[Path | None, typer.Option("--plot", help="Save the calibration figure here (.png, .svg, .pdf).")]
Attributions = Annotated[
    Path | None,
    typer.Option(
        help="The attributions to test (.parquet or .csv): columns id, feature and value (or shapley), e.g. the"
        " table `cohortsql shapley --out` wrote, or a model's SHAP values; every target needs every feature."
    ),
]
Realistic = Annotated[
    bool | None,
    typer.Option("--realistic/--no-realistic", help="Split BS and ABS by realistic hybrid points (default on)."),
]
InteractionsOption = Annotated[
    bool | None,
    typer.Option(
        "--interactions/--no-interactions",
        help="Also the pairwise Shapley interaction values (exact method): printed by size, written as _interactions.",
    ),
]
AnchoredOption = Annotated[
    int | None,
    typer.Option(
        help="Also the paper's anchored terms (Harsanyi dividends) of every set of 1..K features (exact method),"
        " written as _anchored."
    ),
]
GroupsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--group",
        "--groups",
        help="NAME=FEATURE,FEATURE,..., repeatable: explain those features as one player, similar when similar"
        " on every member (features not named stay players of their own).",
    ),
]
GroupValuesOption = Annotated[
    str | None,
    typer.Option(
        help="With --group: players (each group's value) or owen (also each feature's Owen value within its"
        " group, written as _owen)."
    ),
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
DataTable = Annotated[
    str | None,
    typer.Option(
        "--table",
        help="A table (or view) of the engine's database to read instead of DATA, e.g. risk.scores with --engine postgresql://...",
    ),
]
Dialect = Annotated[str | None, typer.Option(help=f"{' | '.join(DIALECTS)} (default duckdb).")]
Variant = Annotated[
    str | None,
    typer.Option(
        help=f"{' | '.join(VARIANTS)}: one row per target and mask; the same with identical subjects merged"
        " first; (exact/bins only) the cells, with no join; or the whole computation in SQL: every target's"
        " values, or the Shapley effects (default histogram)."
    ),
]

FLAGS: dict[str, tuple[Any, Any]] = {
    "data": (Data, None),
    "histogram": (Histogram, None),
    "prediction": (Prediction, None),
    "game": (GameName, None),
    "model": (ModelFile, None),
    "protected": (Protected, None),
    "protected_bins": (ProtectedBins, None),
    "threshold": (Threshold, None),
    "observed": (Observed, None),
    "model_targets": (ModelTargets, None),
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
    "model_tolerance": (ModelToleranceOption, None),
    "baseline_sample": (BaselineSample, None),
    "realistic": (Realistic, None),
    "interactions": (InteractionsOption, None),
    "anchored": (AnchoredOption, None),
    "groups": (GroupsOption, None),
    "group_values": (GroupValuesOption, None),
    "exact": (Exact, None),
    "kind": (CalibrationKindOption, None),
    "thresholds": (Thresholds, None),
    "holdouts": (Holdouts, None),
    "runs": (Runs, None),
    "marginal_samples": (MarginalSamples, None),
    "max_rows": (MaxRows, None),
    "table": (Table, None),
    "data_table": (DataTable, None),
    "dialect": (Dialect, None),
    "variant": (Variant, None),
    "memory_limit": (MemoryLimit, None),
    "temp_directory": (TempDirectory, None),
    "engine": (EngineOption, None),
    "spark_master": (SparkMaster, None),
    "progress": (Progress, None),
    "out": (Out, None),
    "plot": (PlotOut, None),
    "attributions": (Attributions, None),
    "into_table": (IntoTable, None),
    "database": (Database, None),
    "replace": (Replace, None),
    "top": (Top, None),
    "report": (ReportOut, None),
    "reasons": (Reasons, None),
    "dry_run": (DryRun, False),
    "config": (Config, None),
    "debug": (Debug, False),
}
"""Every flag of the commands that take options: its declaration and default, by the API's name for it.
A flag whose value a config file may hold defaults to None (not given), so that the file's value counts;
`AFTER_CONFIG` holds the defaults that apply when neither gives one."""


class Flags(TypedDict, total=False):
    """A command's options as its body reads them: its flags merged with its config file's values
    (`cohortsql.cli.config.merged_options`), under the API's names; a value is None when not given.
    Paths may come as text from a config file, and comma-separated flags as lists."""

    data: str | None
    histogram: str | Path | None
    prediction: str | list[str] | None
    model: str | Path | None
    attributions: str | Path | None
    protected: str | list[str] | None
    protected_bins: list[str] | None
    threshold: float | None
    observed: str | None
    model_targets: int | None
    id: str | None
    weight: str | None
    similar: dict[str, str]
    features: str | list[str] | None
    targets: str | None
    target_ids: str | list[str | int] | None
    sample: float | None
    seed: int | None
    bootstrap: int | None
    confidence: float | None
    method: str | None
    path: str | None
    tolerance: float | None
    max_permutations: int | None
    model_input: str | None
    model_output: str | None
    model_tolerance: float | None
    baseline_sample: int | None
    realistic: bool | None
    interactions: bool | None
    anchored: int | None
    groups: dict[str, list[str]]
    group_values: str | None
    exact: str | list[str] | None
    kind: str | None
    thresholds: str | list[float] | None
    holdouts: str | list[float] | None
    runs: int | None
    marginal_samples: int | None
    max_rows: int | None
    table: str | None
    data_table: str | None
    dialect: str | None
    variant: str | None
    memory_limit: str | None
    temp_directory: str | Path | None
    engine: str | None
    connection: Any
    """The connection --engine URI opened for the run (no flag of its own)."""
    spark_master: str | None
    progress: bool | None
    out: str | Path | None
    plot: str | Path | None
    into_table: str | None
    database: str | Path | None
    replace: bool
    top: int
    report: str | Path | None
    reasons: int | None
    dry_run: bool
    config: Path | None
    debug: bool
    outcome: str | None


AFTER_CONFIG: Flags = {"top": 10, "replace": False}
"""The defaults of flags that neither the command line nor the config file gave."""

for _annotation, _ in FLAGS.values():  # each help says the declared default, written once
    for _declaration in getattr(_annotation, "__metadata__", ()):
        if getattr(_declaration, "help", None):
            _declaration.help = with_declared_defaults(_declaration.help).replace("{top}", str(AFTER_CONFIG["top"]))

API_ONLY = frozenset({"connection", "batch_rows", "baseline", "include"})
"""API options with no flag of their own: a live connection, the model's batch size, baseline
Shapley's baselines (the command line's `compare` uses the mean and every row), and ``include``
(``--target-ids`` beside ``--sample``)."""

EXPLAINED = ("data", "prediction", "similar", "features", "target_ids")
"""The flags that say what is explained (beside an API option group's)."""
A_TABLE = ("data_table",)
"""--table: the commands that compute read a table of the engine's database by it, instead of DATA."""
OUTPUTS = ("out", "into_table", "database", "replace")
"""Where a computing command writes its tables."""
DISPLAY = ("dry_run", "config", "debug")
"""Flags of one invocation that a config file does not hold."""


def spelled(name: str, value: str) -> str:
    """How the command line says the API's ``name=value``: ``--flag value``, ``--flag`` for a value
    left open or true, ``--no-flag`` for false."""
    option = typing.get_args(FLAGS[name][0])[1]
    # In Annotated, typer reads the first argument of Option(...) (here `default`) as its declaration.
    declared = [option.default, *(option.param_decls or ())]
    decls = [text for text in declared if isinstance(text, str) and text.startswith("-")]
    on, _, off = (decls[0] if decls else "--" + name.replace("_", "-")).partition("/")
    if value in ("True", "False"):
        return on if value == "True" or not off else off
    return f"{on} {value}" if value else on


_OPTIONS = [name for name, (flag, _) in FLAGS.items() if isinstance(typing.get_args(flag)[1], typer.models.OptionInfo)]
"""The flags that are options (not positional arguments such as the data)."""

_API_SPELLING = re.compile(
    r"(?<![\w.-])(" + "|".join(sorted(_OPTIONS, key=len, reverse=True)) + r")=('[^']*'|\"[^\"]*\"|[^\s,;)]*)"
)


def cli_spelling(message: str) -> str:
    """A message written in the API's spelling of options (``method='permutation'``, ``sample=``)
    in the command line's (``--method permutation``, ``--sample``)."""
    return _API_SPELLING.sub(lambda match: spelled(match[1], match[2].strip("'\"")), message)
