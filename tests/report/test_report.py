"""The HTML report: built from a result or from its files, self-contained, small, and working in a
real headless Chromium (Debian's chromium and chromium-driver; skipped with the reason where absent)."""

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app
from cohortsql.report import ReportTables, report_html, write_report

ROOT = Path(__file__).parents[2]
BOSTON = ROOT / "examples" / "data" / "boston_predictions.parquet"
PREDICTORS = ["crim", "zn", "indus", "chas", "nox", "rm", "age", "dis", "rad", "tax", "ptratio", "black", "lstat"]
SIMILARITY = {name: "quantile:0.1" for name in PREDICTORS}  # the Boston example's (examples/boston.toml)


@pytest.fixture(scope="module")
def boston():
    return cohortsql.cohort_shapley(BOSTON, prediction="prediction", similarity=SIMILARITY, progress=False)


@pytest.fixture(scope="module")
def report(boston, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "boston.html"
    boston.report(path, targets=[204, 10])
    return path


def test_the_report_holds_every_part_and_needs_no_network(report, boston):
    html = report.read_text()
    for anchor in ("settings", "effects", "drivers", "targets"):
        assert f'<section id="{anchor}">' in html
    assert html.count('<section class="target"') == 2 and "Target 204" in html
    assert len(re.findall(r"<tr><td>", html)) >= boston.totals.height  # every target is in the table
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "the report must not load anything"
    assert "<script>" in html and "<style>" in html
    # The top reason of target 204 is written out in words.
    top = boston.reasons(1).filter(pl.col("id") == 204).row(0, named=True)
    assert f"{top['feature']} = {top['feature_value']}" in html


def test_files_and_result_give_the_same_report(boston, tmp_path):
    out = tmp_path / "boston.parquet"
    done = CliRunner().invoke(
        app, ["shapley", str(BOSTON), "--prediction", "prediction", *_similar(), "--out", str(out)]
    )
    assert done.exit_code == 0, done.output
    made = tmp_path / "files.html"
    done = CliRunner().invoke(app, ["report", str(out), "--target-ids", "204", "--out", str(made)])
    assert done.exit_code == 0, done.output
    from_result = report_html(ReportTables.of_result(boston), [204])
    strip = re.compile(r"<tr><th>created</th><td>[^<]*</td></tr>")
    assert strip.sub("", made.read_text()).replace("\n", "") == strip.sub("", from_result).replace("\n", "")


def _similar():
    return [argument for name, kind in SIMILARITY.items() for argument in ("--similar", f"{name}={kind}")]


def test_the_effects_file_brings_its_standard_errors(tmp_path):
    sample = tmp_path / "sample.parquet"
    effects = tmp_path / "effects.parquet"
    common = [str(BOSTON), "--prediction", "prediction", *_similar(), "--sample", "100", "--seed", "1"]
    assert CliRunner().invoke(app, ["shapley", *common, "--out", str(sample)]).exit_code == 0
    assert CliRunner().invoke(app, ["effects", *common, "--out", str(effects)]).exit_code == 0
    tables = ReportTables.of_files(sample, effects)
    assert tables.effects["shapley_effect_se"].min() > 0
    assert tables.settings["sample"] == 100


def test_the_report_shows_intervals_and_says_why_standard_errors_are_zero(tmp_path):
    """With bootstrap replicates the effects table has the intervals; every row being a target, the
    standard errors are 0 as Python holds them (they were dashes in the report and the command line,
    0.0 in Python), with a sentence saying why; the refinement chart has values on both its axes."""
    loans = cohortsql.datasets.loans()
    similarity = {"income": "abs:15", "region": "exact"}
    result = cohortsql.cohort_shapley(loans, prediction="score", similarity=similarity, bootstrap=50, seed=3)
    html = report_html(ReportTables.of_result(result), [0])
    effects = html[html.index('<section id="effects">') : html.index('<section id="drivers">')]
    assert "<th>95% interval</th>" in effects
    for row in result.global_.iter_rows(named=True):
        assert f"[{row['shapley_effect_ci_low']:.4g}, {row['shapley_effect_ci_high']:.4g}]" in effects
    assert (result.global_["shapley_effect_se"] == 0).all()
    assert 'class="num">0</td>' in effects and 'class="num">–</td>' not in effects
    assert "no sampling error: their standard errors are 0" in effects and "Bayesian bootstrap" in effects
    assert "bias-corrected percentile intervals" in effects  # which interval it is
    refinement = html[html.rindex('<svg class="chart" viewBox="0 0 640 290"') :]
    refinement = refinement[: refinement.index("</svg>")]
    sizes = result.paths.filter(pl.col("id") == 0)["cohort_size"]
    assert f">{int(sizes.max()):,}</text>" in refinement and f">{int(sizes.min()):,}</text>" in refinement
    sampled = cohortsql.cohort_shapley(loans, prediction="score", similarity=similarity, targets=6, seed=3)
    sampled_html = report_html(ReportTables.of_result(sampled), [sampled.ids[0]])
    assert "no sampling error" not in sampled_html and "<th>95% interval</th>" not in sampled_html


def test_ten_thousand_targets_make_a_report_under_five_megabytes(tmp_path):
    rng = np.random.default_rng(1)
    data = pl.DataFrame({f"x{j}": rng.integers(0, 6, 10_000) for j in range(6)}).with_columns(
        y=pl.Series(rng.normal(size=10_000))
    )
    result = cohortsql.cohort_shapley(data, prediction="y", similarity=list(data.columns[:6]), progress=False)
    path = write_report(ReportTables.of_result(result), tmp_path / "big.html")
    assert path.stat().st_size < 5 * 2**20


def test_the_targets_table_keeps_the_furthest_targets_of_a_large_result(boston, monkeypatch):
    from cohortsql.report import targets

    monkeypatch.setattr(targets, "TABLE_TARGETS", 50)
    html = report_html(ReportTables.of_result(boston))
    table = html[html.index('<table id="target-table"') :]
    rows = re.findall(r"<tr><td>(\d+)</td>", table)
    assert len(rows) == 50 and "The 50 targets (of 506)" in html
    furthest = boston.totals.sort(pl.col("value").abs(), descending=True).head(50)["id"].to_list()
    assert [int(row) for row in rows] == sorted(furthest)


def test_report_mistakes_are_named(boston, tmp_path):
    tables = ReportTables.of_result(boston)
    with pytest.raises(cohortsql.CohortError, match=r"\.html"):
        write_report(tables, tmp_path / "report.pdf")
    with pytest.raises(cohortsql.CohortError, match="does not exist"):
        write_report(tables, tmp_path / "no" / "report.html")
    with pytest.raises(cohortsql.CohortError, match="not targets of this result"):
        write_report(tables, tmp_path / "report.html", targets=[99999])
    effects = tmp_path / "effects.parquet"
    boston.global_.write_parquet(effects)
    with pytest.raises(cohortsql.CohortError, match="not a `cohortsql shapley` output"):
        ReportTables.of_files(effects)


# -- in a real browser ---------------------------------------------------------------------------


def test_the_report_renders_in_chromium_and_search_filters_the_targets(browser, report, tmp_path):
    from selenium.webdriver.common.by import By

    browser.get(report.as_uri())
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
    assert browser.find_element(By.CSS_SELECTOR, "#effects svg").is_displayed()
    rows = browser.find_elements(By.CSS_SELECTOR, "#target-table tbody tr")
    assert len(rows) == 506
    search = browser.find_element(By.ID, "search")
    assert search.is_displayed()
    search.send_keys("tax = 666")
    visible = [row for row in rows if row.is_displayed()]
    assert 0 < len(visible) < len(rows)
    assert all("tax = 666" in row.text for row in visible)
    assert browser.find_element(By.ID, "shown").text == f"{len(visible)} of 506 targets"
    header = browser.find_element(By.CSS_SELECTOR, "#target-table thead th:nth-child(2)")
    search.clear()
    search.send_keys(" ")
    header.click()
    cells = browser.find_elements(By.CSS_SELECTOR, "#target-table tbody td:nth-child(2)")
    predictions = [float(cell.text) for cell in cells]
    assert predictions == sorted(predictions)
    assert browser.save_screenshot(str(tmp_path / "report.png"))
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_the_report_is_readable_without_scripts(browser, report):
    from selenium.webdriver.common.by import By

    browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        browser.get(report.as_uri())
        rows = browser.find_elements(By.CSS_SELECTOR, "#target-table tbody tr")
        assert len(rows) == 506 and all(row.is_displayed() for row in rows[:20])
        assert not browser.find_element(By.ID, "search").is_displayed()
        assert browser.find_element(By.CSS_SELECTOR, "section.target svg").is_displayed()
    finally:
        browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})


def test_the_report_never_follows_a_planted_link(boston, tmp_path):
    """The report's temporary file is created afresh under a random name: a link planted where the
    earlier version wrote (``.NAME.tmp``) is left alone, and so is the file it points to."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / ".report.html.tmp").symlink_to(victim)
    write_report(ReportTables.of_result(boston), tmp_path / "report.html")
    assert victim.read_text() == "keep me"
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert sorted(path.name for path in tmp_path.iterdir()) == [".report.html.tmp", "report.html", "victim.txt"]


TITANIC = ROOT / "examples" / "data" / "titanic_predictions.parquet"
TITANIC_SIMILARITY = {"sex": "exact", "pclass": "exact", "age": "range:0.1", "sibsp": "exact"}


@pytest.mark.parametrize("asked", [["--interactions"], ["--group", "family=sibsp,age", "--group-values", "owen"]])
def test_the_report_shows_interactions_and_groups_from_a_result_and_from_its_files(tmp_path, asked):
    """The sections appear when the run has them (the same from the result and from its files), and
    name the strongest pair or each group's members with their numbers."""
    out = tmp_path / "titanic.parquet"
    kinds = [argument for name, kind in TITANIC_SIMILARITY.items() for argument in ("--similar", f"{name}={kind}")]
    done = CliRunner().invoke(
        app, ["shapley", str(TITANIC), "--prediction", "prediction", *kinds, *asked, "--out", str(out)]
    )
    assert done.exit_code == 0, done.output
    html = report_html(ReportTables.of_files(out), [0])
    options = (
        {"interactions": True}
        if asked[0] == "--interactions"
        else {"groups": {"family": ["sibsp", "age"]}, "group_values": "owen"}
    )
    result = cohortsql.cohort_shapley(TITANIC, prediction="prediction", similarity=TITANIC_SIMILARITY, **options)
    strip = re.compile(r"<tr><th>created</th><td>[^<]*</td></tr>")
    assert strip.sub("", html) == strip.sub("", report_html(ReportTables.of_result(result), [0]))
    if asked[0] == "--interactions":
        assert '<section id="interactions">' in html and '<section id="groups">' not in html
        mean = np.abs(result.interactions).mean(axis=0)
        np.fill_diagonal(mean, 0)
        first, second = np.unravel_index(np.argmax(mean), mean.shape)
        names = sorted([result.features[first], result.features[second]])
        assert f"<b>{names[0]} × {names[1]}</b>: {mean[first, second]:.3g} on average" in html
    else:
        assert '<section id="groups">' in html and '<section id="interactions">' not in html
        owen = result.owen_table.filter(pl.col("feature") == "sibsp")["owen"].abs().mean()
        assert f'<td>family</td><td>sibsp</td><td class="num">{owen:.4g}</td>' in html


def test_a_plain_report_has_neither_section(report):
    html = report.read_text()
    assert '<section id="interactions">' not in html and '<section id="groups">' not in html


def test_the_drawn_targets_are_linked_from_above_the_table(browser, tmp_path):
    """The targets drawn in detail sat after a table of every target, with no link to them."""
    from selenium.webdriver.common.by import By

    frame = pl.DataFrame({"id": ["a b", "a-b", "c"] * 20, "x": np.arange(60) % 7, "y": np.arange(60) / 60.0})
    frame = frame.with_columns(id=pl.col("id") + pl.int_range(pl.len()).cast(pl.String))
    result = cohortsql.cohort_shapley(frame, prediction="y", similarity=["x"], id="id")
    path = tmp_path / "linked.html"
    result.report(path, targets=["a b0", "a-b1"])
    browser.get(path.as_uri())
    links = browser.find_elements(By.CSS_SELECTOR, "#targets p a")
    assert [link.text for link in links] == ["a b0", "a-b1"]
    anchors = [link.get_attribute("href").split("#")[1] for link in links]
    assert len(set(anchors)) == 2
    for anchor, id in zip(anchors, ["a b0", "a-b1"]):
        assert browser.find_element(By.ID, anchor).find_element(By.TAG_NAME, "h2").text == f"Target {id}"


def test_the_settings_read_as_words_not_json():
    """The report's settings were raw JSON ({"income": "range:0.1", ...}) and null."""
    result = cohortsql.cohort_shapley(cohortsql.datasets.loans(), prediction="score", similarity=["income", "region"])
    html = report_html(ReportTables.of_result(result))
    settings = html[html.index('<table class="settings">') : html.index("</table>", html.index('class="settings"'))]
    assert "null" not in settings and "{&quot;" not in settings and '{"' not in settings
    assert "<th>similarity</th><td>income: range:0.1<br>region: exact</td>" in settings
    assert "<th>weight</th><td>–</td>" in settings


def test_long_labels_are_shortened_with_their_whole_text_in_the_tooltip_and_the_size_axis_has_decades():
    """Long labels ran off the chart's left edge; the logarithmic cohort-size axis was labelled at its
    two ends only."""
    from cohortsql.report import svg

    name = "number_of_previous_applications_in_the_last_five_years"
    chart = svg.bars([name, "age"], [0.5, 0.25], None, ["#111", "#222"], "")
    assert f"<title>{name}: 0.5</title>" in chart and ">number_of_previous_applicatio…</text>" in chart
    drawn = svg.waterfall(0.0, [(name, "12.5", 0.3), ("age", "41", -0.1)], 0.2, ["#111", "#222"])
    assert f"<title>{name} = 12.5: Shapley value +0.3</title>" in drawn and f">{name} = 12.5<" not in drawn
    path = svg.refinement(["every subject", "+ a", "+ b"], [2380.0, 300.0, 3.0], [0.2, 0.3, 0.4], 0.5)
    ticks = re.findall(r'class="size">([\d,]+)</text>', path)
    assert ticks == ["3", "10", "100", "1,000", "2,380"] and "cohort size (log scale)" in path


def test_a_cohort_of_one_is_one_subject(tmp_path):
    frame = pl.DataFrame({"id": [1, 2, 3, 4], "x": [1.0, 2.0, 3.0, 3.0], "y": [0.1, 0.2, 0.3, 0.5]})
    result = cohortsql.cohort_shapley(frame, prediction="y", similarity={"x": "exact"}, id="id")
    html = report_html(ReportTables.of_result(result), [1, 3])
    assert "cohort of 1 similar subject with mean" in html and "cohort of 2 similar subjects with mean" in html


def test_the_effects_say_whose_they_are():
    """Every row a target: the population's effects, with nothing said of chosen targets (the report
    said "over this run's 12 chosen targets only" of a run over every row); chosen ids: theirs only;
    a random sample: an estimate."""
    loans = cohortsql.datasets.loans()
    options = dict(prediction="score", similarity={"income": "abs:15", "region": "exact"})
    every = report_html(ReportTables.of_result(cohortsql.cohort_shapley(loans, **options)), [0])
    assert "chosen target" not in every and "Shapley effects of these targets" not in every
    chosen = report_html(ReportTables.of_result(cohortsql.cohort_shapley(loans, targets=[0, 1, 2], **options)), [0])
    assert "over this run's 3 chosen targets only" in chosen and "Shapley effects of these targets" in chosen
    sampled = report_html(ReportTables.of_result(cohortsql.cohort_shapley(loans, sample=6, seed=3, **options)), [])
    assert "estimated from a random sample of 6 targets" in sampled


def test_the_report_says_at_its_top_when_most_targets_are_alone_and_draws_targets_before_the_table(tmp_path):
    """The paper's Boston windows leave 82% of the tracts alone in their cohort: the report's first lines
    say so and what to do; each drawn target's section comes before the table of every target."""
    boston = pl.read_parquet(Path(__file__).parents[2] / "examples" / "data" / "boston_predictions.parquet")
    features = [name for name in boston.columns if name not in ("medv", "prediction")]
    result = cohortsql.cohort_shapley(
        boston, prediction="prediction", similarity=dict.fromkeys(features, "quantile:0.1")
    )
    result.report(tmp_path / "boston.html", targets=[204])
    html = (tmp_path / "boston.html").read_text()
    header = html[html.index("<header>") : html.index("</header>")]
    assert "82% of the targets are alone in their cohort on every feature" in header and "widen the windows" in header
    assert html.index("<h2>Target 204</h2>") < html.index('id="every-target"')
