"""What a dry run says a run will do (``--dry-run``, `cohortsql.estimate`): the plan of cohort Shapley
(`Plan`, measured on the pilot batches of `cohortsql.run.pace.Pacer`), of the model's games
(`ModelGamePlan`) and of a comparison of the two (`ComparisonPlan`), in figures that multiply out.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cohortsql.formats.settings import Settings
from cohortsql.formats.tables import default_kinds_in_words
from cohortsql.run.progress import duration
from cohortsql.run.route import ChosenMethod, ChosenPath, Route


@dataclass(frozen=True)
class PilotScale:
    """How much more a run costs per target than its dry run's pilot (which computes a few of the
    replicates and permutations asked): each replicate adds a sum to every pair and a game to every
    target, each permutation a chain of cohorts."""

    replicates: float
    """(1 + B asked) / (1 + B of the pilot)."""
    permutations: float
    """Permutations allowed over the pilot's (for the permutation method; an upper bound)."""
    asked_replicates: int


SCALED_PILOT = 4.0
"""A dry run whose pilot costs a target at most 1 / this of what the run will (it computes fewer
replicates or permutations, `cohortsql.api.estimate.pilot_options`) may time every target: the
estimate multiplies its timing by that scale, noise included (a batch 0.3 s slow in 0.6 s read as a
run 1.5 times longer), and timing them all still costs at most a quarter of the run."""


@dataclass(frozen=True)
class Plan:
    """What a run will do and how long it should take, measured on its first two batches (``--dry-run``)."""

    targets: int
    distinct_targets: int
    subjects: int
    subject_rows: int
    """Rows each target is compared with: the subjects, or with `rows_collapsed` the estimate of their
    distinct rows."""
    features: int
    route: Route
    """The method and path the run takes."""
    engine: str
    pilot_targets: int
    """Targets of the timed batches."""
    pilot_seconds: float
    estimated_seconds: float
    """The whole heavy step: a fixed cost per batch and a cost per distinct target, from the timed batches."""
    players: int | None = None
    """The games' players when features are grouped (``groups=``); None: each feature is one."""
    replicates: int = 0
    """Bootstrap replicates B, each adding its sums to every target-subject pair."""
    scale: float = 1.0
    """How much more the run costs per target than the pilot did (`cohortsql.api.estimate.pilot_options`:
    the pilot computes a few replicates and permutations of those asked); the estimate includes it."""
    rows_collapsed: bool = False
    """Whether identical subjects are compared once, as one row of their total weight."""
    settings: Settings = field(default_factory=dict)
    """The run's settings as its results will record them: every feature's kind, the reason for each
    default, each window's half-width (`cohortsql.formats.tables.default_kinds_in_words`)."""
    second_passes: tuple[str, ...] = ()
    """What the run computes in a pass of its own after the values (interaction values, anchored
    terms, Owen values); `estimated_seconds` includes it."""
    second_pass_seconds: float = 0.0
    """The second passes' estimate: their time on `second_pass_pilot` distinct targets, times the
    distinct targets over those."""
    second_pass_pilot: int = 0
    null_copies: int = 0
    """The null reference's shuffled copies in all (``null=B`` copies of each feature asked), each the run
    again without replicates or second passes; `estimated_seconds` includes them."""
    null_features: int = 0
    """How many features the null reference copies."""
    null_seconds: float = 0.0
    """The copies' estimate: one feature's copies, from a fixed cost and a cost per target timed on two
    sets of the first targets, times the features."""
    null_timed: str = ""
    """How one feature's copies were timed, in words."""
    compile_seconds: float = 0.0
    """The time the dry run spent compiling the numba kernels: once per machine and column types (numba's
    cache serves the run after it), so apart from `estimated_seconds`."""

    @property
    def method(self) -> ChosenMethod:
        return self.route.method

    @property
    def path(self) -> ChosenPath:
        return self.route.path

    def scaled(self, pilot: PilotScale) -> Plan:
        """This plan, measured with a pilot's fewer replicates and permutations, for the run asked (the
        second passes read no replicate and no permutation)."""
        scale = pilot.replicates * (pilot.permutations if self.route.random else 1.0)
        values = (self.estimated_seconds - self.second_pass_seconds - self.null_seconds) * scale
        return replace(
            self,
            estimated_seconds=values + self.second_pass_seconds,
            replicates=pilot.asked_replicates,
            scale=scale,
        )

    def with_null(self, copies: int, features: int, feature_seconds: float, timed: str) -> Plan:
        """This plan with the null reference: `copies` shuffled copies of each of `features`, one feature's
        copies estimated at `feature_seconds` (how: `timed`)."""
        if not copies:
            return self
        seconds = features * feature_seconds
        return replace(
            self,
            null_copies=copies * features,
            null_features=features,
            null_seconds=seconds,
            null_timed=timed,
            estimated_seconds=self.estimated_seconds - self.null_seconds + seconds,
        )

    def _null_words(self) -> list[str]:
        """The null reference's estimate, in figures that multiply out."""
        if not self.null_copies:
            return []
        each = self.null_seconds / max(1, self.null_features)
        return [
            f"then the null reference, {self.null_copies:,} shuffled copies: about {duration(self.null_seconds)}"
            f" ({duration(each)} for one feature's, {self.null_timed}; times {self.null_features} features)"
        ]

    def _compile_words(self) -> list[str]:
        """The compilation this dry run paid, apart from the estimate."""
        if not self.compile_seconds:
            return []
        return [
            f"compiling the numba kernels took {duration(self.compile_seconds)} of this dry run (once on this"
            " machine: the run reads them from numba's cache; not in the estimate)"
        ]

    def _second_pass_words(self) -> list[str]:
        """The second passes' estimate, in figures that multiply out."""
        if not self.second_passes:
            return []
        measured = self.second_pass_seconds * self.second_pass_pilot / max(1, self.distinct_targets)
        return [
            f"then {' and '.join(self.second_passes)}, a pass of their own: about {duration(self.second_pass_seconds)}"
            f" ({measured:.2f} s on {self.second_pass_pilot:,} distinct targets, times"
            f" {self.distinct_targets:,} / {self.second_pass_pilot:,})"
        ]

    def _rows_compared(self) -> str:
        """What each target is compared with, when identical subjects are compared once: their distinct
        rows, counted exactly when the targets are every subject (their distinct count is the
        subjects'), else as the statistics step estimated them."""
        if not self.rows_collapsed:
            return ""
        if self.targets == self.subjects:
            return f" ({self.distinct_targets:,} distinct rows)"
        return f" (about {self.subject_rows:,} distinct rows)"

    def __str__(self) -> str:
        pairs = self.distinct_targets * self.subject_rows
        players = self.features if self.players is None else self.players
        cohorts = (
            f"{2**players:,} cohorts"
            if self.route.exact
            else "one path through its softened cohorts, from a histogram by dissimilar players"
            if self.route.integrated
            else "random chains of cohorts"
        )
        grouped = "" if players == self.features else f" in {players} groups"
        replicated = f", {self.replicates} bootstrap replicates" if self.replicates else ""
        values = self.estimated_seconds - self.second_pass_seconds - self.null_seconds
        return "\n".join(
            [
                f"plan: {self.targets:,} targets ({self.distinct_targets:,} distinct) x {self.subjects:,} subjects"
                f"{self._rows_compared()}, {self.features} features{grouped}, {self.route.method} method"
                f" ({cohorts} per target){replicated}, {self.route.path} path, on {self.engine}",
                f"work: {pairs:,} target-subject pairs",
                f"estimate: about {duration(self.estimated_seconds)}"
                + (f" in all; the values about {duration(values)}" if self.second_passes or self.null_copies else "")
                + f" (measured on {self.pilot_targets:,} of {self.distinct_targets:,} distinct targets in"
                f" {self.pilot_seconds:.2f} s"
                + (f", with fewer replicates or permutations, times {self.scale:,.3g})" if self.scale != 1 else ")"),
                *self._second_pass_words(),
                *self._null_words(),
                *self._compile_words(),
                *default_kinds_in_words(self.settings),
            ]
        )


@dataclass(frozen=True)
class ModelGamePlan:
    """What a game that calls the model (baseline or all-baseline Shapley) will do and how long it
    should take, from timed pilot runs of its first targets (``compare --dry-run``)."""

    game: str
    """``baseline`` or ``all-baseline``."""
    route: Route
    """Its method, on the model's hybrid points."""
    distinct_targets: int
    baselines: int
    points_per_target: int
    """Hybrid points the model is called on per target, at most (the distinct ones only are)."""
    pilot_targets: int
    pilot_seconds: float
    estimated_seconds: float

    @property
    def method(self) -> ChosenMethod:
        return self.route.method

    def __str__(self) -> str:
        bound = "at most " if self.route.random else ""
        return (
            f"{self.game}: {self.distinct_targets:,} distinct targets x {self.baselines:,} baselines, {self.route.method}"
            f" method ({bound}{self.points_per_target:,} model evaluations per target); estimate: {bound}about"
            f" {duration(self.estimated_seconds)} (measured on {self.pilot_targets:,} of {self.distinct_targets:,}"
            f" targets in {self.pilot_seconds:.2f} s)"
        )


@dataclass(frozen=True)
class ComparisonPlan:
    """`cohortsql.compare`'s stages, each with its estimate: cohort Shapley, then the model's games."""

    cohort: Plan
    model_games: tuple[ModelGamePlan, ...]

    @property
    def estimated_seconds(self) -> float:
        return self.cohort.estimated_seconds + sum(game.estimated_seconds for game in self.model_games)

    def __str__(self) -> str:
        return "\n".join(
            [
                f"cohort Shapley {self.cohort}",
                *map(str, self.model_games),
                f"total: about {duration(self.estimated_seconds)}",
            ]
        )
