"""Every option a user chooses, declared once: the `Literal` vocabularies with their tuples of choices,
and the aliases of the inputs the public functions accept. The Python API, the command line and the
polars namespace all read them from here.

Kept free of heavy imports (numpy, polars and pyarrow are named for type checkers only), so that the
command line can describe itself (``--help``) without loading them or an engine.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple, TypeAlias, TypedDict

if TYPE_CHECKING:
    import numpy as np
    import polars as pl
    import pyarrow as pa

Method = Literal["exact", "permutation", "integrated", "auto"]
METHODS: tuple[Method, ...] = ("exact", "permutation", "integrated", "auto")
"""``exact``: every one of the 2^d cohorts (d <= 24); ``permutation``: Monte Carlo over random orders of
the features (d <= 128); ``integrated``: integrated gradient cohort Shapley (IGCS), exact, in O(n d) per
target (d <= 10,000), which equals cohort Shapley when the cohort mean is multilinear on the cube's
corners and approximates it otherwise (cohort Shapley's own games only); ``auto``: exact up to d = 16,
permutation up to 128, integrated beyond (said in a warning)."""

CohortPath = Literal["auto", "pairwise", "grouping_sets"]
PATHS: tuple[CohortPath, ...] = ("auto", "pairwise", "grouping_sets")
"""How exact cohorts are found: ``pairwise`` (any kinds; a join of targets with subjects) or
``grouping_sets`` (only exact and bins; no join). ``auto`` takes grouping sets when every kind is an
equivalence and there are at least 2^(d-1) targets, where it does less work than the join."""

SqlDialect = Literal["duckdb", "spark", "bigquery", "snowflake", "postgres"]
DIALECTS: tuple[SqlDialect, ...] = ("duckdb", "spark", "bigquery", "snowflake", "postgres")

SqlVariant = Literal["histogram", "collapsed", "cells", "values", "effects", "integrated"]
VARIANTS: tuple[SqlVariant, ...] = ("histogram", "collapsed", "cells", "values", "effects", "integrated")
"""What `sql_query` computes: the mask histogram, the same after collapsing identical subjects,
or (exact and bins only) the equivalence cells, with no join at all (for `cohortsql.assemble` to
finish); or the whole computation in the engine: every target's cohort Shapley values (``values``) or
the Shapley effects (``effects``)."""

GroupValues = Literal["players", "owen"]
GROUP_VALUES: tuple[GroupValues, ...] = ("players", "owen")
"""What a run with ``groups=`` gives: ``players`` (each group one player, its members' similarities
joined by AND) or ``owen`` (that, and each feature's Owen value within its group)."""


class EngineEntry(NamedTuple):
    """An engine of the registry (`ENGINES`): what it needs, and how the command line names it."""

    package: str
    """The top-level module its connections and data objects come from (the engine they imply), and
    whose absence means its extra is not installed."""
    extra: str
    """``pip install 'cohortsql[<extra>]'`` installs what it needs ("": cohortsql itself does)."""
    schemes: tuple[str, ...] = ()
    """The URI schemes that the command line's ``--engine`` opens a connection of it with."""


ADBC_DRIVERS: dict[str, tuple[str, str]] = {
    "postgresql": ("adbc_driver_postgresql", "postgres"),
    "postgres": ("adbc_driver_postgresql", "postgres"),
    "snowflake": ("adbc_driver_snowflake", "snowflake"),
    "bigquery": ("adbc_driver_bigquery", "bigquery"),
    "grpc": ("adbc_driver_flightsql", "flightsql"),
    "grpc+tls": ("adbc_driver_flightsql", "flightsql"),
}
"""The adbc engine's URI schemes -> (the ADBC driver's module, the cohortsql extra that installs it)."""

EngineName = Literal["duckdb", "spark", "adbc"]
ENGINES: dict[str, EngineEntry] = {
    "duckdb": EngineEntry("duckdb", ""),
    "spark": EngineEntry("pyspark", "spark"),
    "adbc": EngineEntry("adbc_driver_manager", "postgres", tuple(ADBC_DRIVERS)),
}
"""The engines by name, each the module ``cohortsql/engines/<name>.py``: the one registry of engines."""


@dataclass(frozen=True)
class DuckDB:
    """DuckDB, configured: ``engine=cohortsql.DuckDB(memory_limit="1GB", temp_directory="/scratch")``.
    Beyond `memory_limit` DuckDB spills to `temp_directory` (default: its own)."""

    memory_limit: str | None = None
    """DuckDB's memory limit while computing, e.g. ``"1GB"`` (default: DuckDB's, most of the machine's
    memory); the batches of targets are sized to a quarter of it."""
    temp_directory: str | os.PathLike[str] | None = None
    """Where DuckDB spills beyond `memory_limit`."""
    name: ClassVar[EngineName] = "duckdb"
    settings: ClassVar[dict[str, str]] = {"memory_limit": "memory_limit", "temp_directory": "temp_directory"}
    """Each field's name among the run's where-and-how settings (`cohortsql.request.options.Where`)."""

    def options(self) -> dict[str, object]:
        """The run's settings it stands for (those it sets), by their names there."""
        return _given_settings(self)


@dataclass(frozen=True)
class Spark:
    """Spark, configured: ``engine=cohortsql.Spark(master="local[4]")`` starts a session on that
    master when no SparkSession is given (default ``local[*]``; with ``SPARK_REMOTE`` set, Spark Connect)."""

    master: str | None = None
    """The master URL of the session cohortsql starts."""
    name: ClassVar[EngineName] = "spark"
    settings: ClassVar[dict[str, str]] = {"master": "spark_master"}
    """Each field's name among the run's where-and-how settings (`cohortsql.request.options.Where`)."""

    def options(self) -> dict[str, object]:
        """The run's settings it stands for (those it sets), by their names there."""
        return _given_settings(self)


def _given_settings(engine: DuckDB | Spark) -> dict[str, object]:
    """A configured engine's fields that are set, under their names among the run's settings."""
    given = {setting: getattr(engine, field) for field, setting in engine.settings.items()}
    return {setting: value for setting, value in given.items() if value is not None}


CONFIGURED_ENGINES = (DuckDB, Spark)
"""The engines that take a configuration object as ``engine=`` (ADBC's is its connection)."""

Baseline = Literal["mean", "all"]
BASELINES: tuple[Baseline, ...] = ("mean", "all")
"""Baseline Shapley's baselines: ``mean`` (one point: each numeric feature's mean, each other feature's
most frequent value) or ``all`` (every subject: all-baseline Shapley); a list of ids picks rows."""

ModelInput = Literal["pandas", "polars", "numpy"]
MODEL_INPUTS: tuple[ModelInput, ...] = ("pandas", "polars", "numpy")
"""How the model reads hybrid rows: a pandas or polars frame with the data's column types, or a float array."""

ModelOutput = Literal["prediction", "probability"]
MODEL_OUTPUTS: tuple[ModelOutput, ...] = ("prediction", "probability")
"""What of the model is explained: ``predict`` (or the callable itself), or ``predict_proba``'s second column."""

CalibrationKind = Literal["range", "quantile"]
CALIBRATION_KINDS: tuple[CalibrationKind, ...] = ("range", "quantile")
"""What a calibration threshold is a share of: each feature's range, or its 5%-95% quantile range."""

CALIBRATION_THRESHOLDS: tuple[float, ...] = tuple(round(0.05 * step, 2) for step in range(1, 21))
"""0.05, 0.10, ..., 1.00: the thresholds of the paper's calibration figure."""

BATCH_ROWS = 65_536
"""Hybrid rows per model call (the default of ``batch_rows``): large enough that a vectorised model
runs at full speed, small enough that one call's input stays a few megabytes per feature."""


Targets: TypeAlias = "None | str | int | float | Sequence[Any] | np.ndarray | pl.Series | pa.Array"
"""None (every row), a SQL predicate, a sample size (int) or fraction (float), a list of ids, or a
boolean mask with one value per row (numpy, polars, pyarrow, pandas or a list of booleans), which
selects the rows where it is True (by position: where ids are row positions, or on ``df.cohort``)."""


EVERY_OTHER = "*"
"""In a similarity mapping, the key standing for every column not named otherwise (nor explained, the
id or the weight), in the data's order: ``{"*": None}`` is ``"all"``, ``{"age": "quantile:0.1",
"*": "exact"}`` gives every other column one kind."""


Row: TypeAlias = "dict[str, Any]"
"""A row of a query's result (or of a table read into Python) by column name: its values are of the
columns' types, which only the query knows (whole-table statistics, order statistics, a totals row)."""

Prediction: TypeAlias = "str | Sequence[str]"
"""One explained column, or several explained over the same cohorts in one pass."""


class RunOptions(TypedDict, total=False):
    """Where and how a call runs, the same for every method: the ``**options`` every public function
    and `df.cohort` method takes (the command line's flags of the same names)."""

    progress: bool | None
    """Report progress on stderr; None reports on long runs when stderr is a terminal."""
    connection: Any
    """A DuckDB connection, a SparkSession or an ADBC connection (PostgreSQL, Snowflake, BigQuery,
    Flight SQL) to run on (needed to read its tables by name)."""
    engine: EngineName | DuckDB | Spark | None
    """``"duckdb"``, ``"spark"`` or ``"adbc"``, or a configured engine, which holds the engine's own
    settings: ``cohortsql.DuckDB(memory_limit="1GB", temp_directory=...)``, ``cohortsql.Spark(master=...)``.
    By default the engine the data or connection belongs to, else DuckDB."""


RUN_OPTIONS: tuple[str, ...] = tuple(RunOptions.__annotations__)
"""The names of `RunOptions`, for checks and for the command line."""


class Selection(TypedDict, total=False):
    """Which rows are explained, and how rows are identified (default: every row, by position)."""

    id: str | None
    targets: Targets
    sample: int | float | None
    seed: int | None


class Inclusion(TypedDict, total=False):
    """Chosen targets beside a random sample, for the calls that show each target's values."""

    include: Sequence[Any] | None
    """Ids explained beside a random sample (``sample=``), whether drawn or not: shown with the others,
    they count in no average over targets (effects, shares, group means), which stay the sample's."""


class Weighting(TypedDict, total=False):
    """Case weights, and Bayesian-bootstrap replicates with their intervals' coverage."""

    weight: str | None
    bootstrap: int
    confidence: float


class NullReference(TypedDict, total=False):
    """The null reference beside the shares: B shuffled copies of each feature asked, each copy's share
    computed as the feature's own; per feature, ``null_share`` (the copies' mean share), ``null_share_high``
    (their upper quantile at the run's confidence) and ``p_value`` = (1 + #{copies at or above}) / (1 + B)."""

    null: int
    """B shuffled copies of each feature (0: none; 19 let a p-value reach 0.05)."""
    null_features: Sequence[str] | None
    """The features (or groups) whose shares get a null reference (default: every feature; the
    protected attributes for the audit)."""


class Estimation(TypedDict, total=False):
    """Exact, by random permutations, or chosen by the number of features; the permutations' budget."""

    method: Method
    tolerance: float | None
    max_permutations: int


class Interactions(TypedDict, total=False):
    """Pairwise Shapley interaction values (exact, or estimated with the permutation method's values) and
    the paper's anchored terms (exact method) beside the Shapley values."""

    interactions: bool
    anchored: int
    """The Harsanyi dividends g_T of every set of 1..`anchored` features (0: none)."""


class Groups(TypedDict, total=False):
    """Features explained together: each group one player, or each feature its Owen value within them."""

    groups: Mapping[str, Sequence[str]] | None
    group_values: GroupValues


class Modelling(TypedDict, total=False):
    """How the caller's model is called on hybrid points (baseline and all-baseline Shapley)."""

    model_input: ModelInput
    model_output: ModelOutput
    model_tolerance: float
    """How far the model may stray from the stored predictions on the targets (relative, at least 1 in
    scale) before the call refuses; ``inf`` skips the check."""
    batch_rows: int


class ShapleyOptions(
    Selection, Inclusion, Weighting, NullReference, Estimation, Interactions, Groups, RunOptions, total=False
):
    """The options of `cohortsql.cohort_shapley` and `cohortsql.estimate`."""

    path: CohortPath


class EffectsOptions(Selection, Weighting, NullReference, Estimation, Interactions, Groups, RunOptions, total=False):
    """The options of `cohortsql.shapley_effects`."""

    path: CohortPath


class GameOptions(Selection, Weighting, NullReference, Estimation, Groups, RunOptions, total=False):
    """The options of `cohortsql.game_shapley`, `cohortsql.uniqueness_shapley` and `cohortsql.kanonymity_shapley`."""

    interactions: bool
    """Pairwise Shapley interaction values of the game (exact method) beside its Shapley values."""
    path: CohortPath


class UniquenessOptions(GameOptions, total=False):
    """The options of `cohortsql.uniqueness_shapley` and `cohortsql.kanonymity_shapley`: those of `game_shapley`."""


class CompareOptions(Selection, Estimation, Modelling, Groups, RunOptions, total=False):
    """The options of `cohortsql.compare`."""

    baseline_sample: int | None
    realistic: bool


class CalibrationOptions(RunOptions, total=False):
    """The options of `cohortsql.calibrate` (besides its features)."""

    exact: Sequence[str]
    """Numeric features compared exactly rather than by a window."""
    kind: CalibrationKind
    thresholds: Sequence[float]
    holdouts: Sequence[float]
    """The shares of rows held out."""
    runs: int
    """Random splits (and marginal draws) per holdout share."""
    marginal_samples: int
    """Points drawn from the marginals per run."""
    max_rows: int
    """Larger tables are calibrated on a random sample of this many rows."""
    seed: int | None


class QueryOptions(Selection, RunOptions, total=False):
    """The targets and where-and-how options of `cohortsql.sql_query` (its own keywords beside)."""

    weight: str | None


class TableOptions(Selection, RunOptions, total=False):
    """The targets and where-and-how options of `cohortsql.shapley_table` (its own keywords beside)."""

    weight: str | None


class InsertionOptions(RunOptions, total=False):
    """The options of `cohortsql.insertion_deletion` beside its own keywords: the targets are the
    attributions' own."""

    id: str | None
    weight: str | None


class AuditOptions(Selection, Inclusion, Weighting, NullReference, Estimation, Modelling, RunOptions, total=False):
    """The options of `cohortsql.audit`: `cohort_shapley`'s (bootstrap on by default), and with a
    model, how it is called and on how many targets and baselines."""

    baseline_sample: int | None
    model_targets: int
    """How many of the targets (a random sample with `seed`) the model's baseline and all-baseline
    Shapley are computed for."""
    protected_bins: Mapping[str, int | Sequence[float]]
    """How a numeric protected attribute's targets are grouped: a number of quantile groups of the
    targets, or the groups' edges (``{"age": [30, 50]}``: under 30, 30 to 50, 50 and over); by
    default 4 quantile groups (quartiles)."""


class FairnessOptions(Weighting, RunOptions, total=False):
    """The options of `cohortsql.fairness`: case weights, the Bayesian-bootstrap replicates of the
    intervals (by default `cohortsql.request.options.AUDIT_REPLICATES`) and their seed, and how numeric protected attributes are grouped."""

    seed: int | None
    protected_bins: Mapping[str, int | Sequence[float]]


class BaselineOptions(CompareOptions, total=False):
    """The options of `cohortsql.baseline_shapley`."""

    baseline: Baseline | Sequence[object]
