"""The cohort variance game, the game with a new sum (the cohorts' sums of w y^2): its values by every
method, path, engine and surface against brute-force evaluations of its definition
v_V(t, u) = Var_{C_{t,u}}(y) - Var(y), with each cohort found row by row."""

import itertools

import numpy as np
import polars as pl
import pytest
import reference
from draws import draws
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli.app import app
from cohortsql.games.base import Cohorts, Game

SIMILARITY = {"zip": "exact", "age": "abs:6", "sex": "exact"}
KINDS = [reference.exact(), reference.absolute(6), reference.exact()]
BINNED = {"zip": "exact", "age": "bins:3", "sex": "exact"}
BINNED_KINDS = [reference.exact(), reference.bins(3), reference.exact()]


def records(seed: int, rows: int = 24, offset: float = 0.0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    zip_code, age = rng.integers(0, 3, rows), rng.integers(20, 60, rows)
    return pl.DataFrame(
        {
            "id": np.arange(rows),
            "zip": zip_code,
            "age": age,
            "sex": rng.choice(["f", "m"], rows),
            "score": offset + zip_code + age / 20 + rng.normal(scale=0.5, size=rows),
            "w": rng.integers(1, 4, rows).astype(float),
        }
    )


def variance(y: np.ndarray, w: np.ndarray) -> float:
    mean = np.average(y, weights=w)
    return float(np.average((y - mean) ** 2, weights=w))


def variance_values(data: pl.DataFrame, kinds, t: int, weights: np.ndarray | None = None) -> dict:
    """v_V(t, u) for every set u of the features of `kinds` (the data's zip, age, sex), cohorts found row by row."""
    columns = [data[name].to_list() for name in ("zip", "age", "sex")]
    y = data["score"].to_numpy()
    w = np.ones(len(y)) if weights is None else weights
    tests = [kind(column) for kind, column in zip(kinds, columns)]
    value = {}
    for size in range(4):
        for u in itertools.combinations(range(3), size):
            cohort = [
                i for i in range(len(y)) if all(reference.similar(tests[j], columns[j][i], columns[j][t]) for j in u)
            ]
            value[frozenset(u)] = variance(y[cohort], w[cohort]) - variance(y, w)
    return value


def variance_game(data: pl.DataFrame, **options):
    """`game_shapley` of the cohort variance game of the records' score (their kinds and ids unless given)."""
    options = {"similarity": SIMILARITY, "id": "id", **options}
    return cohortsql.game_shapley(data, game="cohort-variance", prediction="score", **options)


@pytest.mark.parametrize("path, weighted", [("pairwise", False), ("pairwise", True), ("grouping_sets", False)])
def test_cohort_variance_values_equal_the_definition(engine, path, weighted):
    data = records(3, offset=1e6)  # scores near 10^6: the squares are summed about a pilot, not about 0
    similarity, kinds = (BINNED, BINNED_KINDS) if path == "grouping_sets" else (SIMILARITY, KINDS)
    result = variance_game(
        data,
        similarity=similarity,
        id="id",
        path=path,
        **({"weight": "w"} if weighted else {}),
        **engine.options,
    )
    weights = data["w"].to_numpy() if weighted else None
    for t in range(data.height):
        value = variance_values(data, kinds, t, weights)
        np.testing.assert_allclose(result.shapley[t], reference.shapley(value, 3), atol=1e-9)
        assert result.value[t] == pytest.approx(value[frozenset(range(3))], abs=1e-9)
    assert result.path == path and result.method == "exact" and result.game == "cohort-variance"
    assert result.settings["game"] == "cohort-variance" and result.settings["prediction"] == "score"


def test_permutations_of_two_players_are_the_exact_values_and_every_estimate_adds_up():
    data = records(5)
    two = {"zip": "exact", "age": "abs:6"}
    exact = variance_game(data, similarity=two, id="id")
    drawn = variance_game(data, similarity=two, id="id", method="permutation", seed=1)
    np.testing.assert_allclose(drawn.shapley, exact.shapley, atol=1e-12)  # an antithetic pair is both orders
    in_groups = {"groups": {"place": ["zip", "age"]}, "similarity": SIMILARITY, "id": "id"}
    grouped = variance_game(data, **in_groups)
    drawn_in_groups = variance_game(data, method="permutation", seed=1, **in_groups)
    assert drawn_in_groups.features == ("place", "sex")
    np.testing.assert_allclose(drawn_in_groups.shapley, grouped.shapley, atol=1e-12)
    wide = variance_game(data, method="permutation", max_permutations=400, seed=2)
    assert wide.method == "permutation" and (wide.permutations == 400).all() and wide.settings["seed"] == 2
    np.testing.assert_allclose(wide.shapley.sum(axis=1), wide.value, atol=1e-12)  # each permutation adds up
    for t in range(data.height):
        value = variance_values(data, KINDS, t)
        assert wide.value[t] == pytest.approx(value[frozenset(range(3))], abs=1e-12)
        truth = reference.shapley(value, 3)
        assert np.all(np.abs(wide.shapley[t] - truth) <= 5 * wide.shapley_se[t] + 1e-12)
    assert "shapley_se" in wide.local.columns


def test_permutations_stop_at_the_tolerance():
    data = records(6)
    result = variance_game(data, method="permutation", tolerance=1e9, seed=3)
    assert (result.permutations == 16).all()  # MIN_PAIRS antithetic pairs, then the first check stops


def test_bootstrap_intervals_are_the_reweighted_runs_percentiles(engine):
    data = records(7)
    result = variance_game(data, weight="w", bootstrap=4, confidence=0.5, seed=9, **engine.options)
    drawn = draws(engine, range(data.height), range(1, 5), seed=9)
    replicates = np.array(
        [
            [
                reference.shapley(variance_values(data, KINDS, t, data["w"].to_numpy() * drawn[:, b]), 3)
                for t in range(data.height)
            ]
            for b in range(4)
        ]
    )
    low, high = np.quantile(replicates, [0.25, 0.75], axis=0)
    np.testing.assert_allclose(result.shapley_ci_low, low, atol=1e-9)
    np.testing.assert_allclose(result.shapley_ci_high, high, atol=1e-9)
    assert {"shapley_ci_low", "shapley_ci_high"} <= set(result.local.columns)


def test_interactions_owen_values_and_groups_equal_their_definitions():
    data = records(8)
    result = variance_game(data, interactions=True)
    grouped = variance_game(
        data,
        groups={"place": ["zip", "age"]},
        group_values="owen",
    )
    assert grouped.features == ("place", "sex")
    for t in range(data.height):
        value = variance_values(data, KINDS, t)
        np.testing.assert_allclose(result.interactions[t], reference.interactions(value, 3), atol=1e-12)
        np.testing.assert_allclose(grouped.owen[t], reference.owen_values(value, [[0, 1], [2]]), atol=1e-12)
        players = {
            u: value[frozenset(j for player in u for j in ([0, 1] if player == 0 else [2]))]
            for u in value
            if max(u, default=0) < 2
        }
        np.testing.assert_allclose(grouped.shapley[t], reference.shapley(players, 2), atol=1e-12)
    assert result.interaction_table.height == data.height * 9


def test_every_surface_gives_the_same_values(tmp_path):
    data = records(9)
    direct = variance_game(data)
    framed = data.lazy().cohort.game(game="cohort-variance", prediction="score", similarity=SIMILARITY, id="id")
    np.testing.assert_array_equal(framed.shapley, direct.shapley)
    path, out = tmp_path / "records.parquet", tmp_path / "spread.parquet"
    data.write_parquet(path)
    command = ["game", str(path), "--game", "cohort-variance"]
    command += [
        "--prediction",
        "score",
        "--id",
        "id",
        "--features",
        "zip,sex",
        "--similar",
        "age=abs:6",
        "--out",
        str(out),
    ]
    printed = CliRunner().invoke(app, command)
    assert printed.exit_code == 0, printed.output
    assert "cohort-variance: 24 targets x 3 features" in printed.output
    table = pl.read_parquet(out).sort("id", "feature")
    expected = direct.local.sort("id", "feature")
    np.testing.assert_allclose(table["shapley"].to_numpy(), expected["shapley"].to_numpy(), atol=1e-12)


class Spread(Game):
    """A caller's own game: the cohort's standard deviation less the table's (reads y and y^2)."""

    name = "spread"
    powers = (1, 2)

    def values(self, cohorts: Cohorts) -> np.ndarray:
        first, mean = cohorts.value(0, 1)
        second, square = cohorts.value(0, 2)
        whole = square - mean**2
        return np.sqrt(np.maximum(second - first * (first + 2 * mean) + whole, 0)) - np.sqrt(whole)


def test_a_callers_own_game_runs_without_a_line_of_the_package(engine):
    data = records(10)
    result = cohortsql.game_shapley(
        data, game=Spread(), prediction="score", similarity=SIMILARITY, id="id", **engine.options
    )
    whole = np.sqrt(variance(data["score"].to_numpy(), np.ones(data.height)))
    for t in range(data.height):
        value = {u: np.sqrt(v + whole**2) - whole for u, v in variance_values(data, KINDS, t).items()}
        np.testing.assert_allclose(result.shapley[t], reference.shapley(value, 3), atol=1e-10)
    assert result.game == "spread"


def test_kanonymity_gains_permutations_bootstrap_the_frame_and_the_command_line(tmp_path):
    data = records(11)
    exact = cohortsql.kanonymity_shapley(data, similarity=SIMILARITY, id="id", k=3)
    drawn = cohortsql.kanonymity_shapley(data, similarity=SIMILARITY, id="id", k=3, method="permutation", seed=4)
    np.testing.assert_allclose(drawn.shapley.sum(axis=1), exact.value, atol=1e-12)
    assert np.all(np.abs(drawn.shapley - exact.shapley) <= 5 * drawn.shapley_se + 1e-12)
    framed = data.cohort.kanonymity(similarity=SIMILARITY, id="id", k=3, bootstrap=8, seed=5)
    np.testing.assert_array_equal(framed.shapley, exact.shapley)
    assert np.all(framed.shapley_ci_low <= framed.shapley_ci_high)
    path = tmp_path / "records.parquet"
    data.write_parquet(path)
    command = ["game", str(path), "--game", "k-anonymity:3", "--id", "id"]
    command += ["--features", "zip,sex", "--similar", "age=abs:6", "--method", "permutation", "--seed", "4"]
    printed = CliRunner().invoke(app, command)
    assert printed.exit_code == 0, printed.output
    assert printed.output.startswith("k-anonymity (k = 3): 24 targets x 3 features")


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"game": "cohort-variance"}, "the cohort-variance game explains a column: name it with prediction="),
        ({"game": "uniqueness", "prediction": "score"}, "reads the cohorts' sizes alone: leave out prediction='score'"),
        ({"game": "cohort-variance", "prediction": ["score", "w"]}, "explains one column"),
        ({"game": "gini"}, "unknown game 'gini': the games are uniqueness, k-anonymity, cohort-variance"),
        ({"game": "k-anonymity:three"}, "k-anonymity:K takes a whole number of rows K >= 1, got 'three'"),
        ({"game": "k-anonymity:0"}, "k must be a whole number of rows >= 1, got 0"),
        ({"game": "uniqueness:2"}, "the uniqueness game takes no parameter, got '2'"),
        ({"game": 3}, "game must be one of uniqueness, k-anonymity, cohort-variance"),
        (
            {"game": "cohort-variance", "prediction": "score", "method": "permutation", "bootstrap": 5},
            "bootstrap intervals need method='exact'",
        ),
        (
            {"game": "cohort-variance", "prediction": "score", "method": "permutation", "interactions": True},
            "interactions=True for this game needs method='exact'",
        ),
        ({"game": "cohort-variance", "prediction": "score", "method": "integrated"}, "takes 'exact', 'permutation'"),
        ({"game": "cohort-variance", "prediction": "score", "anchored": 2}, "unknown argument 'anchored'"),
    ],
)
def test_a_bad_request_is_one_error_that_says_what_to_do(arguments, message):
    with pytest.raises(
        cohortsql.CohortError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
    ):
        cohortsql.game_shapley(records(12), similarity=SIMILARITY, id="id", **arguments)


@pytest.mark.parametrize("scale", [1e-120, 1e100])
def test_scales_whose_squares_fit_a_double_give_the_definition(scale):
    data = records(13).with_columns(score=pl.col("score") * scale)
    result = variance_game(data)
    for t in range(0, data.height, 5):
        truth = reference.shapley(variance_values(data, KINDS, t), 3)
        np.testing.assert_allclose(result.shapley[t], truth, rtol=1e-9, atol=1e-12 * scale**2)


@pytest.mark.parametrize(
    "scale, message",
    [
        (
            1e-170,
            r"varies by about \de-170: its squares .* underflow a DOUBLE and lose their digits; multiply 'score' by 1e\+170",
        ),
        (
            1e-300,
            r"varies by about \de-300: its squares .* underflow a DOUBLE and lose their digits; multiply 'score' by 1e\+300",
        ),
        (1e160, r"reaches about \de\+160: its sums of squares overflow a DOUBLE; multiply 'score' by 1e-160"),
        (1e300, r"reaches about \de\+300: its sums of squares overflow a DOUBLE; multiply 'score' by 1e-300"),
    ],
)
def test_scales_whose_squares_do_not_fit_a_double_are_refused_with_the_factor(scale, message):
    """The variance game reads squares; cohort Shapley computes them (squared values, effects): every
    game that explains the column refuses it alike, naming the column and the factor that rescales it."""
    data = records(14).with_columns(score=pl.col("score") * scale)
    with pytest.raises(cohortsql.CohortError, match=message):
        variance_game(data)
    with pytest.raises(cohortsql.CohortError, match=message):
        cohortsql.cohort_shapley(data, prediction="score", similarity=SIMILARITY, id="id")
    with pytest.raises(cohortsql.CohortError, match=message):
        cohortsql.shapley_effects(data, prediction="score", similarity=SIMILARITY, id="id", method="integrated")


@pytest.mark.parametrize("scale", [1e160, 1e300])
def test_squares_beyond_a_double_are_refused_on_every_engine(scale, engine, monkeypatch):
    """Where a sum that overflows gives infinity (DuckDB, Spark), the largest |y| is read beside the
    statistics and the pilot reads one row, not a second scan of every row (a Spark job of its own);
    where it stops the query (PostgreSQL), it is read with the pilot, before any sum of squares. Either
    way the column is refused with the factor that rescales it, not with the engine's overflow."""
    from cohortsql.engines.base import Engine

    pilots: list[str] = []
    engine_classes: list[type] = [Engine]  # the base's read serves DuckDB's and ADBC's
    if engine.name == "spark":
        from cohortsql.engines.spark import SparkEngine

        engine_classes.append(SparkEngine)
    for engine_class in engine_classes:

        def spied(self, select, *, context, _original=engine_class.fetch_one_row):
            if "AS pilot" in select:
                pilots.append(select)
            return _original(self, select, context=context)

        monkeypatch.setattr(engine_class, "fetch_one_row", spied)
    data = records(14).with_columns(score=pl.col("score") * scale)
    exponent = f"{scale:.0e}".split("e+")[1]
    with pytest.raises(cohortsql.CohortError, match=rf"reaches about \de\+{exponent}: its sums of squares overflow"):
        cohortsql.cohort_shapley(data, prediction="score", similarity=SIMILARITY, id="id", **engine.options)
    assert pilots and all(("every_row" in sql) == (engine.name == "adbc") for sql in pilots)


def test_bootstrap_intervals_are_the_same_on_both_paths():
    data = records(15)
    runs = [
        variance_game(
            data,
            similarity=BINNED,
            id="id",
            bootstrap=12,
            seed=4,
            path=path,
        )
        for path in ("grouping_sets", "pairwise")
    ]
    assert [run.path for run in runs] == ["grouping_sets", "pairwise"]
    np.testing.assert_allclose(runs[0].shapley_ci_low, runs[1].shapley_ci_low, atol=1e-12)
    np.testing.assert_allclose(runs[0].shapley_ci_high, runs[1].shapley_ci_high, atol=1e-12)


def test_the_uniqueness_command_writes_the_tables_its_new_options_ask_for(tmp_path):
    data = records(16)
    path, out = tmp_path / "records.parquet", tmp_path / "privacy.parquet"
    data.write_parquet(path)
    command = ["uniqueness", str(path), "--id", "id", "--features", "zip,sex", "--similar", "age=abs:6"]
    command += ["--interactions", "--bootstrap", "8", "--seed", "3", "--out", str(out)]
    printed = CliRunner().invoke(app, command)
    assert printed.exit_code == 0, printed.output
    direct = cohortsql.uniqueness_shapley(data, similarity=SIMILARITY, id="id", interactions=True, bootstrap=8, seed=3)
    written = pl.read_parquet(tmp_path / "privacy_interactions.parquet").sort("id", "feature", "other")
    expected = direct.interaction_table.sort("id", "feature", "other")
    np.testing.assert_allclose(written["interaction"].to_numpy(), expected["interaction"].to_numpy(), atol=1e-12)
    assert {"shapley_ci_low", "shapley_ci_high"} <= set(pl.read_parquet(out).columns)
