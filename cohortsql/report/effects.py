"""The HTML report of a Shapley effects result (`cohortsql.ShapleyEffects.report`): the effects with
their standard errors and intervals, how much of the variance the cohorts explain, and the run's
settings and diagnostics; no target is drawn, since an effects run keeps none."""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Protocol

import polars as pl

from cohortsql.formats.colours import feature_colours, run_feature_order
from cohortsql.formats.files import write_text
from cohortsql.formats.settings import Settings
from cohortsql.report import _asset, _plain, _section, _setting, check_report_path, effects_section, over_whom


class EffectsReported(Protocol):
    """What the report reads of an effects result (`cohortsql.ShapleyEffects` has it all)."""

    @property
    def effects(self) -> pl.DataFrame: ...
    @property
    def explained(self) -> float: ...
    @property
    def variance(self) -> float: ...
    @property
    def subjects(self) -> int: ...
    @property
    def targets(self) -> int: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def diagnostics(self) -> object: ...


def write_effects_report(result: EffectsReported, path: str | os.PathLike[str], title: str | None = None) -> Path:
    """Write the report of the effects `result` to `path` (.html)."""
    target = check_report_path(Path(path))
    write_text(effects_report_html(result, title), target)
    return target


def effects_report_html(result: EffectsReported, title: str | None = None) -> str:
    """The effects report as one HTML document."""
    settings = dict(result.settings)
    name = title or f"Shapley effects: {_plain(settings.get('prediction', 'prediction'))}"
    whom = over_whom(settings, result.targets, result.targets)
    share = result.explained / result.variance if result.variance > 0 else float("nan")
    summary = (
        f"{result.targets:,} targets of {result.subjects:,} subjects, {result.effects.height} features. The cohorts on"
        f" every feature explain {result.explained:.4g} of the variance {result.variance:.4g} ({share:.1%}); the"
        " effects split that among the features."
    )
    # each feature in the colour it has in every other figure of the run: by the run's order, not its rank
    colours = feature_colours(run_feature_order(settings, result.effects["feature"].to_list()))
    diagnostics = result.diagnostics if isinstance(result.diagnostics, dict) else {}
    rows = sorted(settings.items()) + [
        (key.replace("_", " "), f"{value:.1%}" if key.endswith("share") else f"{value:,.0f}")
        for key, value in diagnostics.items()
        if key in ("singleton_share", "median_cohort_size") and isinstance(value, (int, float))
    ]
    cells = "".join(
        f"<tr><th>{escape(key.replace('_', ' '))}</th><td>{_setting(value)}</td></tr>" for key, value in rows
    )
    body = [
        f"<header><h1>{escape(name)}</h1><p>{escape(summary)}</p></header>",
        _section(
            "Shapley effects of these targets" if whom[1] else "Shapley effects",
            effects_section(result.effects, whom, colours, settings.get("confidence")),
            "effects",
        ),
        _section("Settings and diagnostics", f'<table class="settings">{cells}</table>', "settings"),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width"><title>{escape(name)}</title>'
        f"<style>{_asset('report.css')}</style></head><body>{''.join(body)}"
        f"<script>{_asset('report.js')}</script></body></html>\n"
    )
