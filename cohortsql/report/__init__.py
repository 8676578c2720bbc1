"""A self-contained HTML report of a cohort Shapley run, to send to people who will not run Python.

One file, no network access needed: the styles, the script and every chart (SVG) are inline. It holds
the run's settings and diagnostics, the Shapley effects with standard errors, the top drivers, a
table of every target with its top reasons (searchable and sortable with scripts, complete without
them), and for chosen targets a waterfall from the mean to the cohort mean and the refinement path.
It is built from the result's tables, so a result object and the files ``cohortsql shapley --out``
writes give the same report.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import polars as pl

from cohortsql.errors import CohortError
from cohortsql.formats.colours import feature_colours
from cohortsql.formats.files import companions, one_outcome, parquet_settings, read_frame, sibling_path, write_text
from cohortsql.formats.settings import Settings
from cohortsql.formats.tables import (
    BIAS_CORRECTED,
    SINGLETON_WARNING_SHARE,
    effect_floors,
    effects_of_tables,
    rounded,
)
from cohortsql.report import svg
from cohortsql.report.audit import Audited, audit_section
from cohortsql.report.targets import chosen_targets, drawn_targets, target_section, targets_table


class Reported(Protocol):
    """What a report reads of a result (`cohortsql.CohortShapleyResult` has it all)."""

    @property
    def local(self) -> pl.DataFrame: ...
    @property
    def totals(self) -> pl.DataFrame: ...
    @property
    def paths(self) -> pl.DataFrame: ...
    @property
    def global_(self) -> pl.DataFrame: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def interactions(self) -> np.ndarray | None: ...
    @property
    def interaction_table(self) -> pl.DataFrame: ...
    @property
    def owen(self) -> np.ndarray | None: ...
    @property
    def groups(self) -> dict[str, tuple[str, ...]] | None: ...
    @property
    def owen_table(self) -> pl.DataFrame: ...


@dataclass(frozen=True)
class ReportTables:
    """What a report is made of: the long table, per-target totals, refinement paths, effects, settings."""

    local: pl.DataFrame
    totals: pl.DataFrame
    paths: pl.DataFrame
    effects: pl.DataFrame
    settings: Settings
    interactions: pl.DataFrame | None = None
    """With ``interactions=True``: id, feature, other, interaction (`CohortShapleyResult.interaction_table`)."""
    owen: pl.DataFrame | None = None
    """With ``group_values="owen"``: id, group, feature, owen (`CohortShapleyResult.owen_table`)."""
    audit: Audited | None = None
    """An audit's tables (`cohortsql.AuditResult`), shown first as the "Audit" section."""

    def with_audit(self, audit: Audited) -> ReportTables:
        """These tables with an audit's (the report of `cohortsql.audit`)."""
        return dataclasses.replace(self, audit=audit)

    @classmethod
    def of_result(cls, result: Reported) -> ReportTables:
        return cls(
            result.local,
            result.totals,
            result.paths,
            result.global_,
            dict(result.settings),
            result.interaction_table if result.interactions is not None else None,
            result.owen_table if result.owen is not None and result.groups is not None else None,
        )

    @classmethod
    def of_files(
        cls, path: str | os.PathLike[str], effects: str | os.PathLike[str] | None = None, outcome: str | None = None
    ) -> ReportTables:
        """The files ``cohortsql shapley --out PATH`` wrote (PATH, PATH_totals, PATH_paths), and optionally
        the file ``cohortsql effects --out`` wrote (else the effects are the mean Shapley values of the squared game); of a
        run that explained several columns, those of `outcome`."""
        role = f"report, from the files `cohortsql shapley --out {Path(path).name}` writes"
        local = read_frame(path, role)
        missing = {"id", "feature", "feature_value", "shapley", "shapley_squared"} - set(local.columns)
        if missing:
            raise CohortError(f"{str(path)!r} is not a `cohortsql shapley` output: it has no {sorted(missing)}")
        totals = read_frame(sibling_path(path, "totals"), role)
        paths = read_frame(sibling_path(path, "paths"), role)
        local, totals, paths = one_outcome([local, totals, paths], outcome, repr(str(path)))
        settings = parquet_settings(path)
        if outcome is not None:
            settings["prediction"] = outcome
        if effects is None:
            table = effects_of_tables(local, totals, paths, settings)
        else:
            table = read_frame(effects, "report, from the file `cohortsql effects --out` writes")
            if "shapley_effect" not in table.columns:
                raise CohortError(f"{str(effects)!r} is not a `cohortsql effects` output: it has no shapley_effect")
            (table,) = one_outcome([table], outcome, repr(str(effects)))
        written = companions(path)  # None: a file from before the list; then what lies beside it
        beside = {
            label: one_outcome([read_frame(sibling_path(path, label), role)], outcome, label)[0]
            if (label in written if written is not None else sibling_path(path, label).is_file())
            else None
            for label in ("interactions", "owen")
        }
        return cls(local, totals, paths, table, settings, beside["interactions"], beside["owen"])


def write_report(
    tables: ReportTables, path: str | os.PathLike[str], targets: list[Any] | None = None, title: str | None = None
) -> Path:
    """Write the report of `tables` to `path` (.html), drawing `targets` (ids) in detail."""
    target = check_report_path(Path(path))
    write_text(report_html(tables, targets, title), target)
    return target


def check_report_path(target: Path) -> Path:
    """`target` when a report can be written there (an .html file in a directory that exists)."""
    if target.suffix.lower() not in (".html", ".htm"):
        raise CohortError(f"cannot write {str(target)!r}: a report is an .html file")
    if not target.parent.is_dir():
        raise CohortError(f"cannot write {str(target)!r}: the directory {str(target.parent)!r} does not exist")
    return target


def report_html(tables: ReportTables, targets: list[Any] | None = None, title: str | None = None) -> str:
    """The report as one HTML document."""
    features = tables.local["feature"].unique(maintain_order=True).to_list()
    colours = feature_colours(features)
    chosen = chosen_targets(tables.totals, targets)
    mean = float(np.mean(tables.totals["cohort_mean"].to_numpy() - tables.totals["value"].to_numpy()))
    name = title or f"cohort Shapley: {_plain(tables.settings.get('prediction', 'prediction'))}"
    body = [
        f"<header><h1>{escape(name)}</h1><p>{_summary(tables, features, mean)}</p></header>",
        *(
            [_section("Audit", audit_section(tables.audit, _over_whom(tables), sampled_targets(tables)), "audit")]
            if tables.audit is not None
            else []
        ),
        _section("Settings and diagnostics", _settings(tables), "settings"),
        _section(
            "Shapley effects of these targets" if _over_whom(tables)[1] else "Shapley effects",
            effects_section(tables.effects, _over_whom(tables), colours, tables.settings.get("confidence")),
            "effects",
        ),
        _section("Top drivers", _drivers(tables, colours), "drivers"),
        *([_section("Groups of features", _groups(tables.owen), "groups")] if tables.owen is not None else []),
        *(
            [_section("Interactions", _interactions(tables.interactions), "interactions")]
            if tables.interactions is not None
            else []
        ),
        _section("Targets", drawn_targets(chosen), "targets"),
        *(target_section((tables.totals, tables.paths, tables.local), id, mean, colours) for id in chosen),
        # the table of every target last: the drawn targets' sections come before it, not below it
        _section("Every target", targets_table(tables.totals, tables.local), "every-target"),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width"><title>{escape(name)}</title>'
        f"<style>{_asset('report.css')}</style></head><body>{''.join(body)}"
        f"<script>{_asset('report.js')}</script></body></html>\n"
    )


def _asset(name: str) -> str:
    return resources.files("cohortsql.report").joinpath(name).read_text(encoding="utf-8")


def _section(heading: str, content: str, anchor: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(heading)}</h2>{content}</section>'


def _summary(tables: ReportTables, features: list[str], mean: float) -> str:
    subjects = tables.paths.filter(pl.col("step") == 0)["cohort_size"]
    count = int(subjects[0]) if len(subjects) else 0
    sizes = tables.totals["cohort_size"].to_numpy()
    alone = float(np.mean(sizes <= 1)) if len(sizes) else 0.0
    caveat = (
        f" {alone:.0%} of the targets are alone in their cohort on every feature: their values rest on single"
        " rows, and small cohorts give any feature that splits them a share; widen the windows or use fewer"
        " features (and read each share against its floor: null=19)."
        if alone > SINGLETON_WARNING_SHARE
        else ""
    )
    return escape(
        f"{tables.totals.height:,} targets × {len(features)} features, {count:,} subjects; mean {mean:.4g}."
        " Each value is how much a feature moves the target's cohort mean (subjects similar to it) away from the mean."
        + caveat
    )


def _settings(tables: ReportTables) -> str:
    sizes = tables.totals["cohort_size"].to_numpy()
    rows = sorted(tables.settings.items())
    rows += [
        ("targets alone in their cohort", f"{np.mean(sizes <= 1):.1%}"),
        ("median cohort size", f"{np.median(sizes):,.0f}"),
    ]
    if np.mean(sizes <= 1) > 0.5:
        rows.append(("caution", "more than half of the targets are alone in their cohort: values rest on single rows"))
    cells = "".join(
        f"<tr><th>{escape(key.replace('_', ' '))}</th><td>{_setting(value)}</td></tr>" for key, value in rows
    )
    return f'<table class="settings">{cells}</table>'


def _setting(value: object) -> str:
    """A setting as people read it (HTML): None as a dash, a mapping one ``key: value`` line each, a
    list joined by commas."""
    if isinstance(value, dict):
        return "<br>".join(f"{escape(str(key))}: {escape(_plain(item))}" for key, item in value.items())
    return escape(_plain(value))


def _plain(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(_plain(item) for item in value)
    return "–" if value is None else str(value)


def sampled_targets(tables: ReportTables) -> int:
    """How many targets the averages are over: every target but the ids explained beside a random
    sample by ``include=`` that it did not draw (``in_sample`` false)."""
    if "in_sample" in tables.totals.columns:
        return int(tables.totals["in_sample"].sum())
    return tables.totals.height


def _over_whom(tables: ReportTables) -> tuple[str, bool]:
    """Whose effects these are, in words, and whether they are only some chosen targets' (`over_whom`)."""
    return over_whom(tables.settings, sampled_targets(tables), tables.totals.height)


def over_whom(settings: Mapping[str, Any], count: int, explained: int) -> tuple[str, bool]:
    """Whose effects these are, in words, and whether they are only some chosen targets' (ids or a
    predicate), which say nothing about the population: nothing to say when every row is a target (the
    settings' ``targets`` reads "every row"); a random sample's (of `count` targets; `explained` with
    the ids asked for beside it) are estimates of the population's."""
    targets = "every row" if settings.get("targets") is None else str(settings["targets"])
    sample = settings.get("sample")
    if sample is not None or targets.lstrip("-").replace(".", "").isdigit():
        included = explained - count
        beside = (
            f"; {included:,} more asked for beside it (include=) {'is' if included == 1 else 'are'} shown but"
            " count in no average"
            if included
            else ""
        )
        return f", estimated from a random sample of {count:,} targets (with its standard error){beside}", False
    if targets == "every row":
        return "", False
    return (
        f", over this run's {count:,} chosen target{'' if count == 1 else 's'} only: their own spread around the"
        " overall mean, not the population's"
    ), True


def effects_section(
    effects: pl.DataFrame, whom: tuple[str, bool], colours: dict[str, str], confidence: float | None
) -> str:
    """The effects as bars with their standard errors, and a table with the standard errors (0 where
    every row was a target, so there is no sampling error, said in a note) and the bootstrap intervals
    when the run has them; `whom` says whose effects they are (`over_whom`)."""
    table = effects.sort("shapley_effect", descending=True)
    labels = table["feature"].to_list()
    errors = (
        table["shapley_effect_se"].fill_nan(0).fill_null(0).to_list() if "shapley_effect_se" in table.columns else None
    )
    floors = effect_floors(table)
    chart = svg.bars(
        labels, table["shapley_effect"].to_list(), errors, [colours.get(f, "#777") for f in labels], "", floors
    )
    intervals = "shapley_effect_ci_low" in table.columns
    rows = "".join(
        f'<tr><td>{escape(row["feature"])}</td><td class="num">{row["shapley_effect"]:.4g}</td>'
        f'<td class="num">{_standard_error(row.get("shapley_effect_se"))}</td>'
        + (
            f'<td class="num">[{row["shapley_effect_ci_low"]:.4g}, {row["shapley_effect_ci_high"]:.4g}]</td>'
            if intervals
            else ""
        )
        + f'<td class="num">{row.get("share") or 0:.1%}</td>'
        + (_floor_cells(row) if floors is not None else "")
        + "</tr>"
        for row in table.iter_rows(named=True)
    )
    level = f"{float(confidence):.0%} " if confidence else ""
    interval_head = f"<th>{level}interval</th>" if intervals else ""
    note = ""
    if whom[1]:
        note = (
            "<p>The standard errors treat these targets as if drawn at random: they were chosen, so they say"
            " how far the mean of targets like these could move, not how far the population's is.</p>"
        )
    elif not any(errors or []):
        note = (
            "<p>Every row is a target, so the effects have no sampling error: their standard errors are 0"
            + ("; the intervals are the data's own uncertainty (Bayesian bootstrap)." if intervals else ".")
            + "</p>"
        )
    if intervals:
        note += (
            f"<p>The intervals are {escape(BIAS_CORRECTED)}: a squared quantity's replicates lie above it when"
            " most cohorts are a row or two, and a plain percentile interval can then miss its own estimate.</p>"
        )
    if floors is not None:
        note += (
            "<p>The dark tick on a bar is its feature's floor: the share that shuffled copies of the feature (its"
            " values permuted across the rows, so related to nothing) stay at or under. Small cohorts give any"
            " column that splits them a share of their noise; a share at its floor (p above 1 − the confidence)"
            " is indistinguishable from a shuffled copy's, whatever its size.</p>"
        )
    return (
        "<p>Shapley effect per feature: the mean over the targets of its Shapley value of the squared game"
        " v(u)<sup>2</sup> (the paper's squared cohort Shapley value; not the mean of the values squared), and"
        f" its share of the variance explained{whom[0]}.</p>"
        + chart
        + note
        + f'<table class="sortable"><thead><tr><th>feature</th><th>effect</th><th>standard error</th>{interval_head}'
        f"<th>share</th>{'' if floors is None else '<th>floor (shuffled copies)</th><th>p</th>'}"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )


def _floor_cells(row: dict[str, Any]) -> str:
    if row.get("p_value") is None:
        return '<td class="num">–</td><td class="num">–</td>'
    return f'<td class="num">{row["null_share_high"]:.1%}</td><td class="num">{row["p_value"]:.2g}</td>'


def _standard_error(error: float | None) -> str:
    """A standard error in 2 digits as Python holds it (0 when every row was a target: the note above
    the table says why), or a dash where there is none."""
    return "–" if error is None or error != error else f"{error:.2g}"


def _drivers(tables: ReportTables, colours: dict[str, str]) -> str:
    """Each feature's mean |value| over the run's targets that count in averages (not the ids included
    beside a sample), said to be theirs when they were chosen."""
    local = tables.local
    if "in_sample" in tables.totals.columns:
        local = local.join(tables.totals.filter(pl.col("in_sample")).select("id"), on="id", how="semi")
    table = (
        local.group_by("feature", maintain_order=True)
        .agg(
            mean_abs=pl.col("shapley").abs().mean(),
            raised=(pl.col("shapley") > 0).mean(),
        )
        .sort("mean_abs", descending=True)
    )
    labels = table["feature"].to_list()
    chart = svg.bars(labels, table["mean_abs"].to_list(), None, [colours.get(f, "#777") for f in labels], "")
    notes = "".join(
        f"<li><b>{escape(row['feature'])}</b>: moves a target's cohort mean by {row['mean_abs']:.3g} on average;"
        f" raises it for {row['raised']:.0%} of the targets</li>"
        for row in table.head(5).iter_rows(named=True)
    )
    count = sampled_targets(tables)
    chosen = _over_whom(tables)[1]
    over = (
        f" over this run's {count:,} chosen target{'' if count == 1 else 's'} only"
        if chosen
        else f" over the {count:,} targets" + (" of the sample" if count < tables.totals.height else "")
    )
    return f"<p>Mean |cohort Shapley value| per feature{over}.</p>" + chart + f"<ul>{notes}</ul>"


SHOWN_PAIRS = 10
"""Pairs of features listed in the report's interactions section (the heat map shows every pair)."""


def _interactions(table: pl.DataFrame) -> str:
    """Every pair's mean |Shapley interaction value| over the targets as a heat map (the diagonal: each
    feature's own main effect), and the pairs that interact most, in words."""
    mean = table.group_by("feature", "other", maintain_order=True).agg(
        mean_abs=pl.col("interaction").abs().mean(), mean=pl.col("interaction").mean()
    )
    features = mean["feature"].unique(maintain_order=True).to_list()
    matrix = {(row["feature"], row["other"]): row["mean_abs"] for row in mean.iter_rows(named=True)}
    chart = svg.heatmap(features, [[matrix.get((a, b), 0.0) for b in features] for a in features])
    pairs = (
        mean.filter(pl.col("feature") < pl.col("other"))
        .sort("mean_abs", descending=True)
        .head(SHOWN_PAIRS)
        .iter_rows(named=True)
    )
    largest = float(
        mean["mean_abs"].fill_null(0.0).to_numpy().max(initial=0.0)
    )  # what rounding noise is measured against
    items = "".join(
        f"<li><b>{escape(row['feature'])} × {escape(row['other'])}</b>: {row['mean_abs']:.3g} on average,"
        f" a signed mean of {rounded(row['mean'], largest, signed=True)}</li>"
        for row in pairs
    )
    return (
        "<p>Shapley interaction values in shap's convention: off the diagonal half the interaction index of"
        " the pair, on it each feature's value less its interactions, so that a feature's row adds up to its"
        " cohort Shapley value. The heat map shows the mean |value| over the targets.</p>" + chart + f"<ul>{items}</ul>"
    )


def _groups(table: pl.DataFrame) -> str:
    """Each group's mean |value| over the targets, and how its members share it (their Owen values)."""
    members = table.group_by("group", "feature", maintain_order=True).agg(
        mean=pl.col("owen").mean(), mean_abs=pl.col("owen").abs().mean()
    )
    groups = table.group_by("id", "group", maintain_order=True).agg(value=pl.col("owen").sum())
    group_sizes = groups.group_by("group", maintain_order=True).agg(mean_abs=pl.col("value").abs().mean())
    rows = "".join(
        f"<tr><td>{escape(row['group'])}</td><td>{escape(row['feature'])}</td>"
        f'<td class="num">{row["mean_abs"]:.4g}</td><td class="num">{row["mean"]:+.4g}</td></tr>'
        for row in members.iter_rows(named=True)
    )
    labels = group_sizes["group"].to_list()
    chart = svg.bars(labels, group_sizes["mean_abs"].to_list(), None, ["#777"] * len(labels), "")
    return (
        "<p>Each group is one player, similar when all of its members are; its value is split among its"
        " members by their Owen values (marginal contributions over the orders that keep each group"
        " together). Mean |value| of each group over the targets:</p>"
        + chart
        + '<table class="sortable"><thead><tr><th>group</th><th>feature</th><th>mean |Owen value|</th>'
        f"<th>mean Owen value</th></tr></thead><tbody>{rows}</tbody></table>"
    )
