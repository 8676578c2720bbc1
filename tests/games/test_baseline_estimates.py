"""Estimates and progress of the games that call the model: `compare --dry-run` runs baseline and
all-baseline Shapley on their first targets and extrapolates, and a long model game says how long it
will take, with the remedy, before most of the work. Time is a clock the model moves (each row it
evaluates costs a microsecond), so that what is asserted is the arithmetic, not the machine's speed."""

import numpy as np
import polars as pl
import pytest
from sklearn.ensemble import GradientBoostingRegressor

import cohortsql
from cohortsql.run import pace

BOSTON = pl.read_parquet("examples/data/boston_predictions.parquet")
FEATURES = ["crim", "zn", "indus", "chas", "nox", "rm", "age", "dis"]


class ModelClock:
    """A clock that moves only when the model is called: `seconds_per_row` for each row it evaluates."""

    def __init__(self, seconds_per_row: float):
        self.now = 0.0
        self.rows = 0
        self.seconds_per_row = seconds_per_row

    def __call__(self) -> float:
        return self.now

    def charge(self, rows: int) -> None:
        self.rows += rows
        self.now += rows * self.seconds_per_row


@pytest.fixture(scope="module")
def boston():
    """Boston with a gradient-boosted regression of medv on eight of its predictors, as prediction."""
    inputs = BOSTON.select(FEATURES).to_numpy()
    model = GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=0).fit(inputs, BOSTON["medv"])
    return BOSTON.with_columns(prediction=model.predict(inputs)), model


def _timed(model, clock: ModelClock):
    def predict(frame: np.ndarray) -> np.ndarray:
        clock.charge(len(frame))
        return model.predict(frame)

    return predict


def test_a_dry_run_of_compare_measures_a_few_targets_and_lands_near_the_run(boston, monkeypatch):
    """Forty targets: the all-baseline game's 506 x 2^8 hybrid points a target are measured on two
    targets and then eight (the first pilot was quick), the baseline game's 2^8 on all forty, and the
    estimate of the two games lands within 1.5x of what the run then costs, while the dry run
    evaluates about a quarter of its rows."""
    data, model = boston
    clock = ModelClock(1e-6)
    monkeypatch.setattr(pace.time, "perf_counter", clock)  # the one time module: every timer reads the clock
    options = dict(prediction="prediction", similarity=FEATURES, model_input="numpy", sample=40, seed=1)
    plan = cohortsql.estimate_compare(data, model=_timed(model, clock), **options)
    baseline, all_baseline = plan.model_games
    assert (baseline.game, baseline.baselines, baseline.points_per_target) == ("baseline", 1, 1 << 8)
    assert (all_baseline.game, all_baseline.baselines, all_baseline.points_per_target) == (
        "all-baseline",
        506,
        506 << 8,
    )
    assert (
        all_baseline.pilot_targets == 8 and all_baseline.distinct_targets == 40
    )  # the second run repeats the first two
    assert plan.cohort.targets == 40 and plan.cohort.method == "exact"
    dry_rows, estimated = clock.rows, baseline.estimated_seconds + all_baseline.estimated_seconds
    clock.rows, before = 0, clock.now
    cohortsql.compare(data, model=_timed(model, clock), progress=False, **options)
    spent = clock.now - before
    assert dry_rows < clock.rows / 3
    assert spent / 1.5 < estimated < spent * 1.5
    assert "all-baseline: 40 distinct targets x 506 baselines, exact method" in str(plan)


def test_a_long_model_game_says_how_long_and_what_to_do(boston, monkeypatch, capsys):
    """At a second per thousand rows the twenty targets' all-baseline game takes about 40 min: after its first
    chunk of targets it says so on stderr with the remedy; the permutation method gives its bound."""
    data, model = boston
    clock = ModelClock(1e-3)
    monkeypatch.setattr(pace.time, "perf_counter", clock)
    options = dict(features=FEATURES, model_input="numpy", targets=20, seed=1, baseline="all", realistic=False)
    cohortsql.baseline_shapley(data, model=_timed(model, clock), progress=True, **options)
    notes = [line for line in capsys.readouterr().err.splitlines() if "to go" in line]
    assert len(notes) == 1 and "to go for 20 targets x 506 baselines x 256 hybrid points" in notes[0]
    assert "baseline_sample=" in notes[0] and notes[0].startswith("cohortsql: about ")
    cohortsql.baseline_shapley(
        data, model=_timed(model, clock), progress=True, method="permutation", max_permutations=2000, **options
    )
    notes = [line for line in capsys.readouterr().err.splitlines() if "to go" in line]
    assert len(notes) == 1 and notes[0].startswith("cohortsql: at most about ") and "x 2,000 permutations" in notes[0]


def test_a_model_games_plan_never_measures_more_targets_than_there_are(boston):
    """Two timed runs of the first targets (the second repeating the first's) are a measurement of the
    larger run's targets: twenty targets once read "measured on 36 of 20 targets"."""
    data, model = boston
    options = dict(prediction="prediction", similarity=FEATURES, model_input="numpy", sample=20, seed=1)
    plan = cohortsql.estimate_compare(data, model=model.predict, **options)
    for game in plan.model_games:
        assert game.pilot_targets <= game.distinct_targets
        assert f"measured on {game.pilot_targets:,} of {game.distinct_targets:,} targets" in str(game)
