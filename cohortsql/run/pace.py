"""Batches of targets sized by memory and by time, with progress and an estimate of the run's length.

The first batch is a small pilot (about `PILOT_PAIRS` target-subject pairs). Its time gives the
engine's measured rate for this table, so the run's length is estimated before most of the work
(and said on stderr, with a remedy, when it exceeds `LONG_RUN_SECONDS`); later batches are sized to
take about `SECONDS_PER_BATCH` each (`WIDE_BATCH_SECONDS` with bootstrap replicates), so that progress
moves every couple of seconds, and never hold
more targets than the memory budget allows.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from cohortsql.run.interrupts import check_not_interrupted
from cohortsql.run.progress import Reporter, duration

SECONDS_PER_BATCH = 2.0
WIDE_BATCH_SECONDS = 10.0
"""Batches whose every pass rescans many measure columns (bootstrap replicates) are paced to this: a
pass then costs about a second more than its targets."""
PILOT_PAIRS = 2_000_000
"""Target-subject pairs in the pilot batch: a few hundredths of a second on DuckDB."""
PILOT_CELLS = 1 << 24
"""Cohort values (targets x 2^d x games) of the exact method in the pilot batch, so that a dry run at
d = 20 or 24 measures a few targets instead of computing hundreds: at d = 20 on 500 rows,
`cohortsql.estimate` measured 16 targets in 4.5 s and said "about 2 min" (with 1 << 22, 4 targets
in 2.6 s said "about 5 min": the query's fixed cost charged to too few targets)."""
SMALL_RUN_PAIRS = 100_000_000
"""A run of at most this many pairs (a couple of seconds on DuckDB) needs no pilot: one batch does it."""
LONG_RUN_SECONDS = 60.0


@dataclass(frozen=True)
class Plan:
    """What a run will do and how long it should take, measured on a pilot batch (``--dry-run``)."""

    targets: int
    distinct_targets: int
    subjects: int
    subject_rows: int
    """Rows each target is compared with (identical subjects collapsed)."""
    features: int
    method: str
    path: str
    engine: str
    pilot_targets: int
    pilot_seconds: float
    players: int | None = None
    """The games' players when features are grouped (``groups=``); None: each feature is one."""

    @property
    def estimated_seconds(self) -> float:
        """The pilot's time per target times the distinct targets (the whole heavy step)."""
        return self.pilot_seconds / max(1, self.pilot_targets) * self.distinct_targets

    def __str__(self) -> str:
        pairs = self.distinct_targets * self.subject_rows
        players = self.features if self.players is None else self.players
        cohorts = f"{2**players:,} cohorts" if self.method == "exact" else "random chains of cohorts"
        grouped = "" if players == self.features else f" in {players} groups"
        return "\n".join(
            [
                f"plan: {self.targets:,} targets ({self.distinct_targets:,} distinct) x {self.subjects:,} subjects"
                f" ({self.subject_rows:,} distinct rows), {self.features} features{grouped}, {self.method} method"
                f" ({cohorts} per target), {self.path} path, on {self.engine}",
                f"work: {pairs:,} target-subject pairs",
                f"estimate: about {duration(self.estimated_seconds)} (measured on {self.pilot_targets:,} targets"
                f" in {self.pilot_seconds:.2f} s)",
            ]
        )


@dataclass
class Pacer:
    """Yields (first target, number of targets) for consecutive batches of `total` distinct targets."""

    total: int
    memory_batch: int
    """The most targets a batch may hold (the numpy arrays' memory budget)."""
    pairs_per_target: int
    """Subject rows each target is compared with (sizes the pilot)."""
    reporter: Reporter
    sums_per_pair: float = 1.0
    """How many sums each target-subject pair adds to (weights, outcomes, replicates): the pilot and
    the small-run threshold count pairs at this cost."""
    seconds_per_batch: float = SECONDS_PER_BATCH
    remedy: str = "sample the targets (--sample), use bins: instead of windows, or fewer features"
    paced: bool = True
    """False where a batch costs about the same whatever its size (the lattice walk): memory sizes it."""
    pilot_only: bool = False
    """Stop after the pilot batch (a dry run)."""
    unit: str = "targets"
    """What the progress counts: targets, or distinct targets when identical ones are computed once."""
    cells_per_target: int = 0
    """The numpy work per target beside the SQL (the exact method's 2^d cohort values of every game):
    the pilot holds at most `PILOT_CELLS` of them."""
    seconds_per_target: float | None = field(default=None, init=False)
    """Measured on the pilot batch, then on each later one."""
    started: float = field(default_factory=time.perf_counter, init=False)

    def batches(self) -> Iterator[tuple[int, int]]:
        self.reporter.start(self.total, self.unit)
        start = 0
        size = self._pilot_size()
        while start < self.total:
            size = max(1, min(size, self.total - start))
            check_not_interrupted()  # a Ctrl-C whose exception a library swallowed stops the next batch
            began = time.perf_counter()
            yield start, size
            elapsed = time.perf_counter() - began
            first = start == 0
            start += size
            self.seconds_per_target = elapsed / size
            if first:
                if self.pilot_only:
                    return
                self._say_if_long(start)
            self.reporter.update(start)
            if self.paced:
                size = min(self.memory_batch, math.ceil(self.seconds_per_batch / max(self.seconds_per_target, 1e-9)))
        self.reporter.finish()

    def _pilot_size(self) -> int:
        """`PILOT_PAIRS` pairs of targets and subjects, whatever each pair sums: a query's fixed cost of
        binding its sums grows with them too, and a pilot of too few targets would charge it to each."""
        small = self.total * self.pairs_per_target * self.sums_per_pair <= SMALL_RUN_PAIRS
        if not self.paced or (small and not self.pilot_only):
            return self.memory_batch
        size = min(self.memory_batch, PILOT_PAIRS // max(1, self.pairs_per_target))
        if self.cells_per_target:
            size = min(size, PILOT_CELLS // self.cells_per_target)
        return max(1, size)

    def remaining_seconds(self, done: int) -> float | None:
        """The estimated time for the targets after the first `done`, at the measured rate."""
        if self.seconds_per_target is None:
            return None
        return (self.total - done) * self.seconds_per_target

    def _say_if_long(self, done: int) -> None:
        remaining = self.remaining_seconds(done)
        if remaining is not None and remaining > LONG_RUN_SECONDS:
            self.reporter.note(
                f"about {duration(remaining)} to go for {self.total:,} targets x {self.pairs_per_target:,} subject"
                f" rows (measured on the first {done:,}); to go faster: {self.remedy}"
            )
