"""A call's options once checked: frozen dataclasses with `Literal` fields, one per concern, each
default declared once (here). The public functions take ``**options`` (typed by the `TypedDict`s of
`cohortsql._typing`, whose keys are the command line's flags too) and turn them into an `Options` at
the boundary (`checked_options`); nothing past them reads a dictionary of options.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar

from cohortsql._typing import (
    BATCH_ROWS,
    CALIBRATION_KINDS,
    CALIBRATION_THRESHOLDS,
    CONFIGURED_ENGINES,
    ENGINES,
    GROUP_VALUES,
    METHODS,
    MODEL_INPUTS,
    MODEL_OUTPUTS,
    PATHS,
    Baseline,
    CalibrationKind,
    CohortPath,
    EngineName,
    GroupValues,
    Method,
    ModelInput,
    ModelOutput,
    Targets,
)
from cohortsql.errors import CohortError, check_choice, warn
from cohortsql.request import arguments

AUDIT_REPLICATES = 200
"""Bootstrap replicates `audit` and `fairness` draw unless ``bootstrap`` says otherwise: their intervals
are part of what they report."""

AUDIT_NULL = 19
"""Shuffled copies of each protected attribute `audit` draws unless ``null`` says otherwise: 19 let a
p-value reach 1/20 = 0.05, so that an attribute above its floor can be told from one at it."""

AUDIT_BASELINES = 20
"""Baselines of the all-baseline Shapley `audit` computes with a model, unless ``baseline_sample`` says
otherwise: a sample keeps the model's calls bounded."""


@dataclass(frozen=True)
class Selection:
    """Which rows are explained, and how rows are identified (default: every row, by position)."""

    id: str | None = None
    targets: Targets | arguments.RowMask = None
    """None (every row), a SQL predicate, a sample size or fraction, a list of ids, or a boolean mask
    of the rows (`arguments.RowMask`)."""
    sample: int | float | None = None
    include: Sequence[Any] | None = None
    """Ids explained beside the random sample, counting in no average over targets."""
    seed: int | None = None
    """Seeds the sample of targets, the permutations and the bootstrap replicates (recorded when drawn)."""


@dataclass(frozen=True)
class Weighting:
    """Case weights, and Bayesian-bootstrap replicates with their intervals' coverage."""

    weight: str | None = None
    bootstrap: int = 0
    confidence: float = 0.95


@dataclass(frozen=True)
class Nulls:
    """The null reference beside the shares: B shuffled copies of each feature asked, each copy's share
    computed as the feature's own (`cohortsql.run.null_copies`)."""

    null: int = 0
    """B, the shuffled copies of each feature (0: no null reference)."""
    null_features: Sequence[str] | None = None
    """The features (or groups) whose shares get a null reference; None: every feature (the protected
    attributes for the audit)."""


@dataclass(frozen=True)
class Estimation:
    """Exact, by random permutations, or chosen by the number of features; the permutations' budget;
    how exact cohorts are found."""

    method: Method = "exact"
    tolerance: float | None = None
    max_permutations: int = 200
    path: CohortPath = "auto"


@dataclass(frozen=True)
class Terms:
    """What a run gives beyond the Shapley values: pairwise interaction values, anchored terms."""

    interactions: bool = False
    anchored: int = 0
    """The Harsanyi dividends g_T of every set of 1..`anchored` features (0: none)."""


@dataclass(frozen=True)
class Grouping:
    """Features explained together: each group one player, or each feature its Owen value within them."""

    groups: Mapping[str, Sequence[str]] | None = None
    group_values: GroupValues = "players"


@dataclass(frozen=True)
class Modelling:
    """How the caller's model is called on hybrid points (baseline and all-baseline Shapley)."""

    model_input: ModelInput = "pandas"
    model_output: ModelOutput = "prediction"
    model_tolerance: float = 1e-6
    batch_rows: int = BATCH_ROWS
    """Hybrid rows per call of the model (at most): large enough that a vectorised model is quick,
    small enough to bound memory."""
    baseline: Baseline | Sequence[object] = "mean"
    """Baseline Shapley's baselines: ``mean`` (one point), ``all`` (every subject: all-baseline
    Shapley) or a list of ids (those rows)."""
    baseline_sample: int | None = None
    realistic: bool = False
    model_targets: int = 100
    """`cohortsql.audit`: how many targets the model's baseline and all-baseline Shapley are computed for."""


@dataclass(frozen=True)
class Auditing:
    """How `cohortsql.audit` groups the targets by a numeric protected attribute."""

    protected_bins: Mapping[str, int | tuple[float, ...]] = field(default_factory=dict)
    """Per attribute: a number of quantile groups of the targets, or the groups' edges; an attribute
    not named gets `cohortsql.results.audit_groups.QUANTILE_GROUPS` quantile groups."""


@dataclass(frozen=True)
class Where:
    """Where and how a call runs, the same for every method; the engine's own settings (memory_limit,
    temp_directory, spark_master) come from a configured ``engine=`` (`ENGINE_SETTINGS`)."""

    memory_limit: str | None = None
    temp_directory: str | os.PathLike[str] | None = None
    progress: bool | None = None
    connection: Any = None
    engine: EngineName | None = None
    spark_master: str | None = None


@dataclass(frozen=True)
class Calibration:
    """What `cohortsql.calibrate` tries: the kind of threshold, the thresholds, the holdouts, the runs."""

    exact: Sequence[str] = ()
    """Numeric features compared exactly rather than by a window."""
    kind: CalibrationKind = "range"
    thresholds: Sequence[float] = CALIBRATION_THRESHOLDS
    holdouts: Sequence[float] = (0.1, 0.2, 0.3)
    """The shares of rows held out."""
    runs: int = 100
    marginal_samples: int = 1000
    max_rows: int = 20_000


@dataclass(frozen=True)
class Options:
    """A call's checked options, by concern."""

    selection: Selection = field(default_factory=Selection)
    weighting: Weighting = field(default_factory=Weighting)
    nulls: Nulls = field(default_factory=Nulls)
    estimation: Estimation = field(default_factory=Estimation)
    terms: Terms = field(default_factory=Terms)
    grouping: Grouping = field(default_factory=Grouping)
    modelling: Modelling = field(default_factory=Modelling)
    auditing: Auditing = field(default_factory=Auditing)
    where: Where = field(default_factory=Where)
    calibration: Calibration = field(default_factory=Calibration)

    def with_seed(self, seed: int | None) -> Options:
        """These options with `seed` (one drawn for a run that needs one: it is recorded with the results)."""
        return replace(self, selection=replace(self.selection, seed=seed))


_GROUPS: dict[str, type] = {
    "selection": Selection,
    "weighting": Weighting,
    "nulls": Nulls,
    "estimation": Estimation,
    "terms": Terms,
    "grouping": Grouping,
    "modelling": Modelling,
    "auditing": Auditing,
    "where": Where,
    "calibration": Calibration,
}
"""Each concern's dataclass, by its attribute on `Options`."""

CONCERN_OF = {option.name: group for group, kind in _GROUPS.items() for option in fields(kind)}
"""The concern each option belongs to (its name is its flag's on the command line)."""


_CHECKS: dict[str, Callable[[str, Any], object]] = {
    "id": arguments.optional_text,
    "weight": arguments.optional_text,
    "memory_limit": arguments.optional_text,
    "temp_directory": arguments.optional_path,
    "spark_master": arguments.optional_text,
    "seed": lambda _, value: arguments.seed(value),
    "method": lambda name, value: _choice(name, value, METHODS),
    "path": lambda name, value: _choice(name, value, PATHS),
    "group_values": lambda name, value: _choice(name, value, GROUP_VALUES),
    "model_input": lambda name, value: _choice(name, value, MODEL_INPUTS),
    "model_output": lambda name, value: _choice(name, value, MODEL_OUTPUTS),
    "kind": lambda name, value: _choice(name, value, CALIBRATION_KINDS),
    "tolerance": arguments.positive_number,
    "max_permutations": lambda name, value: arguments.whole_number(name, value, minimum=2),
    "model_tolerance": arguments.tolerance_or_inf,
    "batch_rows": lambda name, value: arguments.whole_number(name, value, minimum=1),
    "baseline_sample": lambda name, value: None if value is None else arguments.whole_number(name, value, minimum=1),
    "realistic": arguments.boolean,
    "model_targets": lambda name, value: arguments.whole_number(name, value, minimum=1),
    "protected_bins": arguments.group_bins,
    "interactions": arguments.boolean,
    "progress": lambda name, value: None if value is None else arguments.boolean(name, value),
    "anchored": lambda name, value: arguments.whole_number(name, value, minimum=0),
    "null": arguments.null_copies,
    "null_features": arguments.null_features,
    "targets": arguments.checked_targets,
    "include": arguments.included_ids,
    "exact": lambda name, value: value,  # checked against the features by `calibrate`
    "runs": lambda name, value: arguments.whole_number(name, value, minimum=1),
    "marginal_samples": lambda name, value: arguments.whole_number(name, value, minimum=1),
    "max_rows": lambda name, value: arguments.whole_number(name, value, minimum=10),
}
"""How each option is checked (and normalised: a numpy integer becomes an int, a list a tuple)."""


def _with_configured_engine(values: dict[str, object]) -> dict[str, object]:
    """`values` with a configured ``engine`` (`cohortsql.DuckDB`, `cohortsql.Spark`) turned into its
    name and the settings it holds (`Where`'s, which no public option sets otherwise)."""
    engine = values.get("engine")
    if isinstance(engine, CONFIGURED_ENGINES):
        values.update(engine.options())
        values["engine"] = engine.name
    elif engine is not None and engine not in ENGINES:
        raise CohortError(
            f"engine must be one of {', '.join(ENGINES)} or a configured engine (cohortsql.DuckDB(...),"
            f" cohortsql.Spark(...)), got {engine!r}"
        )
    return values


ENGINE_SETTINGS: dict[str, tuple[str, str]] = {
    setting: (kind.__name__, field) for kind in CONFIGURED_ENGINES for field, setting in kind.settings.items()
}
"""`Where`'s settings of one engine, which a configured ``engine=`` holds (each class's `settings`): each
one's engine class and its field there (an option of that name is refused with the spelling that sets it)."""


def _spelled(name: str) -> str:
    """How a message names an option: an engine's setting as the configured engine that holds it."""
    if name not in ENGINE_SETTINGS:
        return name
    owner, setting = ENGINE_SETTINGS[name]
    return f"{owner}({setting}=...)"


def _choice(name: str, value: object, choices: Sequence[str]) -> object:
    check_choice(name, value, choices)
    return value


def checked_options(given: Mapping[str, object], allowed: Any, **defaults: object) -> Options:
    """The `Options` of a call, each option checked once, at the public function: `given` may hold
    the keys of the `TypedDict` `allowed` (an unknown one is a `CohortError` suggesting the closest);
    `defaults` are the call's own defaults where they differ from the dataclasses' (`compare` splits
    by realism unless told not to). ``bootstrap`` becomes the number of replicates, and a seed is
    drawn (`arguments.drawn_seed`) when replicates or a sample of baselines need one."""
    names = set(allowed.__required_keys__) | set(allowed.__optional_keys__)
    unknown = sorted(set(given) - names)
    settings = [name for name in unknown if name in ENGINE_SETTINGS]
    if settings:
        owner, setting = ENGINE_SETTINGS[settings[0]]
        raise CohortError(f"{settings[0]} is a setting of one engine: pass engine=cohortsql.{owner}({setting}=...)")
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(names), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; the options are {', '.join(sorted(names))}"
        raise CohortError(f"unknown argument {unknown[0]!r}{hint}")
    values = _with_configured_engine({**defaults, **given})
    checked = {
        name: _CHECKS[name](_spelled(name), value) if name in _CHECKS else value for name, value in values.items()
    }
    if "bootstrap" in checked or "confidence" in checked:
        checked["bootstrap"], checked["confidence"] = arguments.bootstrap_arguments(
            checked.get("bootstrap", Weighting.bootstrap), checked.get("confidence", Weighting.confidence)
        )
    _check_sampled_by_targets(checked.get("targets"), checked.get("seed"))
    one_baseline = "baseline" in names and checked.get("baseline", Modelling.baseline) != "all"
    if checked.get("baseline_sample") is not None and one_baseline:  # compare samples its all-baseline run
        raise CohortError("baseline_sample= draws from every row: it needs baseline='all'")
    by_group: dict[str, dict[str, object]] = {group: {} for group in _GROUPS}
    for name, value in checked.items():
        by_group[CONCERN_OF[name]][name] = value
    options = Options(**{group: _GROUPS[group](**values) for group, values in by_group.items()})
    needs_seed = (
        options.weighting.bootstrap > 0 or options.modelling.baseline_sample is not None or options.nulls.null > 0
    )
    return options.with_seed(arguments.drawn_seed(options.selection.seed, needs_seed))


def _check_sampled_by_targets(targets: object, seed: object) -> None:
    """``targets=204`` draws 204 random rows, the commonest first mistake for the row with id 204: without
    a seed (a different sample every run) it is refused in words; with one it runs, with a warning."""
    if isinstance(targets, bool) or not isinstance(targets, (int, float)):
        return
    shown = f"{targets!r}"
    if seed is None:
        raise CohortError(
            f"targets={shown} would explain a random sample of {shown} rows, a different one every run: write"
            f" targets=[{shown}] for the row whose id is {shown}, or sample={shown} with seed= for a random sample"
        )
    warn(
        f"targets={shown} explains a random sample of {shown} rows (seed {seed}): sample={shown} says so;"
        f" targets=[{shown}] is the row whose id is {shown}"
    )


CALL_DEFAULTS = {
    "audit_bootstrap": AUDIT_REPLICATES,
    "audit_baseline_sample": AUDIT_BASELINES,
    "audit_null": AUDIT_NULL,
}
"""Defaults of one public function's own, where it differs from the option's (by ``function_option``)."""

_DEFAULT_MARK = re.compile(r"\{default:(\w+)\}")


def declared_default(name: str) -> object:
    """Option `name`'s default, as its concern's dataclass declares it (or a call's own, `CALL_DEFAULTS`)."""
    if name in CALL_DEFAULTS:
        return CALL_DEFAULTS[name]
    declared = next(option for option in fields(_GROUPS[CONCERN_OF[name]]) if option.name == name)
    return declared.default_factory() if callable(declared.default_factory) else declared.default


def with_declared_defaults(text: str) -> str:
    """`text` (a docstring, a flag's help) with each ``{default:name}`` replaced by option `name`'s
    declared default, so that no default is written twice (the docs' pages are filled alike)."""
    return _DEFAULT_MARK.sub(lambda mark: _shown(declared_default(mark[1])), text)


Documented = TypeVar("Documented", bound=Callable[..., Any])


def documented(function: Documented) -> Documented:
    """`function` with its docstring's ``{default:name}`` marks filled in (`with_declared_defaults`)."""
    function.__doc__ = with_declared_defaults(function.__doc__ or "")
    return function


def _shown(value: object) -> str:
    if isinstance(value, tuple | list):
        shown = [_shown(item) for item in value]
        return ", ".join(shown if len(shown) <= 4 else [*shown[:2], "...", shown[-1]])
    return f"{value:g}" if isinstance(value, float) else str(value)
