"""The Shapley effects result's own report (`ShapleyEffects.report`, `cohortsql effects --report`):
on Titanic with its shipped model's predictions, every effect, its standard error and its bootstrap
interval as the result holds them, the variance explained, and whose effects they are."""

import warnings
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app

TITANIC = Path(__file__).parents[2] / "examples/data/titanic_predictions.parquet"
SIMILARITY = {"pclass": "exact", "sex": "exact", "age": "abs:5", "sibsp": "exact"}


def effects(**options):
    titanic = pl.read_parquet(TITANIC)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cohortsql.CohortWarning)
        return cohortsql.shapley_effects(titanic, prediction="prediction", similarity=SIMILARITY, **options)


def test_the_effects_report_shows_the_results_numbers(tmp_path, browser):
    found = effects(bootstrap=40, seed=2)
    found.report(tmp_path / "effects.html")
    browser.get((tmp_path / "effects.html").as_uri())
    assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []
    text = browser.find_element("tag name", "body").text
    assert f"explain {found.explained:.4g} of the variance {found.variance:.4g} ({found.explained_share:.1%})" in text
    for row in found.effects.iter_rows(named=True):
        line = f"{row['feature']} {row['shapley_effect']:.4g} 0 [{row['shapley_effect_ci_low']:.4g},"
        assert line in text and f"{row['shapley_effect_ci_high']:.4g}] {row['share']:.1%}" in text
    assert "Every row is a target, so the effects have no sampling error" in text
    assert "bias-corrected percentile intervals" in text


def test_a_sampled_runs_report_says_its_effects_are_estimates(tmp_path):
    found = effects(sample=300, seed=2)
    found.report(tmp_path / "sampled.html", title="sampled")
    page = (tmp_path / "sampled.html").read_text()
    assert "estimated from a random sample of 300 targets (with its standard error)" in page
    assert "<title>sampled</title>" in page
    with pytest.raises(cohortsql.CohortError, match="a report is an .html file"):
        found.report(tmp_path / "effects.txt")


def test_the_command_line_writes_the_effects_report(tmp_path):
    data = tmp_path / "titanic.parquet"
    pl.read_parquet(TITANIC).write_parquet(data)
    report = tmp_path / "e.html"
    common = [str(data), "--prediction", "prediction", "--features", "pclass,sex,sibsp"]
    result = CliRunner().invoke(app, ["effects", *common, "--report", str(report)])
    assert result.exit_code == 0, result.output
    assert f"wrote {report}" in result.output and "Shapley effects" in report.read_text()
    refused = CliRunner().invoke(app, ["effects", *common, "--report", str(tmp_path / "e.txt")])
    assert refused.exit_code != 0 and "a report is an .html file" in refused.output


def test_each_feature_has_the_colour_it_has_in_the_values_report(tmp_path):
    """The effects report coloured features by their rank; every figure of a run (the values report,
    `plot.effects`) colours them by the run's own order of features, so a feature is one colour everywhere."""
    import re

    boston = pl.read_parquet(Path(__file__).parents[2] / "examples" / "data" / "boston_predictions.parquet")
    similarity = {name: "quantile:0.1" for name in ("lstat", "rm", "crim", "nox", "dis", "age")}
    effects = cohortsql.shapley_effects(boston, prediction="prediction", similarity=similarity)
    effects.report(tmp_path / "effects.html")

    def colours(path):
        svg = (tmp_path / path).read_text()
        pairs = re.findall(r'<title>([a-z]+): [^<]*</title><text[^>]*>[^<]*</text><rect [^>]*fill="(#[0-9a-f]+)"', svg)
        return dict(pairs)

    shown = colours("effects.html")
    assert len(shown) == len(similarity)
    from cohortsql.formats.colours import feature_colours

    assert shown == {name: feature_colours(list(similarity))[name] for name in shown}
