"""The report as a reader sees it, measured in headless Chromium: no value written under a whisker,
the audit's chart of group values read against an axis with its units, and heat-map values in type a
reader can read (drawn at 12 px at least)."""

import pytest

import cohortsql

# Every drawn chart's value labels and whiskers, and the heat map's cells, as the browser lays them out.
MEASURE = """
const boxes = (selector) => [...document.querySelectorAll(selector)].map((element) => {
  const box = element.getBoundingClientRect();
  return {left: box.left, right: box.right, top: box.top, bottom: box.bottom, text: element.textContent};
});
return {
  values: boxes('svg.chart text.value'),
  whiskers: boxes('svg.chart line.whisker'),
  ticks: boxes('#audit svg g.axis text'),
  cells: boxes('#interactions svg text.cell'),
  // a cell's type as drawn: its font size times the scale its chart is drawn at
  cellPixels: [...document.querySelectorAll('#interactions svg text.cell')].map((element) => {
    const chart = element.ownerSVGElement;
    const scale = chart.getBoundingClientRect().width / chart.viewBox.baseVal.width;
    return parseFloat(getComputedStyle(element).fontSize) * scale;
  }),
};
"""


def _overlap(text: dict, line: dict) -> bool:
    """Whether a horizontal line (whose box may be 0 px tall) runs through a text's box."""
    across = min(text["right"], line["right"]) - max(text["left"], line["left"]) > 0.5
    return across and text["top"] <= line["top"] <= text["bottom"]


@pytest.fixture(scope="module")
def audit_report(tmp_path_factory):
    found = cohortsql.audit(
        cohortsql.datasets.redlining(),
        prediction="denial",
        protected="group",
        similarity=["zip", "income"],
        id="id",
        seed=7,
        sample=150,  # sampled targets: the effects' bars carry their standard errors as whiskers
        bootstrap=20,
        null=0,
    )
    path = tmp_path_factory.mktemp("layout") / "audit.html"
    found.report(path)
    return found, path


def test_no_value_is_struck_by_a_whisker_and_heat_map_values_are_legible(browser, audit_report):
    found, path = audit_report
    browser.get(path.as_uri())
    drawn = browser.execute_script(MEASURE)
    assert drawn["values"] and drawn["whiskers"] and drawn["cells"]
    struck = [value["text"] for value in drawn["values"] if any(_overlap(value, line) for line in drawn["whiskers"])]
    assert struck == []
    assert min(drawn["cellPixels"]) >= 12


def test_the_audits_group_chart_has_an_axis_with_its_units(browser, audit_report):
    found, path = audit_report
    browser.get(path.as_uri())
    ticks = [tick["text"] for tick in browser.execute_script(MEASURE)["ticks"]]
    assert "+0" in ticks and len(ticks) >= 4  # ticks at round values, 0 among them, and the caption
    assert ticks[-1] == "the attribute's mean value over the group's targets (in denial's units)"
    values = found.groups["value"].to_list()
    numbers = [float(tick) for tick in ticks[:-1]]
    assert min(numbers) <= min(0.0, *values) + 1e-12 or min(numbers) <= min(values) * 0.5
    assert max(numbers) >= max(values) * 0.5
