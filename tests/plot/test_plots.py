"""Every figure renders headlessly to a PNG that is not blank; the shap bridge; the examples."""

import os
import runpy
import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import pytest  # noqa: E402
from matplotlib.image import imread  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

import cohortsql  # noqa: E402
from cohortsql import plot  # noqa: E402
from cohortsql.cli import app  # noqa: E402

ROOT = Path(__file__).parents[2]
BOSTON = ROOT / "examples" / "data" / "boston_predictions.parquet"
SIMILARITY = {"lstat": "quantile:0.1", "rm": "quantile:0.1", "chas": "exact", "crim": "bins:5"}


@pytest.fixture(autouse=True)
def close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture(scope="module")
def data():
    return pl.read_parquet(BOSTON)


@pytest.fixture(scope="module")
def result(data):
    return cohortsql.cohort_shapley(data, prediction="prediction", similarity=SIMILARITY)


def assert_drawn(figure, path):
    figure.savefig(path, dpi=60)
    pixels = imread(path)[..., :3]
    assert pixels.std() > 0.05, "the image is blank"
    assert (pixels < 0.5).mean() > 0.001, "nothing dark was drawn"


@pytest.mark.parametrize(
    "draw",
    [
        lambda r, d: plot.stacked(r),
        lambda r, d: plot.stacked(r, squared=True),
        lambda r, d: plot.effects(r),
        lambda r, d: plot.effects(
            cohortsql.variance_shapley(d, prediction="prediction", similarity=SIMILARITY, targets=100, seed=1)
        ),
        lambda r, d: plot.target(r, 204),
        lambda r, d: plot.path(r, 204),
        lambda r, d: plot.cohort_scatter(r, 204, "lstat", "rm", data=d),
    ],
    ids=["stacked", "stacked-squared", "effects", "effects-sampled", "target", "path", "scatter"],
)
def test_figures_are_drawn(result, data, draw, tmp_path):
    assert_drawn(draw(result, data), tmp_path / "figure.png")


def test_similar_interval(result, data):
    low, high = result.similar_interval(204, "lstat")
    lstat = data["lstat"].to_numpy()
    delta = 0.1 * (np.quantile(lstat, 0.95) - np.quantile(lstat, 0.05))
    assert (low, high) == pytest.approx((lstat[204] - delta, lstat[204] + delta))
    assert result.similar_interval(204, "chas") == (data["chas"][204], data["chas"][204])
    with pytest.raises(cohortsql.CohortError, match="999 is not one of the 506 targets"):
        result.similar_interval(999, "lstat")


def test_plot_command_on_run_output(tmp_path):
    runner = CliRunner()
    out = tmp_path / "explained.parquet"
    ran = runner.invoke(
        app, ["run", str(BOSTON), "--prediction", "prediction", "--features", "lstat,rm,chas", "--out", str(out)]
    )
    assert ran.exit_code == 0, ran.output
    for kind in ("stacked", "stacked-squared", "effects", "target", "path"):
        figure = tmp_path / f"{kind}.png"
        drawn = runner.invoke(app, ["plot", str(out), "--kind", kind, "--id", "204", "--out", str(figure)])
        assert drawn.exit_code == 0, drawn.output
        pixels = imread(figure)[..., :3]
        assert pixels.std() > 0.05
    missing = runner.invoke(app, ["plot", str(out), "--kind", "path", "--out", str(tmp_path / "x.png")])
    assert missing.exit_code == 2 and "--kind path needs --id" in missing.output
    absent = runner.invoke(app, ["plot", str(tmp_path / "none.parquet"), "--out", str(tmp_path / "x.png")])
    assert absent.exit_code == 2 and "no file" in absent.output


def test_to_shap(result):
    import shap  # a dev dependency: the bridge is tested, not skipped

    explanation = result.to_shap()
    assert isinstance(explanation, shap.Explanation)
    assert explanation.values.shape == (506, 4)
    np.testing.assert_allclose(explanation.base_values + explanation.values.sum(axis=1), result.cohort_mean, atol=1e-10)
    assert explanation.feature_names == list(result.features)
    assert explanation.output_names == "cohort mean of prediction"
    assert explanation[97].instance_names == str(result.ids[97])
    assert explanation.error_std is None  # exact values


def test_to_shap_can_end_at_each_prediction(result):
    """Boston's quantile windows leave targets in cohorts with other rows, so the cohort mean is not the
    prediction; end="prediction" adds the rest of the full cohort as its own column."""
    import shap

    assert np.abs(result.cohort_mean - result.prediction).max() > 0.1
    explanation = result.to_shap(end="prediction")
    assert explanation.feature_names == [*result.features, "(rest of the full cohort)"]
    np.testing.assert_allclose(explanation.base_values + explanation.values.sum(axis=1), result.prediction, atol=1e-10)
    np.testing.assert_array_equal(explanation.values[:, :-1], result.shapley)
    assert explanation.output_names == "prediction"
    squared = result.to_shap(squared=True, end="prediction")
    np.testing.assert_allclose(squared.values.sum(axis=1), (result.prediction - result.mean) ** 2, atol=1e-8)
    shap.plots.waterfall(explanation[97], show=False)
    with pytest.raises(cohortsql.CohortError, match="end must be 'cohort_mean' or 'prediction'"):
        result.to_shap(end="model")


# shap's scatter compares the NaN ages it is given (the values it reads as missing) with numpy's warning
@pytest.mark.filterwarnings("ignore:invalid value encountered in greater:RuntimeWarning")
def test_to_shap_gives_missing_values_as_shap_plots_read_them():
    """Titanic's missing ages (and a text feature with missing values beside them): numbers are NaN,
    not None, and missing text reads "(missing)", so shap's scatter can sort them (it raised "'<' not
    supported between instances of 'NoneType' and 'str'")."""
    import shap

    titanic = pl.read_csv(Path(__file__).parents[2] / "examples/data/titanic.csv").head(300).with_row_index("row")
    titanic = titanic.with_columns(
        embarked=pl.when(pl.col("row") % 7 == 0).then(None).otherwise(pl.col("sex")),
        y=(pl.col("survived") == "survived").cast(pl.Float64),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cohortsql.CohortWarning)
        result = cohortsql.cohort_shapley(
            titanic, prediction="y", similarity={"age": "abs:5", "embarked": "exact"}, id="row"
        )
    explanation = result.to_shap()
    ages = explanation[:, "age"].data.astype(float)
    assert np.isnan(ages).sum() == titanic["age"].null_count() > 0
    assert "(missing)" in set(explanation[:, "embarked"].data)
    shap.plots.scatter(explanation[:, "embarked"], show=False)
    shap.plots.scatter(explanation[:, "age"], show=False)


def test_to_shap_keeps_the_order_the_targets_were_asked_in(data):
    """``targets=[ids]`` in any order: ``ex[0]`` is the first id asked for (it was the smallest id),
    every row's values, data, errors and bounds moved with it; the result itself stays in id order."""
    options = dict(prediction="prediction", similarity=SIMILARITY, bootstrap=10, seed=2)
    asked = [17, 3, 41, 8]
    result = cohortsql.cohort_shapley(data.head(60), targets=asked, **options)
    assert result.ids.to_list() == sorted(asked)
    explanation = result.to_shap()
    assert list(explanation.instance_names) == [str(target) for target in asked]
    rows = [result.ids.to_list().index(target) for target in asked]
    np.testing.assert_array_equal(explanation.values, result.shapley[rows])
    np.testing.assert_array_equal(explanation.lower_bounds, result.bootstrap.shapley_low[rows])
    first = result.targets.row(rows[0], named=True)
    assert [explanation[0].data[j] for j in range(len(result.features))] == [first[f] for f in result.features]
    every = cohortsql.cohort_shapley(data.head(12), prediction="prediction", similarity=SIMILARITY).to_shap()
    assert list(every.instance_names) == [str(row) for row in range(12)]


def test_to_shap_carries_standard_errors_and_intervals(data):
    options = dict(prediction="prediction", similarity=SIMILARITY)
    estimated = cohortsql.cohort_shapley(data.head(60), method="permutation", seed=3, **options)
    explanation = estimated.to_shap(end="prediction")
    np.testing.assert_array_equal(explanation.error_std[:, :-1], estimated.shapley_se)
    np.testing.assert_array_equal(explanation.error_std[:, -1], 0.0)
    resampled = cohortsql.cohort_shapley(data.head(60), bootstrap=20, seed=3, **options)
    bounds = resampled.to_shap(squared=True)
    assert bounds.error_std is None
    np.testing.assert_array_equal(bounds.lower_bounds, resampled.bootstrap.shapley_squared_low)
    np.testing.assert_array_equal(bounds.upper_bounds, resampled.bootstrap.shapley_squared_high)
    assert (bounds.lower_bounds <= bounds.values + 1e-12).mean() > 0.9


@pytest.mark.parametrize("name", ["titanic", "boston"])
def test_examples_run(name, tmp_path, monkeypatch, capsys):
    """The examples write into examples/; run them on a copy so the checkout stays as it is."""
    examples = tmp_path / "examples"
    (examples / "data").mkdir(parents=True)
    for file in (ROOT / "examples" / "data").glob("*.csv"):
        (examples / "data" / file.name).write_bytes(file.read_bytes())
    script = examples / f"{name}.py"
    script.write_text((ROOT / "examples" / f"{name}.py").read_text())
    monkeypatch.setattr(sys, "argv", [str(script)])
    runpy.run_path(str(script), run_name="__main__")
    output = capsys.readouterr().out
    assert (examples / "data" / f"{name}_predictions.parquet").is_file()
    assert len(os.listdir(examples / "figures")) >= 2
    if name == "titanic":
        effects_table = output.split("Shapley effects")[1]
        assert effects_table.index("sex") < effects_table.index("pclass")  # sex first, as in the paper


def test_comparison_and_calibration_figures(data, tmp_path):
    small = data.head(60)

    def model(rows):
        return rows[:, 0] * 0.5 - rows[:, 1] * 2.0

    features = {"lstat": "quantile:0.2", "rm": "quantile:0.2", "chas": "exact"}
    comparison = cohortsql.compare(
        small.with_columns(score=pl.Series(model(small.select(list(features)).to_numpy()))),
        model=model,
        model_input="numpy",
        prediction="score",
        similarity=features,
        targets=[0, 1, 2],
    )
    assert_drawn(plot.compare_global(comparison), tmp_path / "global.png")
    assert_drawn(plot.compare_global(comparison, squared=False), tmp_path / "global_plain.png")
    assert_drawn(plot.compare_target(comparison, 1), tmp_path / "target.png")
    for method in ("CS", "BS2", "ABS"):
        assert_drawn(plot.compare_stacked(comparison, method), tmp_path / f"stacked_{method}.png")
    with pytest.raises(cohortsql.CohortError, match="compare_stacked draws one of"):
        plot.compare_stacked(comparison, "KS")
    with pytest.raises(cohortsql.CohortError, match="not one of the 3 targets"):
        plot.compare_target(comparison, 99)
    for figure in (
        plot.stacked(comparison.all_baseline),
        plot.target(comparison.baseline, 1),
        plot.effects(comparison.all_baseline),
        plot.beeswarm(comparison.baseline),
    ):
        assert_drawn(figure, tmp_path / "baseline.png")
    calibration = cohortsql.calibrate(small, features=list(features), runs=2, seed=1, thresholds=[0.1, 0.3, 0.6])
    assert_drawn(plot.calibration(calibration), tmp_path / "calibration.png")


def test_calibrate_command(tmp_path):
    figure, rates = tmp_path / "calibration.png", tmp_path / "rates.parquet"
    arguments = ["calibrate", BOSTON, "--features", "lstat,rm,chas", "--runs", "3", "--seed", "1"]
    done = CliRunner().invoke(
        app, [str(a) for a in [*arguments, "--thresholds", "0.1,0.3", "--plot", figure, "--out", rates]]
    )
    assert done.exit_code == 0, done.output
    assert "recommended threshold" in done.output or "no threshold makes" in done.output
    assert pl.read_parquet(rates).height == 2 * 4
    assert imread(figure)[..., :3].std() > 0.05
    bad = CliRunner().invoke(app, [str(a) for a in [*arguments, "--holdouts", "a,b"]])
    assert bad.exit_code == 2 and "--holdouts must be comma-separated numbers" in bad.output


def test_stacked_draws_a_hundred_thousand_targets_in_bins(tmp_path):
    """100,000 targets are drawn as the means of neighbouring targets: one filled area per feature
    and sign, never an artist per target (a time bound here failed on a busy machine)."""
    rng = np.random.default_rng(3)
    targets, features = 100_000, [f"x{j}" for j in range(10)]
    values = rng.normal(size=(targets, len(features)))
    pl.DataFrame(
        {
            "id": np.repeat(np.arange(targets), len(features)),
            "feature": features * targets,
            "shapley": values.reshape(-1),
            "shapley_squared": values.reshape(-1) ** 2,
        }
    ).write_parquet(tmp_path / "big.parquet")
    total = values.sum(axis=1)
    pl.DataFrame({"id": np.arange(targets), "prediction": total, "cohort_mean": total, "value": total}).write_parquet(
        tmp_path / "big_totals.parquet"
    )
    figure = plot.stacked(tmp_path / "big.parquet")
    assert_drawn(figure, tmp_path / "big.png")
    assert len(figure.axes[0].patches) <= 2 * len(features)
    assert "mean of 100 neighbouring targets" in figure.axes[0].get_xlabel()


def test_waterfall_beeswarm_and_effects_from_files(result, tmp_path):
    figure = plot.target(result, 204)
    texts = [text.get_text() for text in figure.axes[0].texts]
    assert len(texts) == len(result.features) and all(text[0] in "+-" for text in texts)
    labels = [label.get_text() for label in figure.axes[0].get_yticklabels()]
    assert any(label.startswith("lstat = ") for label in labels)
    # each label describes its bar: a Shapley value, not one order's cohort (whose size misled)
    assert not any("(n=" in label for label in labels)
    assert_drawn(figure, tmp_path / "waterfall.png")
    assert_drawn(plot.beeswarm(result), tmp_path / "beeswarm.png")
    assert_drawn(plot.beeswarm(result, squared=True), tmp_path / "beeswarm2.png")
    effects_file = tmp_path / "effects.parquet"
    result.global_.write_parquet(effects_file)
    assert_drawn(plot.effects(effects_file), tmp_path / "effects.png")


def test_a_feature_keeps_its_colour_in_every_figure(result):
    from matplotlib.colors import to_hex

    from cohortsql.formats.colours import feature_colours

    colours = feature_colours(list(result.features))
    stacked = plot.stacked(result)
    drawn = {patch.get_label(): to_hex(patch.get_facecolor()) for patch in stacked.axes[0].patches if patch.get_label()}
    assert drawn == {name: colours[name] for name in result.features}
    assert result.global_["feature"].to_list() != list(result.features)  # sorted by importance, colours are not
    effects = cohortsql.shapley_effects(BOSTON, prediction="prediction", similarity=SIMILARITY)
    for source in (result, effects):
        bars = plot.effects(source).axes[0]
        names = [label.get_text() for label in bars.get_yticklabels()]
        assert [to_hex(bar.get_facecolor()) for bar in bars.patches] == [colours[name] for name in names]


def test_a_result_of_two_outcomes_draws_each_outcome_or_names_the_choice(tmp_path):
    """Every plot kind and the report on the files of a run with two explained columns: without
    --outcome one line naming it (no traceback), with --outcome each column drawn on its own."""
    data = pl.read_parquet(BOSTON).with_columns(doubled=pl.col("prediction") * 2)
    data.write_parquet(tmp_path / "boston.parquet")
    out = tmp_path / "explained.parquet"
    runner = CliRunner()
    arguments = ["shapley", str(tmp_path / "boston.parquet"), "--prediction", "prediction", "--prediction", "doubled"]
    ran = runner.invoke(app, [*arguments, "--features", "lstat,rm,chas", "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    kinds = ("stacked", "stacked-squared", "effects", "target", "path", "beeswarm")
    for kind in kinds:
        figure = tmp_path / f"{kind}.png"
        unchosen = runner.invoke(app, ["plot", str(out), "--kind", kind, "--id", "204", "--out", str(figure)])
        assert unchosen.exit_code == 2, unchosen.output
        assert "2 explained columns (prediction, doubled)" in unchosen.output and "--outcome" in unchosen.output
        assert len(unchosen.output.strip().splitlines()) == 1
        for outcome in ("prediction", "doubled"):
            drawn = runner.invoke(
                app, ["plot", str(out), "--kind", kind, "--id", "204", "--outcome", outcome, "--out", str(figure)]
            )
            assert drawn.exit_code == 0, drawn.output
            assert imread(figure)[..., :3].std() > 0.05
    unknown = runner.invoke(app, ["plot", str(out), "--outcome", "nope", "--out", str(tmp_path / "x.png")])
    assert unknown.exit_code == 2 and "no outcome 'nope'" in unknown.output
    page = tmp_path / "report.html"
    unchosen = runner.invoke(app, ["report", str(out), "--out", str(page)])
    assert unchosen.exit_code == 2 and "--outcome" in unchosen.output and not page.exists()
    reported = runner.invoke(app, ["report", str(out), "--outcome", "doubled", "--out", str(page)])
    assert reported.exit_code == 0, reported.output
    assert "cohort Shapley: doubled" in page.read_text()
    both = cohortsql.cohort_shapley(data, prediction=["prediction", "doubled"], similarity=["lstat", "rm", "chas"])
    with pytest.raises(cohortsql.CohortError, match="draw one with outcome="):
        plot.stacked(both)
    single = plot.stacked(both, outcome="doubled")
    assert_drawn(single, tmp_path / "single.png")


def test_cohort_scatter_takes_the_result_first():
    frame = cohortsql.datasets.loans()
    result = cohortsql.cohort_shapley(frame, prediction="score", similarity={"income": "abs:15", "region": "exact"})
    figure = plot.cohort_scatter(result, 0, "income", "score", data=frame)
    assert figure.axes[0].get_xlabel() == "income"
    with pytest.raises(cohortsql.CohortError, match="takes the result first"):
        plot.cohort_scatter(frame, result, 0, "income", data=frame)  # the former order
    with pytest.raises(cohortsql.CohortError, match="data= is the polars DataFrame"):
        plot.cohort_scatter(result, 0, "income", "score", data="loans.parquet")


def test_interaction_maps_and_group_bars_draw_what_the_result_holds(data, tmp_path):
    """The heat map writes every off-diagonal value (mean |Phi_ij|, one target's, or the effects'); the
    group bars add the members' Owen effects up to the group's effect; results without them are refused."""
    similarity = {"lstat": "quantile:0.1", "rm": "quantile:0.1", "chas": "exact", "crim": "quantile:0.1"}
    local = cohortsql.cohort_shapley(
        data, prediction="prediction", similarity=similarity, interactions=True, targets=60, seed=2
    )
    for figure in (plot.interactions(local), plot.interactions(local, local.ids[0])):
        assert_drawn(figure, tmp_path / "map.png")
        texts = [text.get_text() for text in figure.axes[0].texts]
        assert len(texts) == 4 * 3
    typical = np.average(np.abs(local.interactions), axis=0)
    assert f"{typical[0, 1]:.2g}" in [text.get_text() for text in plot.interactions(local).axes[0].texts]
    groups = {"people": ["lstat", "crim"], "housing": ["rm", "chas"]}
    effects = cohortsql.shapley_effects(
        data, prediction="prediction", similarity=similarity, groups=groups, group_values="owen", interactions=True
    )
    assert_drawn(plot.interactions(effects), tmp_path / "effects_map.png")
    figure = plot.groups(effects)
    assert_drawn(figure, tmp_path / "groups.png")
    widths = {}
    for bar in figure.axes[0].patches:
        widths[round(bar.get_y() + bar.get_height() / 2)] = (
            widths.get(round(bar.get_y() + bar.get_height() / 2), 0) + bar.get_width()
        )
    ranked = effects.effects.sort("shapley_effect")["shapley_effect"].to_list()
    np.testing.assert_allclose([widths[row] for row in range(2)], ranked, rtol=1e-12)
    with pytest.raises(cohortsql.CohortError, match="no interaction values"):
        plot.interactions(
            cohortsql.cohort_shapley(data, prediction="prediction", similarity=similarity, targets=5, seed=1)
        )
    with pytest.raises(cohortsql.CohortError, match="no Owen values"):
        plot.groups(cohortsql.shapley_effects(data, prediction="prediction", similarity=similarity))


def test_the_beeswarm_gives_every_level_of_every_feature_its_own_colour(tmp_path):
    """tab10's ten colours repeated from the eleventh level on: two features' levels looked alike."""
    from matplotlib.colors import to_hex

    rng = np.random.default_rng(8)
    rows = 400
    frame = pl.DataFrame(
        {name: rng.choice([f"{name}{level}" for level in range(4)], rows) for name in ("a", "b", "c", "d")}
    ).with_columns(y=pl.Series(rng.random(rows)))
    result = cohortsql.cohort_shapley(frame, prediction="y", similarity=["a", "b", "c", "d"])
    figure = plot.beeswarm(result)
    handles, labels = figure.axes[0].get_legend_handles_labels()
    assert len(labels) == 16
    colours = [to_hex(handle.get_facecolor()[0]) for handle in handles]
    assert len(set(colours)) == len(colours)
    assert_drawn(figure, tmp_path / "levels.png")


def test_the_effects_figure_draws_the_bootstrap_intervals(tmp_path):
    """The whiskers are the intervals of the result or of its file (they were ignored: the figure drew
    standard errors, or nothing where every row is a target)."""
    from cohortsql import plot

    loans = cohortsql.datasets.loans()
    effects = cohortsql.shapley_effects(
        loans, prediction="score", similarity={"income": "abs:15", "region": "exact"}, bootstrap=40, seed=2
    )
    path = tmp_path / "effects.parquet"
    effects.write_parquet(path)  # the result keeps itself, settings and all
    assert pl.read_parquet(path).equals(effects.effects)
    for source in (effects, path):
        figure = plot.effects(source)
        (bars,) = [container for container in figure.axes[0].containers if hasattr(container, "lines")]
        whiskers = bars.lines[2][0].get_segments()
        drawn = sorted((float(segment[0][0]), float(segment[1][0])) for segment in whiskers)
        table = effects.effects
        expected = sorted(zip(table["shapley_effect_ci_low"].to_list(), table["shapley_effect_ci_high"].to_list()))
        np.testing.assert_allclose(drawn, expected, atol=1e-12)
        assert "bias-corrected bootstrap intervals" in figure.axes[0].get_xlabel()


def test_a_dependence_plot_draws_each_targets_value_against_its_feature(result, tmp_path):
    """x: each target's value of the feature, y: its value for the feature, colour: another feature's
    value (by default the one of largest mean |value|); from a result, a file, and the command line."""
    from cohortsql import plot

    figure = plot.dependence(result, "rm")
    points = figure.axes[0].collections[0]
    offsets = np.asarray(points.get_offsets())
    rm = result.local.filter(pl.col("feature") == "rm")
    np.testing.assert_allclose(offsets[:, 0], rm["feature_value"].cast(pl.Float64).to_numpy())
    np.testing.assert_allclose(offsets[:, 1], rm["shapley"].to_numpy())
    others = result.local.filter(pl.col("feature") != "rm").group_by("feature").agg(pl.col("shapley").abs().mean())
    largest = others.sort("shapley", descending=True)["feature"][0]
    assert figure.axes[1].get_ylabel().startswith(f"{largest}:")
    with pytest.raises(cohortsql.CohortError, match="dependence feature 'nope' is not a feature of this result"):
        plot.dependence(result, "nope")
    path = tmp_path / "values.parquet"
    result.write_parquet(path)
    result.totals.write_parquet(tmp_path / "values_totals.parquet")
    out = tmp_path / "dependence.png"
    done = CliRunner().invoke(
        app, ["plot", str(path), "--kind", "dependence", "--feature", "rm", "--colour", "lstat", "--out", str(out)]
    )
    assert done.exit_code == 0, done.output
    assert imread(out).shape[0] > 100
    missing = CliRunner().invoke(app, ["plot", str(path), "--kind", "dependence", "--out", str(out)])
    assert missing.exit_code == 2 and "--kind dependence needs --feature" in missing.output


def test_the_insertion_and_deletion_figure_draws_the_curves_it_was_given(data, result, tmp_path):
    """Each panel's first line is the target's curve as `curves` holds it, the dashed line joins its ends,
    and the legend states the ABC; the grid lays a target's values out on the shape asked for."""
    tests = cohortsql.insertion_deletion(data, prediction="prediction", similarity=SIMILARITY, attributions=result)
    target = tests.abc["id"][0]
    figure = plot.insertion_deletion(tests, target)
    assert_drawn(figure, tmp_path / "curves.png")
    curves = tests.curves.filter(pl.col("id") == target)
    abc = tests.abc.filter(pl.col("id") == target).row(0, named=True)
    for axis, name in zip(figure.axes, ("insertion", "deletion"), strict=True):
        curve, chord = axis.get_lines()[:2]
        np.testing.assert_array_equal(curve.get_ydata(), curves[name].to_numpy())
        np.testing.assert_array_equal(chord.get_ydata(), curves[name].to_numpy()[[0, -1]])
        assert f"ABC {abc[f'{name}_abc']:+.4g}" in axis.get_legend().get_texts()[0].get_text()
    with pytest.raises(cohortsql.CohortError, match="is not a target of this test"):
        plot.insertion_deletion(tests, "no such target")
    assert_drawn(plot.grid(result, result.local["id"][0], shape=(2, 2)), tmp_path / "grid.png")
