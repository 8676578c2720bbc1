"""The report's Audit section: the audit in words, each group's value with its interval, the features
it acts through, and the decisions' fairness metrics beside it (`cohortsql.audit`)."""

from __future__ import annotations

import math
from html import escape
from typing import Any, Protocol

import polars as pl

from cohortsql.formats.tables import BIAS_CORRECTED, SMALL_GROUP, group_name
from cohortsql.report import svg


class Audited(Protocol):
    """What a report reads of an audit (`cohortsql.AuditResult`)."""

    @property
    def attributes(self) -> pl.DataFrame: ...
    @property
    def groups(self) -> pl.DataFrame: ...
    @property
    def proxies(self) -> pl.DataFrame: ...
    def summary(self) -> list[str]: ...
    @property
    def fairness(self) -> Fair | None: ...
    @property
    def outcome(self) -> str: ...


class Fair(Protocol):
    """What a report reads of the fairness metrics beside an audit (`cohortsql.FairnessResult`)."""

    @property
    def groups(self) -> pl.DataFrame: ...
    @property
    def metrics(self) -> pl.DataFrame: ...
    @property
    def decisions(self) -> str: ...


AUDIT_PROXIES = 3
"""Features listed per group of a protected attribute in the audit section (the strongest |Phi_Ak|)."""


def audit_section(audit: Audited, whose: tuple[str, bool], targets: int) -> str:
    """The audit in words, each group's value of its protected attribute with its interval, and the
    tables behind them, saying whose they are when the `targets` are not every row (`whose`: the
    report's words for them, and whether they were chosen)."""
    said = audit.summary()
    own = said[: said.index("")] if "" in said else said  # the fairness metrics have a section of their own
    words = "".join(f"<li>{escape(line.strip())}</li>" for line in own if not line.startswith(" "))
    groups = audit.groups
    labels = [group_name(row["protected"], row["label"]) for row in groups.iter_rows(named=True)]
    low = groups["value_ci_low"].to_list() if "value_ci_low" in groups.columns else [math.nan] * groups.height
    high = groups["value_ci_high"].to_list() if "value_ci_high" in groups.columns else [math.nan] * groups.height
    caption = f"the attribute's mean value over the group's targets (in {audit.outcome}'s units)"
    chart = svg.intervals(labels, groups["value"].to_list(), low, high, caption)
    rows = []
    for row, start, end in zip(groups.iter_rows(named=True), low, high):
        interval = f"{start:+.4g} to {end:+.4g}" if _finite(start) and _finite(end) else "–"
        gap, share = _with_interval(row, "gap", "+.4g"), _with_interval(row, "share_of_gap", ".1%")
        few = " (few)" if row["count"] < SMALL_GROUP else ""
        rows.append(
            f"<tr><td>{escape(row['protected'])}</td><td>{escape(row['label'])}</td>"
            f'<td class="num">{row["count"]:,}{few}</td><td class="num">{row["rows"]:,}</td>'
            f'<td class="num">{row["value"]:+.4g}</td>'
            f'<td class="num">{interval}</td><td class="num">{gap}</td><td class="num">{share}</td></tr>'
        )
    proxies = audit.proxies.group_by("protected", "label", maintain_order=True).head(AUDIT_PROXIES)
    acts = "".join(
        f"<li><b>{escape(group_name(row['protected'], row['label']))}</b> with {escape(row['feature'])}:"
        f" {row['interaction']:+.4g}</li>"
        for row in proxies.iter_rows(named=True)
    )
    return (
        "<p>Each protected attribute is a feature of the cohorts, whether or not the model read it. Its"
        " value for a target is how far similarity on it moves the target's cohort mean; a model that"
        " never saw it can still be credited when it tracks the features the model used (the paper's"
        " audit for indirect inference). This is association in the table, not causation, and it depends"
        " on the similarity chosen for every feature.</p>"
        f"<ul>{words}</ul><h3>Mean value of the attribute per group, with its interval</h3><p>Intervals: {escape(BIAS_CORRECTED)}.</p>{chart}"
        '<table class="sortable"><thead><tr><th>attribute</th><th>group</th><th>targets</th><th>rows</th>'
        "<th>value</th><th>interval</th><th>gap (the group's mean prediction − the mean, over every row)</th>"
        "<th>share of the gap</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        "<p>A share of the gap is given (else –) only where the gap's interval excludes 0: the share of a"
        f" gap that may be 0 could be any number. Groups of fewer than {SMALL_GROUP} targets are marked"
        " (few): their means rest on a handful of rows.</p>"
        + _audit_targets(whose, targets, audit.fairness is not None)
        + "<h3>Through which features</h3><p>The group's mean Shapley interaction value of the attribute with"
        " each feature (half the interaction index): positive when, over the orders in which features join"
        " the cohort, the attribute moves the cohort mean further up (or less far down) once that feature is"
        " in the cohort; the attribute's value is its main term plus these.</p>"
        f"<ul>{acts}</ul>" + ("" if audit.fairness is None else _fairness(audit.fairness))
    )


def _audit_targets(whose: tuple[str, bool], count: int, fairness: bool) -> str:
    """Whose groups these are, when the targets are not every row (the fairness metrics count every row)."""
    words, chosen = whose
    if not words:
        return ""
    kind = "chosen" if chosen else "randomly sampled"
    also = " and the fairness metrics below" if fairness else ""
    return (
        f"<p>The groups' values (and their targets) are over this run's {count:,} {kind} targets, not every"
        f" row; their rows and gaps{also} count every row.</p>"
    )


FAIRNESS_RATES = {
    "selection_rate": "selected",
    "true_positive_rate": "true positive rate",
    "false_positive_rate": "false positive rate",
}


def _fairness(fair: Fair) -> str:
    """The decisions' group fairness metrics over every row: each group's rates with their intervals,
    and the metrics between groups, in fairlearn's names."""

    shown = [name for name in FAIRNESS_RATES if name in fair.groups.columns]
    rows = "".join(
        f'<tr><td>{escape(group_name(row["protected"], row["label"]))}</td><td class="num">{row["rows"]:,}</td>'
        + "".join(f'<td class="num">{_with_interval(row, name, ".1%")}</td>' for name in shown)
        + "</tr>"
        for row in fair.groups.iter_rows(named=True)
    )
    metrics = "".join(
        f"<li>{escape(row['protected'])}: {escape(row['metric'].replace('_', ' '))} {row['value']:.4g}"
        + (
            f" ({row['ci_low']:.4g} to {row['ci_high']:.4g})"
            if _finite(row["ci_low"]) and _finite(row["ci_high"])
            else ""
        )
        + "</li>"
        for row in fair.metrics.iter_rows(named=True)
    )
    heads = "".join(f"<th>{FAIRNESS_RATES[name]}</th>" for name in shown)
    return (
        f"<h3>Fairness of the decisions ({escape(fair.decisions)}), over every row</h3>"
        "<p>fairlearn's group metrics: the share of each group's rows that were selected, and with observed"
        " outcomes the shares selected among the rows whose outcome was positive (true positive rate) and"
        " negative (false positive rate), with Bayesian-bootstrap intervals. They describe the decisions,"
        " not why they were made.</p>"
        f"<ul>{metrics}</ul>"
        f'<table class="sortable"><thead><tr><th>group</th><th>rows</th>{heads}</tr></thead><tbody>{rows}</tbody></table>'
    )


def _finite(value: object) -> bool:
    """A number to show (not None, NaN or infinite)."""
    return isinstance(value, (int, float)) and math.isfinite(value)


def _with_interval(row: dict[str, Any], name: str, form: str) -> str:
    """Column `name` of `row` in `form`, with its interval (``<name>_ci_low`` .. ``_high``) when both
    ends are numbers; a dash when the value is none."""
    value, low, high = row.get(name), row.get(f"{name}_ci_low"), row.get(f"{name}_ci_high")
    if not _finite(value):
        return "–"
    return format(value, form) + (f" ({low:{form}} to {high:{form}})" if _finite(low) and _finite(high) else "")
