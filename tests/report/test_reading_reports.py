"""The tutorial "Reading a report you did not run": a reader who sees only the report of three chosen
passengers, or only that of a sampled audit, is told whose numbers they are (in Chromium, as the
tutorial's screenshots show them)."""

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "reading_reports.py"


@pytest.fixture(scope="module")
def pages(tmp_path_factory, browser):
    specification = importlib.util.spec_from_file_location("reading_reports", EXAMPLE)
    assert specification is not None and specification.loader is not None
    module = importlib.util.module_from_spec(specification)
    specification.loader.exec_module(module)
    three, audit = module.write_reports(tmp_path_factory.mktemp("reports"))
    texts = []
    for report in (three, audit):
        browser.get(report.as_uri())
        texts.append(browser.find_element("tag name", "body").text)
    return texts


def test_a_report_of_three_chosen_targets_says_its_numbers_are_theirs(pages):
    three = pages[0]
    assert "Shapley effects of these targets" in three
    assert (
        "over this run's 3 chosen targets only: their own spread around the overall mean, not the population's" in three
    )
    assert "they were chosen, so they say how far the mean of targets like these could move" in three
    assert "Mean |cohort Shapley value| per feature over this run's 3 chosen targets only." in three
    assert "cohort of 2 similar subjects" in three and "cohort of 1 similar subjects" not in three


def test_a_sampled_audits_report_says_its_groups_are_the_samples_and_its_fairness_every_rows(pages):
    audit = pages[1]
    assert "The groups' values (and their targets) are over this run's 150 randomly sampled targets, not every" in audit
    assert "their rows and gaps and the fairness metrics below count every row" in audit
    assert "group 'a' 108 432" in audit  # 108 sampled targets, 432 rows
    assert "Fairness of the decisions (denial >= 0.5), over every row" in audit
    assert "group = 'a' 432 15.3%" in audit  # every row of the group, not the 108 sampled
    assert "estimated from a random sample of 150 targets (with its standard error)" in audit
    words = audit[audit.index("Audit") : audit.index("Mean value of the attribute per group")]
    assert "fairness of the decisions" not in words  # said once, in its section
