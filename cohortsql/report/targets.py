"""The report's targets: the table of every target with its top reasons (at most `TABLE_TARGETS`
of them), the links to the targets drawn in detail, and each drawn target's own section (a waterfall
from the mean to its cohort mean, and its refinement path)."""

from __future__ import annotations

from html import escape
from typing import Any

import numpy as np
import polars as pl

from cohortsql.errors import CohortError
from cohortsql.formats.tables import reason, shown_value
from cohortsql.report import svg

SHOWN_TARGETS = 3
"""Targets drawn in detail when none are chosen: the lowest, the median and the highest prediction."""
REASONS = 3
TABLE_TARGETS = 10_000
"""The targets table lists at most this many targets (those whose values move furthest from the
mean), so that the file stays a few megabytes; the result's files hold them all."""


def reasons_table(local: pl.DataFrame, count: int) -> pl.DataFrame:
    """Each target's top `count` reasons in words, joined: ``id`` and ``reasons``."""
    ranked = local.with_columns(size=pl.col("shapley").abs()).sort(["id", "size"], descending=[False, True])
    top = ranked.group_by("id", maintain_order=True).head(count)
    words = top.with_columns(reason=reason())
    return words.group_by("id", maintain_order=True).agg(reasons=pl.col("reason").str.join("; "))


def _target_anchor(id: Any) -> str:
    """The HTML id of a target's own section: its id, every character but ASCII letters and digits
    written as its code point (``a b`` is ``target-a_20_b``), so that distinct ids stay distinct."""
    return "target-" + "".join(
        character if character.isascii() and character.isalnum() else f"_{ord(character):x}_" for character in str(id)
    )


def drawn_targets(chosen: list[Any]) -> str:
    """Links to the targets drawn in detail after the table (which may hold thousands of rows)."""
    if not chosen:
        return ""
    links = ", ".join(f'<a href="#{_target_anchor(id)}">{escape(str(id))}</a>' for id in chosen)
    return f"<p>Drawn in detail below the table: target {links}.</p>"


def targets_table(totals: pl.DataFrame, local: pl.DataFrame) -> str:
    """Every target of `totals` (at most `TABLE_TARGETS`, those furthest from the mean) with its top
    reasons from its `local` values, searchable."""
    table = totals
    note = ""
    if table.height > TABLE_TARGETS:
        kept = table.with_row_index("__order").sort(pl.col("value").abs(), descending=True).head(TABLE_TARGETS)
        table = kept.sort("__order").drop("__order")
        note = (
            f"<p>The {TABLE_TARGETS:,} targets (of {totals.height:,}) whose cohort means lie furthest from"
            " the mean; the result's files hold every target.</p>"
        )
    local = local.join(table.select("id"), on="id", how="semi")
    table = table.join(reasons_table(local, REASONS), on="id", how="left", maintain_order="left")
    rows = "".join(
        f'<tr><td>{escape(str(row["id"]))}</td><td class="num">{row["prediction"]:.4g}</td>'
        f'<td class="num">{row["cohort_size"]:,.0f}</td><td class="num">{row["cohort_mean"]:.4g}</td>'
        f"<td>{escape(row['reasons'] or '')}</td></tr>"
        for row in table.iter_rows(named=True)
    )
    return note + (
        '<p class="js-only"><input id="search" type="search" placeholder="Search ids, features, values…"'
        ' aria-label="search the targets"> <span id="shown"></span></p>'
        f'<table id="target-table" class="sortable" data-rows="{table.height}"><thead><tr><th>id</th><th>prediction</th>'
        f"<th>cohort size</th><th>cohort mean</th><th>top {REASONS} reasons</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def chosen_targets(totals: pl.DataFrame, targets: list[Any] | None) -> list[Any]:
    """The targets drawn in detail: `targets` (ids, or their text), else the lowest, median and highest prediction."""
    ids = totals["id"].to_list()
    if targets is not None:
        # Ids typed on the command line arrive as text: match them by their text too.
        known = {**{str(id): id for id in ids}, **{id: id for id in ids}}
        unknown = [id for id in targets if id not in known]
        if unknown:
            raise CohortError(f"report targets {unknown[:5]!r} are not targets of this result")
        return [known[id] for id in targets]
    order = np.argsort(totals["prediction"].to_numpy(), kind="stable")
    picks = [order[0], order[len(order) // 2], order[-1]][: min(SHOWN_TARGETS, len(order))]
    return list(dict.fromkeys(ids[index] for index in picks))


def target_section(
    tables: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame], id: Any, mean: float, colours: dict[str, str]
) -> str:
    """Target `id` drawn in detail from its result's `tables` (totals, paths, local values): its
    waterfall from the `mean` to its cohort mean, and its refinement path."""
    totals, paths, local = tables
    total = totals.filter(pl.col("id") == id).row(0, named=True)
    path = paths.filter(pl.col("id") == id).sort("step")
    values = local.filter(pl.col("id") == id).with_columns(feature_value=shown_value())
    by_feature = {row["feature"]: row for row in values.iter_rows(named=True)}
    steps = [
        (
            row["feature"],
            by_feature[row["feature"]]["feature_value"] or "missing",
            by_feature[row["feature"]]["shapley"],
        )
        for row in path.iter_rows(named=True)
        if row["feature"] is not None
    ]
    waterfall = svg.waterfall(mean, steps, total["cohort_mean"], [colours.get(step[0], "#777") for step in steps])
    labels = ["every subject"] + [f"+ {step[0]}" for step in steps]
    refinement = svg.refinement(
        labels, path["cohort_size"].to_list(), path["cohort_mean"].to_list(), total["prediction"]
    )
    return (
        f'<section class="target" id="{_target_anchor(id)}"><h2>Target {escape(str(id))}</h2>'
        f"<p>prediction {total['prediction']:.4g}; cohort of {total['cohort_size']:,.0f} similar"
        f" subject{'' if total['cohort_size'] == 1 else 's'} with mean"
        f" {total['cohort_mean']:.4g}; the values add up to {total['value']:.4g}.</p>"
        f"<h3>From the mean to the cohort mean</h3>{waterfall}<h3>Cohort refinement</h3>{refinement}</section>"
    )
