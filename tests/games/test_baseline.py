"""Baseline and all-baseline Shapley against the definitions, shap, and cohort Shapley (paper, Section 5)."""

import itertools

import numpy as np
import polars as pl
import pytest
import reference

import cohortsql
from cohortsql.games.baseline.values import baseline_shapley_values, realistic_parts
from cohortsql.numeric.shapley import shapley_values
from cohortsql.run import baseline_exact as baseline_run


def table(seed: int, rows: int = 14) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "id": np.arange(rows) * 10,
            "a": rng.integers(0, 3, rows),
            "b": np.round(rng.uniform(0, 10, rows), 1),
            "c": rng.choice(["x", "y"], rows),
            "d": rng.normal(size=rows),
        }
    )


def linear_with_interaction(frame) -> np.ndarray:
    """A model with an interaction and a text column, reading a pandas frame."""
    return (
        frame["a"].to_numpy() * frame["b"].to_numpy()
        + 2.0 * (frame["c"].to_numpy() == "x")
        - np.sin(frame["d"].to_numpy())
    )


def row_model(values: list) -> float:
    a, b, c, d = values
    return a * b + 2.0 * (c == "x") - np.sin(d)


KINDS = {"a": "exact", "b": "abs:1.5", "c": "exact", "d": "range:0.2"}
REFERENCE_KINDS = [reference.exact(), reference.absolute(1.5), reference.exact(), reference.range_window(0.2)]


def rows_of(frame: pl.DataFrame) -> list[list]:
    return [list(row) for row in frame.select(list(KINDS)).iter_rows()]


def baseline_points(data: pl.DataFrame, baseline: str, chosen: list[int] | None = None) -> list[list]:
    """The baselines by their definition: the mean point (each number's mean, the text's most frequent
    value), the chosen rows, or every row."""
    if baseline == "mean":
        counts = data["c"].value_counts().sort(["count", "c"], descending=[True, False])
        return [[data["a"].mean(), data["b"].mean(), counts["c"][0], data["d"].mean()]]
    rows = rows_of(data)
    return [rows[i] for i in chosen] if chosen else rows


@pytest.mark.parametrize("baseline, rows", [("mean", 14), ("all", 14), ("ids", 14), ("mean", 150)])
def test_baseline_shapley_equals_the_definition(engine, baseline, rows):
    """150 rows: realism's bitsets span several words (63 subject rows each)."""
    data = table(1, rows)
    columns = [data[name].to_list() for name in KINDS]
    targets = [0, 30, 70, 130]
    chosen = [1, 4, 7, 9] if baseline == "ids" else None
    result = cohortsql.baseline_shapley(
        data,
        model=linear_with_interaction,
        features=KINDS,
        baseline=[10 * row for row in chosen] if chosen else baseline,
        realistic=True,
        id="id",
        targets=targets,
        progress=False,
        **engine.options,
    )
    bases = baseline_points(data, baseline, chosen)
    expected = reference.baseline_shapley(
        columns, REFERENCE_KINDS, row_model, [rows_of(data)[t // 10] for t in targets], bases
    )
    np.testing.assert_allclose(result.shapley, expected["phi"], atol=1e-12)
    np.testing.assert_allclose(result.shapley_squared, expected["phi2"], atol=1e-12)
    np.testing.assert_allclose(result.shapley_realistic, expected["real"], atol=1e-12)
    np.testing.assert_allclose(result.shapley_squared_realistic, expected["real2"], atol=1e-12)
    realistic = result.totals["realistic_points"].to_numpy()
    assert realistic.sum() > 0 and (realistic < result.totals["hybrid_points"].to_numpy()).any()
    assert result.game == ("all-baseline" if baseline == "all" else "baseline")
    assert result.baselines == len(bases)


def test_efficiency_and_the_split_hold_exactly():
    data = table(2, rows=40)
    result = cohortsql.baseline_shapley(
        data, model=linear_with_interaction, features=KINDS, baseline="all", realistic=True, id="id", progress=False
    )
    totals = result.totals
    np.testing.assert_allclose(result.shapley.sum(axis=1), totals["value"].to_numpy(), atol=1e-12)
    np.testing.assert_allclose(result.shapley_squared.sum(axis=1), totals["value_squared"].to_numpy(), atol=1e-12)
    predictions = linear_with_interaction(data.to_pandas())
    np.testing.assert_allclose(totals["prediction"], predictions, atol=1e-12)
    np.testing.assert_allclose(totals["baseline_prediction"], predictions.mean(), atol=1e-12)
    np.testing.assert_allclose(
        totals["value_squared"], ((predictions[:, None] - predictions[None, :]) ** 2).mean(axis=1), atol=1e-12
    )
    local = result.local
    np.testing.assert_allclose(local["shapley_realistic"] + local["shapley_unrealistic"], local["shapley"], atol=1e-15)
    assert totals["realistic_points"].max() <= totals["hybrid_points"].min() == 40 * 16
    # Every baseline and target is itself a subject: those two hybrid points are always realistic.
    assert totals["realistic_points"].min() >= 2 * 40


def test_with_every_point_realistic_the_realistic_part_is_the_whole():
    rng = np.random.default_rng(3)
    games = rng.normal(size=(5, 7, 16))
    games[..., 0] = 0.0
    real, real2 = realistic_parts(games, np.ones(games.shape, dtype=bool))
    np.testing.assert_allclose(real, shapley_values(games).mean(axis=1), atol=1e-12)
    np.testing.assert_allclose(real2, shapley_values(games**2).mean(axis=1), atol=1e-12)
    values = baseline_shapley_values(games, np.zeros(games.shape, dtype=bool))
    assert not values.realistic.any() and not values.realistic_squared.any()
    np.testing.assert_allclose(values.shapley, real, atol=1e-12)


def test_a_feature_the_model_ignores_gets_nothing():
    data = table(4, rows=30)
    for baseline in ("mean", "all"):
        result = cohortsql.baseline_shapley(
            data,
            model=lambda frame: frame["a"].to_numpy() * frame["b"].to_numpy(),
            features=["a", "b", "c", "d"],
            baseline=baseline,
            progress=False,
        )
        # A dummy player: zero up to the rounding of sums of 2^d game values (the values are of order 10).
        assert np.abs(result.shapley[:, 2:]).max() < 1e-12
        assert np.abs(result.shapley_squared[:, 2:]).max() < 1e-12
        assert np.abs(result.shapley[:, :2]).max() > 1


def test_all_baseline_and_cohort_shapley_have_the_same_totals():
    """With a prediction column f(x) and exact similarity, the full cohort's mean is f(x_t), so
    both methods split f(x_t) - mean f (paper, Section 5)."""
    data = table(5, rows=60).with_columns(pl.col("b").round(0))
    data = data.with_columns(prediction=pl.Series(linear_with_interaction(data.to_pandas())))
    features = {"a": "exact", "b": "exact", "c": "exact"}

    def model(frame):
        return frame["a"].to_numpy() * frame["b"].to_numpy() + 2.0 * (frame["c"].to_numpy() == "x")

    data = data.with_columns(prediction=pl.Series(model(data.to_pandas())))
    cohort = cohortsql.cohort_shapley(data, prediction="prediction", similarity=features, progress=False)
    all_baseline = cohortsql.baseline_shapley(data, model=model, features=features, baseline="all", progress=False)
    np.testing.assert_allclose(cohort.shapley.sum(axis=1), all_baseline.shapley.sum(axis=1), atol=1e-12)


def test_all_baseline_shapley_equals_shaps_exact_explainer_with_the_whole_table():
    shap = pytest.importorskip("shap")
    rng = np.random.default_rng(6)
    x = rng.normal(size=(25, 4))

    def model(values):
        values = np.asarray(values)
        return values[:, 0] * values[:, 1] + np.exp(values[:, 2] / 3) - values[:, 3] ** 2

    data = pl.DataFrame({f"x{j}": x[:, j] for j in range(4)})
    result = cohortsql.baseline_shapley(
        data, model=model, features=list(data.columns), baseline="all", model_input="numpy", progress=False
    )
    masker = shap.maskers.Independent(x, max_samples=len(x))
    explained = shap.explainers.Exact(model, masker)(x)
    np.testing.assert_allclose(result.shapley, explained.values, atol=1e-10)


@pytest.mark.parametrize("model_input", ["pandas", "polars", "numpy"])
def test_model_inputs_and_outputs(model_input):
    data = table(7, rows=20)
    numeric = ["a", "b", "d"]

    class Classifier:
        def predict_proba(self, rows):
            frame = pl.DataFrame(np.asarray(rows), schema=numeric) if model_input == "numpy" else pl.DataFrame(rows)
            score = 1 / (1 + np.exp(-(frame["a"] - frame["b"] / 5 + frame["d"]).to_numpy()))
            return np.column_stack([1 - score, score])

    result = cohortsql.baseline_shapley(
        data,
        model=Classifier(),
        model_output="probability",
        model_input=model_input,
        features=numeric,
        progress=False,
    )
    frame = data.select(numeric)
    expected = 1 / (1 + np.exp(-(frame["a"] - frame["b"] / 5 + frame["d"]).to_numpy()))
    np.testing.assert_allclose(result.prediction, expected, atol=1e-12)


def test_chunks_of_targets_and_baselines_give_the_same_values(monkeypatch):
    data = table(8, rows=50)
    options = dict(model=linear_with_interaction, features=KINDS, baseline="all", realistic=True, progress=False)
    whole = cohortsql.baseline_shapley(data, **options)
    calls = []

    def counted(frame):
        calls.append(len(frame))
        return linear_with_interaction(frame)

    monkeypatch.setattr(baseline_run, "HYBRID_ROWS", 16 * 7)
    chunked = cohortsql.baseline_shapley(data, **{**options, "model": counted, "batch_rows": 33})
    for name in ("shapley", "shapley_squared", "shapley_realistic", "shapley_squared_realistic", "value_squared"):
        np.testing.assert_allclose(getattr(chunked, name), getattr(whole, name), atol=1e-12)
    assert max(calls) <= 33 and len(calls) > 50
    np.testing.assert_array_equal(chunked.realistic_points, whole.realistic_points)


def test_identical_targets_are_computed_once_and_the_model_sees_each_hybrid_once():
    data = pl.concat([table(9, rows=6)] * 3).with_row_index("row")
    seen = []

    def model(frame):
        seen.append(frame)
        return linear_with_interaction(frame)

    result = cohortsql.baseline_shapley(data, model=model, features=KINDS, id="row", progress=False)
    np.testing.assert_allclose(result.shapley[:6], result.shapley[6:12], atol=0)
    rows = pl.concat([pl.from_pandas(frame) for frame in seen])
    assert rows.height == rows.unique().height <= 6 * 16


def test_result_tables(tmp_path):
    data = table(10, rows=20)
    result = cohortsql.baseline_shapley(
        data, model=linear_with_interaction, features=KINDS, realistic=True, id="id", targets="a = 1", progress=False
    )
    assert result.ids.to_list() == data.filter(pl.col("a") == 1)["id"].to_list()
    assert result.local.columns[:6] == ["id", "feature", "feature_value", "prediction", "shapley", "shapley_squared"]
    wide = result.wide("shapley_realistic")
    np.testing.assert_allclose(wide.drop("id").to_numpy(), result.shapley_realistic)
    groups = result.by("c")
    assert set(groups["c"]) <= {"x", "y"} and "shapley_realistic_se" in groups.columns
    assert result.global_["share"].sum() == pytest.approx(1.0)
    with pytest.raises(cohortsql.CohortError, match="wide"):
        result.wide("cohort_mean")
    path = tmp_path / "bs.parquet"
    result.write_parquet(path)
    assert pl.read_parquet(path).equals(result.local)
    assert "baseline" in repr(result) and "realistic" in repr(result)


def bad_models():
    yield "raised ValueError", lambda frame: (_ for _ in ()).throw(ValueError("broken"))
    yield "shape", lambda frame: np.zeros(3)
    yield "nan", lambda frame: np.full(len(frame), np.nan)
    yield "not numbers", lambda frame: np.array(["high"] * len(frame))
    yield "complex numbers", lambda frame: np.ones(len(frame)) + 0.5j


@pytest.mark.parametrize(("message", "model"), list(bad_models()))
def test_a_bad_model_is_one_named_error(message, model):
    with pytest.raises(cohortsql.CohortError, match=message):
        cohortsql.baseline_shapley(table(11), model=model, features=["a", "b"], progress=False)


def test_bad_arguments_are_named_errors():
    data = table(12)
    model = linear_with_interaction
    with pytest.raises(cohortsql.CohortError, match="'nope'"):
        cohortsql.baseline_shapley(data, model=model, features=["a", "nope"])
    with pytest.raises(cohortsql.CohortError, match="baseline ids not found.*999"):
        cohortsql.baseline_shapley(data, model=model, features=["a"], id="id", baseline=[10, 999])
    with pytest.raises(cohortsql.CohortError, match="baseline"):
        cohortsql.baseline_shapley(data, model=model, features=["a"], baseline="median")
    with pytest.raises(cohortsql.CohortError, match="baseline_sample"):
        cohortsql.baseline_shapley(data, model=model, features=["a"], baseline_sample=3)
    with pytest.raises(cohortsql.CohortError, match="model"):
        cohortsql.baseline_shapley(data, model=42, features=["a"])
    with pytest.raises(cohortsql.CohortError, match="predict_proba"):
        cohortsql.baseline_shapley(data, model=model, features=["a"], model_output="probability")
    with pytest.raises(cohortsql.CohortError, match="model_input"):
        cohortsql.baseline_shapley(data, model=model, features=["a"], model_input="arrow")
    with pytest.raises(cohortsql.CohortError, match="numeric"):
        cohortsql.baseline_shapley(data, model=model, features=["a", "c"], model_input="numpy")


def test_sampled_baselines_are_reproducible():
    data = table(13, rows=40)
    options = dict(model=linear_with_interaction, features=list(KINDS), baseline="all", progress=False, id="id")
    first = cohortsql.baseline_shapley(data, **options, baseline_sample=10, seed=4)
    again = cohortsql.baseline_shapley(data, **options, baseline_sample=10, seed=4)
    assert first.baselines == 10
    np.testing.assert_array_equal(first.shapley, again.shapley)
    assert first.settings["seed"] == 4


def test_compare_puts_the_three_methods_side_by_side(tmp_path):
    data = table(14, rows=30)
    data = data.with_columns(prediction=pl.Series(linear_with_interaction(data.to_pandas())))
    comparison = cohortsql.compare(
        data, model=linear_with_interaction, prediction="prediction", similarity=KINDS, id="id", progress=False
    )
    cohort = cohortsql.cohort_shapley(data, prediction="prediction", similarity=KINDS, id="id", progress=False)
    all_baseline = cohortsql.baseline_shapley(
        data, model=linear_with_interaction, features=KINDS, baseline="all", realistic=True, id="id", progress=False
    )
    np.testing.assert_allclose(comparison.values("CS"), cohort.shapley, atol=1e-12)
    np.testing.assert_allclose(comparison.values("ABS2"), all_baseline.shapley_squared, atol=1e-12)
    assert comparison.realistic("CS") is None
    np.testing.assert_allclose(comparison.realistic("ABS"), all_baseline.shapley_realistic, atol=1e-12)
    local = comparison.local
    assert local["method"].unique(maintain_order=True).to_list() == ["CS", "CS2", "BS", "BS2", "ABS", "ABS2"]
    assert local.height == 6 * 30 * 4
    assert local.filter(pl.col("method") == "CS")["realistic"].null_count() == 30 * 4
    # The global CS2 over every row is the Shapley effects.
    effects = cohortsql.shapley_effects(data, prediction="prediction", similarity=KINDS, id="id", progress=False)
    cs2 = comparison.global_.filter(pl.col("method") == "CS2")
    expected = dict(zip(effects.effects["feature"], effects.effects["shapley_effect"]))
    np.testing.assert_allclose(cs2["importance"], [expected[name] for name in KINDS], atol=1e-12)
    totals = comparison.totals
    np.testing.assert_allclose(totals["abs"], totals["model"] - totals["model"].mean(), atol=1e-12)
    assert {"bs_realistic_share", "abs_realistic_share"} <= set(totals.columns)
    comparison.write_parquet(tmp_path / "compare.parquet")
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "compare.parquet",
        "compare_global.parquet",
        "compare_totals.parquet",
    ]
    assert "ABS" in repr(comparison)


def test_compare_draws_one_sample_of_targets_for_every_method():
    data = table(15, rows=40)
    data = data.with_columns(prediction=pl.Series(linear_with_interaction(data.to_pandas())))
    comparison = cohortsql.compare(
        data,
        model=linear_with_interaction,
        prediction="prediction",
        similarity=KINDS,
        sample=7,
        baseline_sample=12,
        realistic=False,
        progress=False,
    )
    ids = comparison.cohort.ids.to_list()
    assert len(ids) == 7
    assert comparison.baseline.ids.to_list() == ids == comparison.all_baseline.ids.to_list()
    assert comparison.all_baseline.baselines == 12
    assert comparison.local["realistic"].null_count() == comparison.local.height


def interacting(rows) -> np.ndarray:
    a = np.asarray(rows)
    return a[:, 0] * a[:, 1] * a[:, 4] + np.sin(a[:, 2] * a[:, 3]) + a[:, 5:].sum(axis=1)


@pytest.mark.parametrize("baseline", ["mean", "all"])
def test_permutation_estimates_lie_within_three_standard_errors_of_exact(baseline):
    rng = np.random.default_rng(16)
    x = rng.normal(size=(150, 8))
    data = pl.DataFrame({f"x{j}": np.round(x[:, j], 1) for j in range(8)})
    options = dict(
        model=interacting,
        model_input="numpy",
        features={name: "abs:0.5" for name in data.columns},
        baseline=baseline,
        realistic=True,
        progress=False,
    )
    exact = cohortsql.baseline_shapley(data, **options)
    estimated = cohortsql.baseline_shapley(data, **options, method="permutation", max_permutations=400, seed=3)
    for name, error in (("shapley", "shapley_se"), ("shapley_squared", "shapley_squared_se")):
        inside = np.abs(getattr(estimated, name) - getattr(exact, name)) <= 3 * getattr(estimated, error) + 1e-12
        assert inside.mean() >= 0.99, name
    # The realistic parts are estimated from the same paths: close, without standard errors of their own.
    assert np.abs(estimated.shapley_realistic - exact.shapley_realistic).mean() < 0.1
    # Totals are exact whatever the method.
    np.testing.assert_allclose(estimated.value_squared, exact.value_squared, atol=1e-12)
    np.testing.assert_allclose(estimated.totals["value"], exact.totals["value"], atol=1e-12)
    assert (estimated.permutations == 400).all() and estimated.method == "permutation"
    assert {"shapley_se", "shapley_squared_se"} <= set(estimated.local.columns)
    assert "permutations" in estimated.totals.columns
    if baseline == "mean":  # one baseline: every permutation's increments add up to the total
        np.testing.assert_allclose(estimated.shapley.sum(axis=1), estimated.totals["value"], atol=1e-12)


def test_permutation_stops_at_the_tolerance_and_auto_chooses_by_d():
    rng = np.random.default_rng(17)
    data = pl.DataFrame({f"x{j}": rng.normal(size=60) for j in range(14)})

    def additive(rows):
        return np.asarray(rows).sum(axis=1)

    options = dict(model=additive, model_input="numpy", features=list(data.columns), progress=False, seed=1)
    auto = cohortsql.baseline_shapley(data, **options, method="auto", tolerance=1e-9, max_permutations=1000)
    assert auto.method == "permutation"
    # An additive model has the same increment in every permutation: the standard errors are 0 at once.
    assert (auto.permutations == 16).all()
    exact_means = data.select(pl.all().mean()).to_numpy()[0]
    np.testing.assert_allclose(auto.shapley, data.to_numpy() - exact_means, atol=1e-12)
    small = cohortsql.baseline_shapley(data.select("x0", "x1"), **{**options, "features": ["x0", "x1"]}, method="auto")
    assert small.method == "exact"
    wide = pl.DataFrame({f"x{j}": rng.normal(size=5) for j in range(21)})
    with pytest.raises(cohortsql.CohortError, match="at most 20 features"):
        cohortsql.baseline_shapley(wide, **{**options, "features": list(wide.columns)}, method="exact")


def test_the_polars_namespace_has_the_comparison_methods():
    import inspect

    frame = table(18, rows=30)
    for method, function in (
        (frame.cohort.baseline, cohortsql.baseline_shapley),
        (frame.cohort.compare, cohortsql.compare),
        (frame.cohort.calibrate, cohortsql.calibrate),
    ):
        expected = {
            name: parameter.default
            for name, parameter in inspect.signature(function).parameters.items()
            if name not in ("data", "connection")
        }
        got = {name: parameter.default for name, parameter in inspect.signature(method).parameters.items()}
        assert got == expected, function.__name__
    direct = cohortsql.baseline_shapley(frame, model=linear_with_interaction, features=KINDS, progress=False)
    through = frame.lazy().cohort.baseline(model=linear_with_interaction, features=KINDS, progress=False)
    np.testing.assert_array_equal(direct.shapley, through.shapley)
    assert frame.cohort.calibrate(features=["a", "b"], runs=2, seed=1).rows == 30


def test_compare_by_permutations_for_every_method():
    data = table(19, rows=40)
    data = data.with_columns(prediction=pl.Series(linear_with_interaction(data.to_pandas())))
    options = dict(model=linear_with_interaction, prediction="prediction", similarity=KINDS, progress=False)
    exact = cohortsql.compare(data, **options, realistic=False)
    estimated = cohortsql.compare(data, **options, realistic=False, method="permutation", max_permutations=400)
    assert estimated.cohort.method == "permutation"
    assert estimated.baseline.method == estimated.all_baseline.method == "permutation"
    assert estimated.cohort.settings["seed"] == estimated.all_baseline.settings["seed"] is not None
    for method, result in (("CS", estimated.cohort), ("ABS", estimated.all_baseline)):
        error = result.shapley_se
        assert error is not None
        inside = np.abs(estimated.values(method) - exact.values(method)) <= 4 * error + 1e-9
        assert inside.mean() > 0.98, method


@pytest.mark.parametrize("copies", [1, 2])
def test_realism_counts_equal_a_direct_test_of_every_hybrid_point(engine, copies):
    """Several bitset words (300 subject rows, 63 per word) and selective windows: each target's
    realistic hybrid points are those with a subject row similar on every feature, tested directly.
    Two copies of every row: the distinct rows are numbered instead of every row."""
    rng = np.random.default_rng(3)
    rows = 300
    x = np.column_stack([rng.integers(0, 4, rows), np.round(rng.uniform(0, 10, rows), 1), rng.normal(size=rows)])
    x = np.tile(x, (copies, 1))
    data = pl.DataFrame({"a": x[:, 0].astype(np.int64), "b": x[:, 1], "c": x[:, 2]})
    kinds = {"a": "exact", "b": "abs:0.4", "c": "abs:0.15"}
    widths = np.array([0.0, 0.4, 0.15])
    targets = [0, 57, 130, 250, 299]
    result = cohortsql.baseline_shapley(
        data,
        model=lambda frame: frame["b"].to_numpy(),
        features=kinds,
        baseline="all",
        realistic=True,
        targets=targets,
        progress=False,
        **engine.options,
    )
    subsets = (np.arange(8)[:, None] >> np.arange(3) & 1).astype(bool)  # (2^d, d)
    expected = []
    for target in targets:
        points = np.where(subsets[None, :, :], x[target], x[:, None, :]).reshape(-1, 3)  # every baseline, subset
        similar = (np.abs(points[:, None, :] - x[None, :rows, :]) <= widths).all(axis=2)  # as the SQL compares
        expected.append(int(similar.any(axis=1).sum()))
    assert result.totals["realistic_points"].to_list() == expected
    assert 0 < min(expected) and max(expected) < result.hybrid_points  # realism decides something


def test_realism_beyond_its_memory_says_so_before_building_bitsets(monkeypatch):
    from cohortsql.games.baseline import realism

    monkeypatch.setattr(realism, "MAX_BITSET_BYTES", 1024)
    with pytest.raises(cohortsql.CohortError, match=r"testing realism against 300 subject rows for \d+ point"):
        cohortsql.baseline_shapley(
            table(2, 300), model=linear_with_interaction, features=KINDS, baseline="all", realistic=True, progress=False
        )


def test_compare_reads_the_data_once_and_explains_one_sample(engine, monkeypatch):
    """One session serves the three methods: the input is registered once (its statistics computed
    once), and CS, BS and ABS explain the same random sample of targets."""
    from cohortsql.engines import engine_class

    backend = engine_class(engine.name)
    registered = []
    original = backend.register_input

    def counting(self, data, *, positions):
        registered.append(data)
        return original(self, data, positions=positions)

    monkeypatch.setattr(backend, "register_input", counting)
    frame = table(21, rows=40).with_columns(prediction=pl.Series(linear_with_interaction(table(21, rows=40))))
    both = cohortsql.compare(
        frame,
        model=linear_with_interaction,
        prediction="prediction",
        similarity=KINDS,
        sample=12,
        seed=3,
        **engine.options,
    )
    assert len(registered) == 1
    ids = both.cohort.ids.to_list()
    assert len(ids) == 12 and both.baseline.ids.to_list() == ids == both.all_baseline.ids.to_list()
    alone = cohortsql.cohort_shapley(
        frame, prediction="prediction", similarity=KINDS, sample=12, seed=3, **engine.options
    )
    np.testing.assert_allclose(both.cohort.shapley, alone.shapley, atol=1e-12)


@pytest.fixture(scope="module")
def classifier():
    """A scikit-learn pipeline (one-hot text, scaling, logistic regression) and its table, whose
    `prediction` column holds the stored probabilities of class 1."""
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(23)
    frame = pl.DataFrame(
        {"age": rng.uniform(20, 70, 120).round(), "sex": rng.choice(["f", "m"], 120), "fare": rng.lognormal(3, 1, 120)}
    )
    label = ((frame["sex"] == "f").to_numpy() ^ (rng.uniform(size=120) < 0.2)).astype(int)
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["sex"]), (StandardScaler(), ["age", "fare"])), LogisticRegression()
    ).fit(frame.to_pandas(), label)
    scored = frame.with_columns(prediction=pl.Series(model.predict_proba(frame.to_pandas())[:, 1]))
    return model, scored


CLASSIFIER_KINDS = {"age": "abs:5", "sex": "exact", "fare": "quantile:0.1"}


class Counting:
    """A model that counts the rows it was asked about."""

    def __init__(self, model):
        self.model, self.rows = model, 0

    def predict(self, frame):
        self.rows += len(frame)
        return self.model.predict(frame)

    def predict_proba(self, frame):
        self.rows += len(frame)
        return self.model.predict_proba(frame)


def test_compare_refuses_a_classifier_whose_labels_are_not_the_stored_probabilities(classifier):
    """The README's line on a classifier: BS and ABS would explain 0/1 labels, CS the probabilities."""
    model, scored = classifier
    counting = Counting(model)
    with pytest.raises(cohortsql.CohortError) as refused:
        cohortsql.compare(scored, model=counting, prediction="prediction", similarity=CLASSIFIER_KINDS, sample=30)
    message = str(refused.value)
    assert "does not reproduce the column 'prediction'" in message
    assert "predict_proba's second column does: pass model_output='probability'" in message
    assert counting.rows == 2 * 30  # the targets, once for each output: no hybrid point was valued
    both = cohortsql.compare(
        scored,
        model=model,
        prediction="prediction",
        similarity=CLASSIFIER_KINDS,
        sample=30,
        seed=2,
        model_output="probability",
    )
    np.testing.assert_allclose(both.all_baseline.totals["prediction"], both.cohort.prediction, atol=1e-12)


def test_the_model_check_names_the_worst_target_and_allows_a_tolerance(classifier):
    model, scored = classifier
    noisy = scored.with_columns(prediction=pl.col("prediction") + np.linspace(0, 1e-4, scored.height))
    options = dict(prediction="prediction", similarity=CLASSIFIER_KINDS, model_output="probability", id="age")
    with pytest.raises(cohortsql.CohortError) as refused:
        cohortsql.compare(noisy.with_row_index("row"), model=model, **options | {"id": "row"})
    message = str(refused.value)
    assert f"the target with id {scored.height - 1}" in message  # the largest difference is the last row's
    assert "Neither does its predict" in message and "model_tolerance=" in message
    assert " of 120 targets differ by more than model_tolerance=1e-06" in message
    accepted = cohortsql.compare(noisy, model=model, **options | {"id": None}, model_tolerance=2e-4, sample=5)
    assert accepted.cohort.shapley.shape == (5, 3)
    skipped = cohortsql.compare(noisy, model=model, **options | {"id": None}, model_tolerance=float("inf"), sample=5)
    assert skipped.cohort.shapley.shape == (5, 3)
    for wrong in (-1, float("nan"), "1e-3", True):
        with pytest.raises(cohortsql.CohortError, match="model_tolerance must be a number"):
            cohortsql.compare(noisy, model=model, **options | {"id": None}, model_tolerance=wrong)


def test_baseline_shapley_checks_the_model_against_a_named_prediction_column(classifier):
    model, scored = classifier
    features = list(CLASSIFIER_KINDS)
    with pytest.raises(cohortsql.CohortError, match="model_output='probability'"):
        cohortsql.baseline_shapley(scored, model=model, features=features, prediction="prediction", sample=3)
    checked = cohortsql.baseline_shapley(
        scored, model=model, features=features, prediction="prediction", model_output="probability", sample=3, seed=1
    )
    unchecked = cohortsql.baseline_shapley(
        scored, model=model, features=features, model_output="probability", sample=3, seed=1
    )
    np.testing.assert_allclose(checked.shapley, unchecked.shapley, atol=0)
    labels = scored.with_columns(prediction=pl.Series(model.predict(scored.to_pandas()), dtype=pl.Float64))
    with pytest.raises(cohortsql.CohortError, match="Its predict does: pass model_output='prediction'"):
        cohortsql.baseline_shapley(
            labels, model=model, features=features, prediction="prediction", model_output="probability", sample=3
        )


def test_a_function_model_that_misses_stored_probabilities_is_told_so():
    data = cohortsql.datasets.loans()
    with pytest.raises(cohortsql.CohortError, match="'score' holds probabilities, and the model has no predict_proba"):
        cohortsql.compare(
            data,
            model=lambda frame: np.zeros(len(frame)),
            prediction="score",
            similarity={"income": "abs:15"},
            model_input="polars",
        )


@pytest.mark.parametrize("baseline", ["mean", "all"])
def test_groups_are_players_and_owen_values_follow_their_definitions(engine, baseline):
    """{b, d} is one player: the values equal the definition on a table whose group is one column of
    (b, d) pairs, similar when both are; every feature's Owen value is its marginal contribution
    averaged over the orders that keep b and d together, of the baseline games of every feature."""
    data = table(3)
    targets = [0, 50, 120]
    result = cohortsql.baseline_shapley(
        data,
        model=linear_with_interaction,
        features=KINDS,
        baseline=baseline,
        realistic=True,
        groups={"bd": ["b", "d"]},
        group_values="owen",
        id="id",
        targets=targets,
        progress=False,
        **engine.options,
    )
    assert result.features == ("a", "bd", "c")
    rows = rows_of(data)
    bases = baseline_points(data, baseline)

    def joined(row):  # a, (b, d), c
        return [row[0], (row[1], row[3]), row[2]]

    columns = [list(column) for column in zip(*(joined(row) for row in rows))]
    kinds = [
        reference.exact(),
        reference.conjunction(reference.absolute(1.5), reference.range_window(0.2)),
        reference.exact(),
    ]
    expected = reference.baseline_shapley(
        columns,
        kinds,
        lambda values: row_model([values[0], values[1][0], values[2], values[1][1]]),
        [joined(rows[t // 10]) for t in targets],
        [joined(base) for base in bases],
    )
    np.testing.assert_allclose(result.shapley, expected["phi"], atol=1e-12)
    np.testing.assert_allclose(result.shapley_squared, expected["phi2"], atol=1e-12)
    np.testing.assert_allclose(result.shapley_realistic, expected["real"], atol=1e-12)
    unions = [[0], [1, 3], [2]]
    for row, target in enumerate(targets):
        for squared, owen in ((False, result.owen), (True, None)):
            games = {}
            for size in range(5):
                for chosen in itertools.combinations(range(4), size):
                    change = [
                        row_model([rows[target // 10][j] if j in chosen else base[j] for j in range(4)])
                        - row_model(base)
                        for base in bases
                    ]
                    games[frozenset(chosen)] = float(np.mean(np.square(change) if squared else change))
            by_feature = reference.owen_values(games, unions)[[0, 1, 3, 2]]  # the table's order: a, b, d, c
            if owen is not None:
                np.testing.assert_allclose(owen[row], by_feature, atol=1e-12)
            else:  # the squared game's Owen values add up, per group, to the players' phi2
                np.testing.assert_allclose(
                    [by_feature[0], by_feature[1] + by_feature[2], by_feature[3]],
                    result.shapley_squared[row],
                    atol=1e-12,
                )
    table_ = result.owen_table
    assert table_.columns == ["id", "group", "feature", "owen"] and table_["group"].to_list()[:4] == [
        "a",
        "bd",
        "bd",
        "c",
    ]
    np.testing.assert_allclose(result.owen[:, 1] + result.owen[:, 2], result.shapley[:, 1], atol=1e-12)


def test_groups_of_baseline_shapley_need_the_exact_method():
    with pytest.raises(cohortsql.CohortError, match="groups= needs method='exact' for baseline Shapley"):
        cohortsql.baseline_shapley(
            table(3),
            model=linear_with_interaction,
            features=KINDS,
            groups={"bd": ["b", "d"]},
            method="permutation",
            id="id",
            progress=False,
        )
