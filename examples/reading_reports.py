"""The two reports of the tutorial "Reading a report you did not run": Titanic's model explained for
three chosen passengers, and a sampled audit of the lending table with the decisions' fairness
metrics; each written as HTML and, with `--screenshots`, shown in headless Chromium and saved as
the tutorial's figures (docs/report_three_targets.png, docs/report_sampled_audit.png).

    python examples/reading_reports.py [--screenshots]
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import polars as pl

import cohortsql

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs"
SIMILARITY = {"pclass": "exact", "sex": "exact", "age": "abs:5", "sibsp": "exact", "parch": "exact"}
PASSENGERS = [17, 402, 905]


def write_reports(folder: Path) -> tuple[Path, Path]:
    """The three-passenger report and the sampled audit's, written in `folder`."""
    titanic = pl.read_parquet(HERE / "data/titanic_predictions.parquet").with_row_index("passenger")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cohortsql.CohortWarning)
        three = cohortsql.cohort_shapley(
            titanic, prediction="prediction", similarity=SIMILARITY, id="passenger", targets=PASSENGERS
        )
        lending = cohortsql.datasets.redlining()
        audit = cohortsql.audit(
            lending,
            prediction="denial",
            protected="group",
            similarity=["zip", "income"],
            id="id",
            sample=150,
            seed=3,
            threshold=0.5,
        )
    three.report(folder / "three_passengers.html", targets=PASSENGERS)
    audit.report(folder / "sampled_audit.html", targets=audit.cohort.ids.head(1).to_list())
    return folder / "three_passengers.html", folder / "sampled_audit.html"


def screenshots(reports: tuple[Path, Path], folder: Path) -> list[Path]:
    """Each report's first screen in headless Chromium (chromium and chromium-driver from Debian)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1000,1500"):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    saved = []
    try:
        for report, name in zip(reports, ("report_three_targets.png", "report_sampled_audit.png"), strict=True):
            browser.get(report.as_uri())
            browser.save_screenshot(str(folder / name))
            saved.append(folder / name)
    finally:
        browser.quit()
    return saved


if __name__ == "__main__":
    (HERE / "figures").mkdir(exist_ok=True)
    written = write_reports(HERE / "figures")
    print("\n".join(f"wrote {path}" for path in written))
    if "--screenshots" in sys.argv:
        print("\n".join(f"wrote {path}" for path in screenshots(written, DOCS)))
