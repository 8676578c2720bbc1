"""Memory settings, progress reports and batching options."""

import io
import re

import duckdb
import numpy as np
import polars as pl
import pytest

import cohortsql
from cohortsql.engines import EngineSettings, open_engine
from cohortsql.numeric import shapley
from cohortsql.run import pace, plans, progress
from cohortsql.run import preparation as prepare

FRAME = pl.DataFrame({"x": np.arange(40) % 7 * 1.0, "z": np.arange(40) % 3, "y": np.arange(40) / 10})


def test_memory_settings_apply_and_are_restored_on_the_callers_connection(tmp_path):
    connection = duckdb.connect()
    before = connection.execute("SELECT current_setting('memory_limit')").fetchall()
    result = cohortsql.cohort_shapley(
        FRAME,
        prediction="y",
        similarity={"x": "abs:1", "z": "exact"},
        engine=cohortsql.DuckDB(memory_limit="300MB", temp_directory=tmp_path / "spill"),
        connection=connection,
    )
    assert len(result.ids) == 40
    assert connection.execute("SELECT current_setting('memory_limit')").fetchall() == before


def test_memory_limit_bounds_the_batches():
    """A quarter of DuckDB's memory limit, when less than the default budget, bounds each batch."""
    limited = open_engine(engine="duckdb", settings=EngineSettings(memory_limit="400MB"))
    try:
        assert limited.memory_budget == pytest.approx(400e6, rel=1e-3)
        assert prepare._batch_bytes(limited) == limited.memory_budget // 4
    finally:
        limited.close()
    unlimited = open_engine(engine="duckdb")
    try:
        assert unlimited.memory_budget is None
        assert prepare._batch_bytes(unlimited) == prepare.BATCH_MEMORY_BYTES
    finally:
        unlimited.close()
    assert shapley.targets_per_batch(20, 100 * 2**20) == 2  # 6 arrays of 2^20 doubles per target


def test_bad_memory_limit_names_the_setting():
    with pytest.raises(cohortsql.CohortError, match="memory_limit 'lots' is not a size DuckDB reads"):
        cohortsql.cohort_shapley(FRAME, prediction="y", similarity=["x"], engine=cohortsql.DuckDB(memory_limit="lots"))


def test_batches_of_targets_give_the_same_values(monkeypatch):
    whole = cohortsql.cohort_shapley(FRAME, prediction="y", similarity={"x": "abs:1", "z": "exact"})
    monkeypatch.setattr(prepare, "BATCH_MEMORY_BYTES", 1)  # one target per batch
    batched = cohortsql.cohort_shapley(FRAME, prediction="y", similarity={"x": "abs:1", "z": "exact"})
    np.testing.assert_allclose(batched.shapley, whole.shapley, atol=1e-14)


class Terminal(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def test_reporters_by_place_and_choice():
    assert isinstance(progress.reporter(False, Terminal(True)), progress.Silent)
    assert isinstance(progress.reporter(None, Terminal(True)), progress.Bar)
    assert isinstance(progress.reporter(True, Terminal(False)), progress.LogLines)
    assert type(progress.reporter(None, Terminal(False))) is progress.Reporter  # notes only


def test_a_bar_on_a_terminal():
    stream = Terminal(True)
    bar = progress.reporter(True, stream)
    bar.start(5)
    bar.update(2)
    bar.note("a note")
    bar.update(5)
    bar.finish()
    assert "a note" in stream.getvalue() and "cohortsql" in stream.getvalue()


class Clock:
    """A clock that moves only when told."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_log_lines_are_spaced(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress.time, "perf_counter", clock)
    stream = Terminal(False)
    log = progress.reporter(True, stream)
    log.start(100)
    for done, now in [(10, 1.0), (20, 11.0), (30, 12.0), (40, 25.0)]:
        clock.now = now
        log.update(done)
    assert [line.split(",")[0] for line in stream.getvalue().splitlines()] == [
        "cohortsql: 20/100 targets",
        "cohortsql: 40/100 targets",
    ]
    log.finish()
    assert stream.getvalue().splitlines()[-1].startswith("cohortsql: 100/100 targets, 25 s")


def test_times_left_are_in_the_same_words_as_the_estimate(monkeypatch):
    """A run estimated at "about 4.3 h" said "about 15561 s left" in its log lines."""
    clock = Clock()
    monkeypatch.setattr(progress.time, "perf_counter", clock)
    stream = Terminal(False)
    log = progress.reporter(True, stream)
    log.start(10_000)
    clock.now = 15.0
    log.update(10)
    assert stream.getvalue().splitlines()[-1] == "cohortsql: 10/10,000 targets, 15 s, about 4.2 h left"
    assert [progress.duration(s) for s in (0.4, 45, 720, 15561)] == ["0.4 s", "45 s", "12 min", "4.3 h"]


def test_progress_over_real_batches(monkeypatch, capsys):
    """Progress counts distinct targets, and says so: targets with identical predictors are computed once."""
    monkeypatch.setattr(pace, "PILOT_PAIRS", 1)  # one target in the pilot, then time-sized batches
    cohortsql.cohort_shapley(FRAME, prediction="y", similarity=["x"], progress=True)
    assert capsys.readouterr().err.splitlines()[-1].startswith("cohortsql: 7/7 distinct targets of 40,")
    cohortsql.cohort_shapley(FRAME.head(7), prediction="y", similarity=["x"], progress=True)
    assert capsys.readouterr().err.splitlines()[-1].startswith("cohortsql: 7/7 targets,")
    cohortsql.cohort_shapley(FRAME, prediction="y", similarity=["x"], progress=False)
    assert capsys.readouterr().err == ""


def timed_pacer(monkeypatch) -> tuple[Clock, list[str], pace.Pacer]:
    """A pacer of 10,000 targets x 200,000 subject rows on a clock the test moves, and the notes it prints."""
    clock = Clock()
    monkeypatch.setattr(pace.time, "perf_counter", clock)
    notes: list[str] = []
    reporter = progress.Reporter(Terminal(False))
    reporter.note = notes.append
    return clock, notes, pace.Pacer(total=10_000, memory_batch=3_000, pairs_per_target=200_000, reporter=reporter)


def test_batches_start_with_a_pilot_then_take_about_two_seconds(monkeypatch):
    clock, notes, pacer = timed_pacer(monkeypatch)
    sizes = []
    for _, size in pacer.batches():
        sizes.append(size)
        clock.now += 0.1 * size  # 0.1 s per target
    assert sizes[0] == 10  # 2,000,000 pairs / 200,000 subject rows
    assert sizes[1] == 40  # the calibration batch: four times the pilot
    assert sizes[2:5] == [20, 20, 20]  # 2 s at 0.1 s per target
    assert sum(sizes) == 10_000
    assert len(notes) == 1 and "about 17 min to go for 10,000 targets" in notes[0] and "--sample" in notes[0]


def test_a_batchs_fixed_cost_is_not_charged_to_each_target(monkeypatch):
    """A pilot of 10 targets whose query costs 1 s whatever its size: the estimate charged that second
    to each of the 10 and announced hours for a run of seconds (6.5 h for a 3-4 min bootstrap run).
    The pilot and the calibration batch separate the fixed cost from the cost per target, later batches
    grow to amortise it, and the estimate lands within 3x of what the run then takes."""
    clock, notes, pacer = timed_pacer(monkeypatch)
    sizes, estimates = [], []
    for start, size in pacer.batches():
        sizes.append(size)
        if len(sizes) == 3:  # timed: the pilot and the calibration batch
            estimates.append(clock.now + pacer.remaining_seconds(start))
        clock.now += 1.0 + 0.001 * size  # 1 s a query, 1 ms a target
    taken = clock.now
    assert sizes[:2] == [10, 40] and abs(sizes[2] - 1_000) <= 1  # 1 s of targets beyond the query's fixed second
    assert pacer.seconds_per_batch_fixed == pytest.approx(1.0) and pacer.seconds_per_target == pytest.approx(0.001)
    assert taken / 3 <= estimates[0] <= 3 * taken and estimates[0] == pytest.approx(taken, rel=0.05)
    assert notes == []  # about 20 s: no long-run warning (10 targets at 0.101 s each said 17 min)


def test_the_time_left_is_the_pacers_estimate_and_none_after_the_pilot_alone(monkeypatch):
    """A run of 3,000 targets over 1,000,000 rows (DuckDB's histogram built in this process) printed
    "2/3,000 targets, 0.6 s, about 16 min left" and took 15 s: its log line charged the pilot's fixed
    cost to each of the pilot's two targets. Until the calibration batch separates the two costs no
    time left is shown; then it is the pacer's estimate, within 3x of what the rest of the run takes."""
    clock = Clock()
    clock.now = 100.0
    monkeypatch.setattr(pace.time, "perf_counter", clock)
    monkeypatch.setattr(progress.time, "perf_counter", clock)
    stream = Terminal(False)
    pacer = pace.Pacer(
        total=10_000, memory_batch=3_000, pairs_per_target=200_000, reporter=progress.reporter(True, stream)
    )
    shown = []
    for start, size in pacer.batches():
        if start:
            shown.append((start, clock.now, pacer.remaining_seconds(start)))
        clock.now += 1.0 + 0.001 * size  # 1 s a batch whatever its targets, 1 ms a target
    lines = stream.getvalue().splitlines()
    assert lines[0] == "cohortsql: 10/10,000 targets, 1.0 s"  # the pilot: no estimate (it said "about 17 min")
    later = [line for line in lines[1:-1] if "left" in line]
    assert later, lines
    done = int(later[0].split("/")[0].removeprefix("cohortsql: ").replace(",", ""))
    _, at, estimate = next(item for item in shown if item[0] == done)
    assert later[0].endswith(f", about {progress.duration(estimate)} left")
    assert (clock.now - at) / 3 <= estimate <= 3 * (clock.now - at)


def test_a_batch_that_costs_the_same_whatever_its_targets_grows_fourfold(monkeypatch):
    """Spark's executors scan every subject whatever the targets: a batch costs 1.25 s, its targets next
    to nothing. The pilot (10) and the calibration batch (40) took the same, so no cost per target is
    seen and batches grow fourfold within memory (3,000) instead of charging 1.25 s to 50 targets (which
    made 300 targets take 25 batches); the estimate is the batches' fixed costs."""
    clock, notes, pacer = timed_pacer(monkeypatch)
    sizes, estimates = [], []
    for start, size in pacer.batches():
        sizes.append(size)
        if len(sizes) == 3:
            estimates.append(clock.now + pacer.remaining_seconds(start))
        clock.now += 1.25  # exact in binary: every batch takes the same on the test's clock
    assert sizes[:5] == [10, 40, 160, 640, 2560] and sum(sizes) == 10_000
    assert pacer.seconds_per_target == 0.0  # nothing per target to see
    assert len(sizes) * 1.25 / 3 <= estimates[0] <= len(sizes) * 1.25 * 3


def test_memory_bounds_every_batch_and_the_lattice_is_not_paced():
    pacer = pace.Pacer(total=10, memory_batch=4, pairs_per_target=1, reporter=progress.Silent(), paced=False)
    assert [size for _, size in pacer.batches()] == [4, 4, 2]


def test_dry_run_estimates_without_computing_everything():
    plan = cohortsql.estimate(FRAME, prediction="y", similarity={"x": "abs:1", "z": "exact"})
    assert (plan.targets, plan.subjects, plan.features, plan.method) == (40, 40, 2, "exact")
    assert plan.pilot_targets >= 1 and plan.estimated_seconds >= 0
    assert "plan: 40 targets" in str(plan) and "estimate: about" in str(plan)


def test_a_dry_run_at_many_features_measures_a_few_targets_not_the_run():
    """The exact method's pilot holds at most PILOT_CELLS cohort values: at d = 20, 16 targets of 200,
    then 64 in the calibration batch (it measured every target, which is the whole run)."""
    from cohortsql.run.pace import PILOT_CELLS

    rng = np.random.default_rng(0)
    d = 20
    frame = pl.DataFrame({f"x{j}": rng.integers(0, 3, 200) for j in range(d)}).with_columns(
        y=pl.Series(rng.normal(size=200))
    )
    plan = cohortsql.estimate(frame, prediction="y", similarity={f"x{j}": "abs:1" for j in range(d)}, method="exact")
    assert PILOT_CELLS >> d == 16 and plan.pilot_targets == 16 + 4 * 16  # the pilot and the calibration batch
    assert plan.distinct_targets == 200


@pytest.mark.parametrize("paced", [True, False], ids=["paced", "sized by memory"])
def test_a_dry_runs_pilot_is_bounded_whatever_the_clock_says(monkeypatch, paced):
    """On a busy machine (every batch slow, the second slower per target than the first) and on a
    path sized by memory alone, a dry run measures a few targets and stops: never its whole run."""
    clock = Clock()
    monkeypatch.setattr(pace.time, "perf_counter", clock)
    reporter = progress.Reporter(Terminal(False))
    pacer = pace.Pacer(
        total=500, memory_batch=500, pairs_per_target=500, reporter=reporter, paced=paced, pilot_only=True
    )
    sizes = []
    for _, size in pacer.batches():
        sizes.append(size)
        clock.now += 30.0 + size  # a busy machine: half a minute a batch, a second a target
    assert sum(sizes) <= pace.PILOT_TARGETS * (1 + pace.CALIBRATION_FACTOR) < 500
    assert sizes[0] <= pace.PILOT_TARGETS and pacer.remaining_seconds(sum(sizes)) > 0


def test_a_dry_run_of_huge_budgets_returns_a_plan_at_once():
    """The most bootstrap replicates (8,000; 10^8 are refused, as by the run) or 10^9 permutations: the
    pilot computes a few of them and scales the estimate, so the plan comes back (the pilot once ran a
    target's whole budget, or ran out of memory)."""
    rng = np.random.default_rng(3)
    frame = pl.DataFrame({"id": np.arange(200), "x": rng.integers(0, 3, 200), "z": rng.integers(0, 3, 200)})
    frame = frame.with_columns(p=pl.Series(rng.normal(size=200)))
    with pytest.raises(cohortsql.CohortError, match="bootstrap must be at most 8,000 replicates"):
        cohortsql.estimate(frame, prediction="p", similarity=["x", "z"], id="id", bootstrap=10**8)
    boot = cohortsql.estimate(frame, prediction="p", similarity=["x", "z"], id="id", bootstrap=8_000)
    assert boot.replicates == 8_000 and boot.scale == pytest.approx((1 + 8_000) / (1 + 8))
    assert "times" in str(boot) and boot.estimated_seconds > 100 * boot.pilot_seconds / boot.pilot_targets
    many = cohortsql.estimate(
        frame, prediction="p", similarity=["x", "z"], id="id", method="permutation", max_permutations=10**9
    )
    assert many.scale == pytest.approx(10**9 / 16) and many.pilot_targets < many.distinct_targets


def test_a_dry_run_claims_no_distinct_rows_it_did_not_count():
    """4,454 rows of which three pairs are identical: the plan said "4,451 distinct" targets beside
    "(4,454 distinct rows)" (every row, not a count of distinct ones: identical rows were not collapsed).
    Rows are now called distinct only when identical ones are compared once: counted exactly when the
    targets are every row, said to be an estimate otherwise."""
    rng = np.random.default_rng(0)
    values = rng.normal(size=(4454, 3))
    values[1], values[3], values[5] = values[0], values[2], values[4]
    frame = pl.DataFrame({"a": values[:, 0], "b": values[:, 1], "c": values[:, 2], "p": rng.normal(size=4454)})
    exact = dict.fromkeys(["a", "b", "c"], "exact")
    text = str(cohortsql.estimate(frame, prediction="p", similarity=exact)).splitlines()[0]
    assert "(4,451 distinct) x 4,454 subjects," in text and "distinct rows" not in text, text
    few = pl.DataFrame({"a": np.arange(5000) % 2, "b": np.arange(5000) % 3, "p": rng.normal(size=5000)})
    kinds = {"a": "exact", "b": "exact"}
    every = str(cohortsql.estimate(few, prediction="p", similarity=kinds)).splitlines()[0]
    assert "x 5,000 subjects (6 distinct rows)," in every, every
    sampled = str(cohortsql.estimate(few, prediction="p", similarity=kinds, sample=50, seed=1)).splitlines()[0]
    assert "x 5,000 subjects (about 6 distinct rows)," in sampled, sampled


SPREAD = FRAME.with_columns(x=pl.Series(np.linspace(0.0, 10.0, 40)))


def test_a_dry_run_lists_every_features_kind_and_window():
    """The plan listed no kinds: the analyst saw what a run would cost, not what it would compare.
    It now lists them as the results will (each default's reason, each window's half-width), from
    Python and from --dry-run."""

    plan = cohortsql.estimate(SPREAD, prediction="y", similarity={"x": None, "z": "exact"})
    text = str(plan)
    assert "similarity per feature" in text
    assert re.search(r"\n  x  range:0\.1 +window ±[0-9.]+; by default:", text), text
    assert "\n  z  exact" in text
    assert plan.settings["similarity"] == {"x": "range:0.1", "z": "exact"}


def test_the_command_lines_dry_run_lists_the_kinds(tmp_path):
    from typer.testing import CliRunner

    from cohortsql.cli import app

    SPREAD.write_parquet(tmp_path / "frame.parquet")
    done = CliRunner().invoke(
        app, ["effects", str(tmp_path / "frame.parquet"), "--prediction", "y", "--features", "x,z", "--dry-run"]
    )
    assert done.exit_code == 0, done.output
    assert "similarity per feature" in done.output and re.search(r"\n  x  +range:0\.1 +window ±", done.output)


def test_a_dry_run_of_a_path_sized_by_memory_separates_the_lattice_from_the_targets(monkeypatch):
    """The grouping-sets path walks the lattice of cells in every batch, whatever its targets: a dry
    run timed one batch of 16 targets and charged its lattice to each (13 s estimated for a 0.3 s run of
    5,734 targets). It now times the calibration batch too, the lattice is a cost per batch, and the
    estimate is of the run's own batches (sized by memory), not of the dry run's."""
    clock = Clock()
    monkeypatch.setattr(pace.time, "perf_counter", clock)
    pacer = pace.Pacer(
        total=5734, memory_batch=43690, pairs_per_target=6000, reporter=progress.Silent(), paced=False, pilot_only=True
    )
    sizes = []
    for _, size in pacer.batches():
        sizes.append(size)
        clock.now += 0.25 + size / 2**16  # a quarter second of lattice a batch, 15 us a target
    assert sizes == [16, 64, 256, 1024]  # fourfold while a batch adds at most DRY_RUN_PAIR_SUMS
    assert pacer.seconds_per_batch_fixed == pytest.approx(0.25) and pacer.seconds_per_target == pytest.approx(2**-16)
    run = 0.25 + 5734 / 2**16  # one batch of every target
    assert pacer.run_seconds(sum(sizes)) == pytest.approx(run)  # it was 0.25 / 16 a target: 90 s


def test_a_dry_run_reads_the_cost_per_target_across_a_wide_span_of_targets(monkeypatch):
    """Two tiny batches (16 and 64 targets, 0.1 s each) left the cost per target to the machine's
    noise: four consecutive dry runs of one 200-replicate run said 99, 46, 104 and 105 s. A dry run
    now grows its batches fourfold while each adds at most DRY_RUN_PAIR_SUMS pair sums: a fixed amount
    of work, so that every machine measures the same targets; a noisy pilot moves the estimate little."""
    estimates = []
    for noise in (0.0, 0.05):  # the pilot batch once 50 ms slower than it should be
        clock = Clock()
        monkeypatch.setattr(pace.time, "perf_counter", clock)
        pacer = pace.Pacer(
            total=4000, memory_batch=4000, pairs_per_target=4000, reporter=progress.Silent(), pilot_only=True
        )
        sizes = []
        for _, size in pacer.batches():
            clock.now += 0.05 + 0.001 * size + (noise if not sizes else 0.0)
            sizes.append(size)
        assert sizes == [16, 64, 256, 1024]
        estimates.append(pacer.run_seconds(sum(sizes)))
        if noise:  # the first two batches alone: no cost per target at all
            assert pace.fitted_costs(pacer.timed[0], pacer.timed[1])[0] == 0.0
    assert estimates[1] == pytest.approx(estimates[0], rel=0.05)


def test_a_dry_run_times_the_second_passes_it_plans(monkeypatch):
    """With interaction values (the issue: "5.9 s for a 12.0 s run"), anchored terms or Owen values, an
    exact run makes a pass of its own after the values: the dry run makes it on its pilot targets,
    adds it to the estimate and prints figures that multiply out. The permutation method estimates
    interactions with the values, so its pilot computes them too."""
    import cohortsql.api.estimate as estimate_module
    from cohortsql.run import readouts

    rng = np.random.default_rng(4)
    frame = pl.DataFrame({f"x{j}": rng.integers(0, 4, 300) for j in range(6)}).with_columns(
        y=pl.Series(rng.normal(size=300))
    )
    similarity = {f"x{j}": "abs:1" for j in range(6)}
    passes = []
    monkeypatch.setattr(
        readouts, "lattice_terms", lambda *arguments, **keywords: passes.append(arguments[1].count) or (None, None)
    )
    plain = cohortsql.estimate(frame, prediction="y", similarity=similarity)
    assert plain.second_passes == () and passes == [] and "a pass of their own" not in str(plain)
    plan = cohortsql.estimate(frame, prediction="y", similarity=similarity, interactions=True, anchored=2)
    assert plan.second_passes == ("interaction values", "anchored terms") and passes == [plan.pilot_targets]
    assert plan.second_pass_pilot == plan.pilot_targets and plan.second_pass_seconds >= 0
    words = re.search(r"about (.+?) \(([\d.]+) s on ([\d,]+) distinct targets, times ([\d,]+) / ([\d,]+)\)", str(plan))
    assert words is not None and int(words[4].replace(",", "")) == plan.distinct_targets
    assert int(words[3].replace(",", "")) == int(words[5].replace(",", "")) == plan.pilot_targets
    measured = plan.second_pass_seconds * plan.pilot_targets / plan.distinct_targets
    assert float(words[2]) == pytest.approx(measured, abs=0.006)
    scaled = cohortsql.estimate(frame, prediction="y", similarity=similarity, interactions=True, bootstrap=80, seed=1)
    values = scaled.estimated_seconds - scaled.second_pass_seconds  # the replicates scale the values, not the pass
    assert scaled.scale > 1 and values >= 0 and "in all; the values about" in str(scaled)
    asked = []
    original = estimate_module.local_batches
    monkeypatch.setattr(
        estimate_module,
        "local_batches",
        lambda *arguments, **keywords: asked.append(keywords.get("interactions")) or original(*arguments, **keywords),
    )
    cohortsql.estimate(frame, prediction="y", similarity=similarity, method="permutation", interactions=True, seed=1)
    assert asked == [True]


def test_a_scaled_down_pilot_may_time_every_target():
    """A dry run's pilot of fewer permutations (or replicates) than the run times more targets: the
    scale multiplies its timing's noise, and the pilot still costs a fraction of the run. Unscaled,
    it times at most half of the targets."""
    rng = np.random.default_rng(5)
    frame = pl.DataFrame({f"x{j}": rng.uniform(0, 3, 400) for j in range(3)}).with_columns(
        y=pl.Series(rng.normal(size=400))
    )
    similarity = {f"x{j}": "abs:1" for j in range(3)}
    exact = cohortsql.estimate(frame, prediction="y", similarity=similarity)
    assert exact.scale == 1 and exact.pilot_targets <= exact.distinct_targets // 2
    permutation = cohortsql.estimate(frame, prediction="y", similarity=similarity, method="permutation", seed=1)
    assert permutation.scale >= plans.SCALED_PILOT
    assert permutation.pilot_targets > permutation.distinct_targets // 2 >= exact.pilot_targets
