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
from cohortsql.cli.panels import panel


def _option(kind: Any, help: str, *declarations: str) -> Any:
    """A flag of type `kind` that is None when not given, so that a config file's value counts; a
    repeatable flag (a list) shows the type of one value."""
    repeated = typing.get_args(kind)[0].__name__ if typing.get_origin(kind) is list else None
    return Annotated[kind | None, typer.Option(*declarations, help=help, metavar=repeated and f"<{repeated}>")]


def _switch(name: str, help: str) -> Any:
    """A true-or-false flag, ``--name/--no-name``, None when not given."""
    return _option(bool, help, f"--{name}/--no-{name}")


TargetIds = _option(
    str,
    "Comma-separated ids of the targets; beside --sample, shown but in no average.",
)
OutcomeOption = Annotated[
    str | None,
    typer.Option("--outcome", help="Of a run that explained several columns (--prediction repeated), the one to show."),
]
Debug = Annotated[bool, typer.Option("--debug", help="Show the traceback of a failure.")]
_ENGINES_HELP = (
    f"{' | '.join(name for name in ENGINES if not ENGINES[name].schemes)} (default duckdb), or a warehouse's URI"
    f" ({', '.join(scheme + '://' for entry in ENGINES.values() for scheme in entry.schemes)});"
    " credentials are never printed."
)
_VARIANTS_HELP = (
    f"{' | '.join(VARIANTS)}: one row per target and mask; the same with identical subjects merged first;"
    " (exact/bins only) the cells, with no join; or the whole computation in SQL: every target's values,"
    " or the Shapley effects (default histogram)."
)

FLAGS: dict[str, tuple[Any, Any]] = {
    "data": (
        Annotated[
            str | None,
            typer.Argument(
                help="A parquet/csv/json path or glob, FILE.duckdb:TABLE, a table name (--engine spark or a URI),"
                " or a quoted SQL query.",
                show_default=False,
            ),
        ],
        None,
    ),
    "histogram": (
        Annotated[
            Path | None,
            typer.Argument(help="The result of the `cohortsql sql` query (.parquet or .csv).", show_default=False),
        ],
        None,
    ),
    "prediction": (
        _option(
            list[str],
            "The column to explain; repeat it for several, over the same cohorts in one pass.",
        ),
        None,
    ),
    "game": (
        _option(
            str,
            "The game: NAME or NAME:PARAMETER, e.g. uniqueness, k-anonymity:5 or cohort-variance"
            " (cohortsql.game_shapley).",
            "--game",
        ),
        None,
    ),
    "model": (
        _option(
            Path,
            "The fitted model (pickle, or .joblib); loading it runs its code: only files you trust.",
            "--model",
        ),
        None,
    ),
    "protected": (
        _option(
            list[str],
            "A protected attribute to audit (it need not be a model input); repeatable, or comma-separated.",
        ),
        None,
    ),
    "protected_bins": (
        _option(
            list[str],
            "NAME=E1,E2,... (the groups' edges) or NAME=quantiles:N, repeatable: how a numeric attribute is"
            " grouped (default: quartiles).",
            "--protected-bins",
        ),
        None,
    ),
    "threshold": (
        _option(
            float,
            "fairness: the score at or above which a row is selected (default: 0/1 decisions).",
        ),
        None,
    ),
    "observed": (
        _option(str, "fairness: the observed outcomes (0/1), for true and false positive rates."),
        None,
    ),
    "model_targets": (
        _option(
            int,
            "How many random targets the model's baseline Shapley covers (default {default:model_targets}).",
        ),
        None,
    ),
    "id": (_option(str, "The column that identifies rows (default: 0-based row position).", "--id"), None),
    "weight": (_option(str, "Case weights (>= 0; a weight of 3 counts as three rows)."), None),
    "similar": (
        _option(
            list[str],
            "FEATURE=KIND, repeatable (*=KIND: every other column); KIND: exact, abs:D, relative:D, range:R,"
            " quantile:R, bins:K, sql:EXPR.",
            "--similar",
        ),
        None,
    ),
    "features": (
        _option(
            str,
            "Comma-separated features with default kinds (all: every other column).",
        ),
        None,
    ),
    "targets": (_option(str, "SQL predicate over the data's columns choosing the targets."), None),
    "target_ids": (TargetIds, None),
    "sample": (
        _option(
            float,
            "A random sample of the targets: a count (>= 1) or a fraction (< 1).",
        ),
        None,
    ),
    "seed": (_option(int, "Seed of the sample, the permutations and the bootstrap."), None),
    "bootstrap": (
        _option(int, "Bayesian-bootstrap replicates, for intervals of every value (try 200)."),
        None,
    ),
    "confidence": (_option(float, "The bootstrap intervals' coverage (default {default:confidence})."), None),
    "null": (
        _option(
            int,
            "Shuffled copies of each feature, its share's floor; 19 let p reach 0.05 (audit default"
            " {default:audit_null}; 0: none).",
            "--null",
        ),
        None,
    ),
    "null_features": (
        _option(str, "Comma-separated features whose shares get --null copies (default: every feature)."),
        None,
    ),
    "method": (_option(str, f"{' | '.join(METHODS)} (default {{default:method}}).", "--method"), None),
    "path": (
        _option(str, f"How exact cohorts are found: {' | '.join(PATHS)} (default {{default:path}}).", "--path"),
        None,
    ),
    "tolerance": (_option(float, "Permutation method: stop a target at this standard error."), None),
    "max_permutations": (
        _option(int, "Permutation method: budget per target (default {default:max_permutations})."),
        None,
    ),
    "model_input": (
        _option(
            str,
            f"How the model reads rows: {' | '.join(MODEL_INPUTS)} (default {{default:model_input}}).",
            "--model-input",
        ),
        None,
    ),
    "model_output": (
        _option(str, f"{' | '.join(MODEL_OUTPUTS)}: predict, or predict_proba's second column.", "--model-output"),
        None,
    ),
    "model_tolerance": (
        _option(
            float,
            "How far the model may differ from --prediction (relative; default {default:model_tolerance};"
            " inf: no check).",
            "--model-tolerance",
        ),
        None,
    ),
    "baseline_sample": (
        _option(
            int,
            "All-baseline Shapley over this many random rows (default every row; audit"
            " {default:audit_baseline_sample}).",
        ),
        None,
    ),
    "realistic": (_switch("realistic", "Split BS and ABS by realistic hybrid points (default on)."), None),
    "interactions": (
        _switch(
            "interactions",
            "Also the pairwise Shapley interaction values (written as _interactions).",
        ),
        None,
    ),
    "anchored": (
        _option(
            int,
            "Also the anchored terms of every set of 1..K features (written as _anchored).",
        ),
        None,
    ),
    "groups": (
        _option(
            list[str],
            "NAME=FEATURE,FEATURE,..., repeatable: those features as one player.",
            "--group",
            "--groups",
        ),
        None,
    ),
    "group_values": (
        _option(
            str,
            "players, or owen: also each feature's Owen value in its group (_owen).",
        ),
        None,
    ),
    "exact": (_option(str, "Comma-separated numeric features to compare exactly (not by window)."), None),
    "kind": (
        _option(str, "range | quantile: the width a threshold is a share of (default {default:kind}).", "--kind"),
        None,
    ),
    "thresholds": (_option(str, "Comma-separated thresholds (default {default:thresholds})."), None),
    "holdouts": (_option(str, "Comma-separated shares of rows held out (default {default:holdouts})."), None),
    "runs": (_option(int, "Random splits (and marginal draws) per holdout share (default {default:runs})."), None),
    "marginal_samples": (
        _option(int, "Points drawn from the marginals per run (default {default:marginal_samples})."),
        None,
    ),
    "max_rows": (
        _option(int, "Calibrate a larger table on a random sample of this many rows (default {default:max_rows})."),
        None,
    ),
    "table": (_option(str, "The table the SQL reads (default: the file DATA names)."), None),
    "data_table": (
        _option(
            str,
            "A table of the engine's database to read instead of DATA, e.g. risk.scores.",
            "--table",
        ),
        None,
    ),
    "dialect": (_option(str, f"{' | '.join(DIALECTS)} (default duckdb)."), None),
    "variant": (_option(str, _VARIANTS_HELP), None),
    "memory_limit": (_option(str, "DuckDB memory limit, e.g. 1GB; beyond it DuckDB spills to disk."), None),
    "temp_directory": (_option(Path, "Where DuckDB spills."), None),
    "engine": (_option(str, _ENGINES_HELP, "--engine"), None),
    "spark_master": (
        _option(str, "Spark master URL (default local[*]; Spark Connect when SPARK_REMOTE is set)."),
        None,
    ),
    "progress": (_switch("progress", "Progress on stderr (default: on a terminal, for long runs)."), None),
    "out": (
        _option(
            Path,
            "Write the results here (.parquet or .csv); companions beside it (_totals, _paths, ...).",
        ),
        None,
    ),
    "plot": (_option(Path, "Save the calibration figure here (.png, .svg, .pdf).", "--plot"), None),
    "attributions": (
        _option(
            Path,
            "The attributions to test (.parquet or .csv): columns id, feature and value (or shapley), e.g. the"
            " table `cohortsql shapley --out` wrote, or a model's SHAP values; every target needs every feature.",
        ),
        None,
    ),
    "into_table": (
        _option(str, "Also write the results into this table (of --database on DuckDB)."),
        None,
    ),
    "database": (_option(Path, "DuckDB database file for --into-table."), None),
    "replace": (_switch("replace", "Let --into-table replace existing tables of the same names."), None),
    "top": (_option(int, "How many features the summary lists (default {top})."), None),
    "report": (_option(Path, "Also write the HTML report here (.html), with its Audit section.", "--report"), None),
    "reasons": (_option(int, "Each target's top N features in words."), None),
    "dry_run": (
        Annotated[
            bool,
            typer.Option("--dry-run", help="Print the plan and a time estimate from a pilot batch; compute nothing."),
        ],
        False,
    ),
    "config": (_option(Path, "TOML file with any of these options; flags override it."), None),
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

for _name, (_annotation, _) in FLAGS.items():  # each help says the declared default, written once; its panel
    for _declaration in getattr(_annotation, "__metadata__", ()):
        if getattr(_declaration, "help", None):
            _declaration.help = with_declared_defaults(_declaration.help).replace("{top}", str(AFTER_CONFIG["top"]))
            _declaration.rich_help_panel = panel(_name)

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
