"""Batches of targets sized by memory and by time, with progress and an estimate of the run's length.

The first batch is a small pilot (about `PILOT_PAIRS` target-subject pairs), the second
`CALIBRATION_FACTOR` times larger. Their two times give the engine's cost for this table as a fixed
cost per batch (a query's planning, its replicate draws) plus a cost per target, so the run's length
is estimated before most of the work (and said on stderr, with a remedy, when it exceeds
`LONG_RUN_SECONDS`): a single pilot charged the fixed cost to each of its few targets, and a run of
3-4 minutes was announced as 6.5 hours. Later batches are sized to take about `SECONDS_PER_BATCH`
each (`WIDE_BATCH_SECONDS` with bootstrap replicates) beyond their fixed cost, so that progress moves
every couple of seconds, and never hold more targets than the memory budget allows.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from cohortsql.interrupts import check_not_interrupted
from cohortsql.numeric import compilation
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
PILOT_TARGETS = 16
"""The most targets a dry run's pilot batch holds (its calibration batch `CALIBRATION_FACTOR` times as
many), whatever the path and however cheap each looks: a dry run at d = 20 once measured all 500
targets of its run as its pilot; and no more than a fifth of the targets, so that it is never the run."""
DRY_RUN_PAIR_SUMS = 16_000_000
"""A dry run grows its calibration batches fourfold while the next one adds up at most this many
pair sums (pairs times the sums each adds), the exact method's cells allowing and never reaching half
the run: the cost per target is then read across a span of targets wide enough to rise above the
machine's noise. Bounded by work, not by a clock, so that a dry run measures the same targets on any
machine."""
SMALL_RUN_PAIRS = 100_000_000
"""A run of at most this many pairs (a couple of seconds on DuckDB) needs no pilot: one batch does it."""
LONG_RUN_SECONDS = 60.0
CALIBRATION_FACTOR = 4
"""The second batch holds this many times the pilot's targets (memory allowing), so that the two
times separate a batch's fixed cost from its cost per target."""


def fitted_costs(first: tuple[int, float], last: tuple[int, float]) -> tuple[float, float]:
    """The cost per target and the fixed cost of a batch, from two timed batches (targets, seconds):
    from their difference when the larger took longer; none per target when it did not (the batch's
    fixed cost is all there is to see: Spark's executors scan every subject whatever the targets, and
    charging that to each target made 300 targets take 25 batches of about 2 s); else, for batches of
    one size, each target costs the latest's mean."""
    (small, small_seconds), (large, large_seconds) = first, last
    if large > small and large_seconds > small_seconds:
        per_target = (large_seconds - small_seconds) / (large - small)
        return per_target, max(0.0, small_seconds - per_target * small)
    if large > small:
        return 0.0, (small_seconds + large_seconds) / 2
    return large_seconds / large, 0.0


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
    remedy: str = "sample the targets (sample= / --sample), use bins: instead of windows, or fewer features"
    paced: bool = True
    """False where a batch costs about the same whatever its size (the lattice walk): memory sizes it."""
    pilot_only: bool = False
    """Stop after the pilot batch (a dry run)."""
    pilot_share: float = 0.5
    """A dry run grows its batches over at most this share of the targets: half, lest it be the run;
    all of them for a pilot scaled down from the run (`cohortsql.run.plans.SCALED_PILOT`), whose noise the scale multiplies."""
    unit: str = "targets"
    """What the progress counts: targets, or distinct targets when identical ones are computed once."""
    cells_per_target: int = 0
    """The numpy work per target beside the SQL (the exact method's 2^d cohort values of every game):
    the pilot holds at most `PILOT_CELLS` of them."""
    setup_seconds: float = field(default=0.0, init=False)
    """Work a run does once before its first batch, timed by the path (the cells of the grouping-sets
    path's lattice); a dry run's estimate includes it."""
    seconds_per_target: float | None = field(default=None, init=False)
    """The cost of one more target in a batch, from the timed batches."""
    seconds_per_batch_fixed: float = field(default=0.0, init=False)
    """A batch's cost whatever its size, from the first two batches' times (0 until both are known)."""
    timed: list[tuple[int, float]] = field(default_factory=list, init=False)
    """(targets, seconds) of every batch so far, without the time spent compiling the kernels
    (`cohortsql.numeric.compilation`)."""
    started: float = field(default_factory=time.perf_counter, init=False)

    def batches(self) -> Iterator[tuple[int, int]]:
        self.reporter.start(self.total, self.unit, estimated=True)
        start = 0
        size = self._pilot_size()
        while start < self.total:
            size = max(1, min(size, self.total - start))
            check_not_interrupted()  # a Ctrl-C whose exception a library swallowed stops the next batch
            began, compiling = time.perf_counter(), compilation.seconds()
            yield start, size
            compiled = compilation.seconds() - compiling  # once per machine: the run after reads numba's cache
            self.timed.append((size, max(0.0, time.perf_counter() - began - compiled)))
            start += size
            self._fit()
            if len(self.timed) == 1:
                timed_batches = 2 if self._calibrating() else 1
            grows = len(self.timed) == timed_batches and self._dry_run_grows(start)
            if grows:
                timed_batches += 1
            elif len(self.timed) == timed_batches:
                if self.pilot_only:
                    return
                self._say_if_long(start)
            # no time left is shown before the calibration batch: the pilot alone charges a batch's
            # fixed cost to each of its few targets ("about 16 min left" for a run of 15 s)
            known = len(self.timed) >= 2 or timed_batches == 1
            self.reporter.update(start, self.remaining_seconds(start) if known else None)
            size = min(self.memory_batch, CALIBRATION_FACTOR * size) if grows else self._next_size()
        self.reporter.finish()

    def _calibrating(self) -> bool:
        """Whether the second batch is still to time (a paced run, or a dry run, of more targets than
        the pilot's). A dry run of a path sized by memory needs it too: its batch costs mostly the
        same whatever its size (the lattice walk), and one timed batch would charge that to each of
        its targets (13 s estimated for a run of 0.3 s)."""
        return (self.paced or self.pilot_only) and len(self.timed) == 1 and self.timed[0][0] < self.total

    def _dry_run_grows(self, done: int) -> bool:
        """Whether a dry run times one more batch, four times its last (`DRY_RUN_PAIR_SUMS`)."""
        if not self.pilot_only or len(self.timed) < 2:
            return False
        size = CALIBRATION_FACTOR * self.timed[-1][0]
        work = size * self.pairs_per_target * self.sums_per_pair
        cells = not self.cells_per_target or size * self.cells_per_target <= CALIBRATION_FACTOR * PILOT_CELLS
        within = done + size <= int(self.total * self.pilot_share)
        return work <= DRY_RUN_PAIR_SUMS and cells and size <= self.memory_batch and within

    def _fit(self) -> None:
        self.seconds_per_target, self.seconds_per_batch_fixed = fitted_costs(self.timed[0], self.timed[-1])

    def _next_size(self) -> int:
        """The calibration batch after the pilot (its size fixed, so that a dry run measures the same
        targets on any machine), then batches of `seconds_per_batch` beyond their fixed cost (at least
        as long as it, so that it stays a small part), within memory."""
        if self._calibrating():
            return min(self.memory_batch, CALIBRATION_FACTOR * self.timed[0][0])
        if not self.paced:
            return self.memory_batch
        rate = max(self.seconds_per_target or 0.0, 1e-9)
        if not self.seconds_per_target:  # no cost per target seen yet: grow until one shows, within memory
            return min(self.memory_batch, CALIBRATION_FACTOR * self.timed[-1][0])
        fixed = self.seconds_per_batch_fixed
        return min(self.memory_batch, max(1, math.ceil(max(self.seconds_per_batch - fixed, fixed) / rate)))

    def _pilot_size(self) -> int:
        """`PILOT_PAIRS` pairs of targets and subjects, whatever each pair sums: a query's fixed cost of
        binding its sums grows with them too, and a pilot of too few targets would charge it to each."""
        small = self.total * self.pairs_per_target * self.sums_per_pair <= SMALL_RUN_PAIRS
        if not self.pilot_only and (small or not self.paced):
            return self.memory_batch
        size = min(self.memory_batch, PILOT_PAIRS // max(1, self.pairs_per_target))
        if self.pilot_only:  # a dry run's pilot is bounded whatever the path: a few targets, never all
            size = min(size, PILOT_TARGETS, max(1, self.total // (1 + CALIBRATION_FACTOR)))
        if self.cells_per_target:
            size = min(size, PILOT_CELLS // self.cells_per_target)
        return max(1, size)

    def remaining_seconds(self, done: int) -> float | None:
        """The estimated time for the targets after the first `done`: their cost per target, and the
        fixed cost of the batches they take."""
        if self.seconds_per_target is None:
            return None
        left = self.total - done
        if self.seconds_per_target or not self.paced:
            batches = math.ceil(left / self._next_size()) if left > 0 else 0
        else:  # batches growing fourfold from the latest, within memory (`_next_size`)
            batches, size, covered = 0, self.timed[-1][0], 0
            while covered < left:
                size = min(self.memory_batch, CALIBRATION_FACTOR * size)
                covered += size
                batches += 1
        return left * self.seconds_per_target + batches * self.seconds_per_batch_fixed

    def run_seconds(self, done: int) -> float:
        """A dry run's estimate of the whole run, whose first `done` targets it timed: a paced run
        computes those batches too, then the rest (`remaining_seconds`); a run sized by memory
        computes every target in its own batches, each with its fixed cost."""
        if self.paced or self.seconds_per_target is None:
            timed = sum(seconds for _, seconds in self.timed) + (self.remaining_seconds(done) or 0.0)
            return self.setup_seconds + timed
        batches = math.ceil(self.total / self.memory_batch)
        return self.setup_seconds + self.total * self.seconds_per_target + batches * self.seconds_per_batch_fixed

    def _say_if_long(self, done: int) -> None:
        note_if_long(
            self.reporter,
            self.remaining_seconds(done),
            f"for {self.total:,} targets x {self.pairs_per_target:,} subject rows (measured on the first {done:,})",
            self.remedy,
        )


def note_if_long(reporter: Reporter, remaining: float | None, work: str, remedy: str, *, at_most: bool = False) -> None:
    """Say on the reporter how long the rest of a run should take, with `remedy`, when that exceeds
    `LONG_RUN_SECONDS` (`at_most`: the time is a bound, the run may stop sooner)."""
    if remaining is not None and remaining > LONG_RUN_SECONDS:
        bound = "at most " if at_most else ""
        reporter.note(f"{bound}about {duration(remaining)} to go {work}; to go faster: {remedy}")
