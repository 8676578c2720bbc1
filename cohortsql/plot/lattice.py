"""Figures of what the lattice of cohorts gives beyond the values: pairwise interactions as a heat map,
and grouped features' effects as one bar per group split into its members' Owen effects."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from cohortsql.errors import CohortError
from cohortsql.formats.colours import feature_colours, run_feature_order
from cohortsql.plot.tables import chosen_outcome, pyplot
from cohortsql.results.cohort import CohortShapleyResult
from cohortsql.results.effects import ShapleyEffects
from cohortsql.results.outcomes import CohortShapleyResults, ShapleyEffectsResults

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def interactions(
    source: CohortShapleyResult | CohortShapleyResults | ShapleyEffects | ShapleyEffectsResults,
    id: object = None,
    *,
    outcome: str | None = None,
) -> Figure:
    """A heat map of interaction values (a run with ``interactions=True``): of one target's matrix
    (`id`), of the mean |Phi_ij| over the targets (weighted), or of the variance game's values for
    effects. The diagonal (each feature's value less its interactions) is left blank; every cell is
    written, so the map reads without its colour scale."""
    if isinstance(source, (CohortShapleyResults, ShapleyEffectsResults)):
        source = source[chosen_outcome(source.outcomes, outcome)]
    if source.interactions is None:
        raise CohortError("this result has no interaction values: run it with interactions=True")
    if isinstance(source, ShapleyEffects):
        matrix, title = source.interactions, "interaction values of the variance game (effects)"
    elif id is not None:
        matrix, title = source.interactions[source.index_of(id)], f"interaction values of target {id!r}"
    else:
        matrix = np.average(np.abs(source.interactions), axis=0, weights=source.target_weights)
        title = "mean |interaction value| over the targets"
    features = list(source.features)
    shown = np.array(matrix, dtype=np.float64)
    np.fill_diagonal(shown, np.nan)
    plt = pyplot()
    size = 0.55 * len(features) + 2.2
    figure, axes = plt.subplots(figsize=(size + 1.2, size))
    limit = float(np.nanmax(np.abs(shown), initial=0.0)) or 1.0
    signed = isinstance(source, ShapleyEffects) or id is not None
    image = axes.imshow(
        shown, cmap="RdBu_r" if signed else "Blues", vmin=-limit if signed else 0.0, vmax=limit, aspect="equal"
    )
    axes.set_xticks(range(len(features)), features, rotation=45, ha="right")
    axes.set_yticks(range(len(features)), features)
    for row in range(len(features)):
        for column in range(len(features)):
            if row != column:
                axes.text(column, row, f"{shown[row, column]:.2g}", ha="center", va="center", fontsize=7)
    axes.set_title(title, fontsize=10)
    figure.colorbar(image, ax=axes, shrink=0.8)
    figure.tight_layout()
    return figure


def groups(source: ShapleyEffects | ShapleyEffectsResults, *, outcome: str | None = None) -> Figure:
    """Effects by group (a run with ``groups=`` and ``group_values="owen"``): one bar per group, the
    largest on top, split into its features' Owen effects (each labelled), which add up to the group's
    Shapley effect."""
    if isinstance(source, ShapleyEffectsResults):
        source = source[chosen_outcome(source.outcomes, outcome)]
    if source.owen_table is None:
        raise CohortError(
            'these effects have no Owen values: run shapley_effects(..., groups=..., group_values="owen")'
        )
    order = source.effects.sort("shapley_effect")["feature"].to_list()
    colours = feature_colours(run_feature_order(source.settings, source.owen_table["feature"].to_list()))
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(7, 0.45 * len(order) + 1.4))
    labelled = 0.06 * float(np.max(source.effects["shapley_effect"].to_numpy(), initial=0.0))
    for row, group in enumerate(order):
        members = source.owen_table.filter(pl.col("group") == group)
        left = 0.0
        for feature, value in members.select("feature", "owen_effect").iter_rows():
            axes.barh(row, value, left=left, color=colours[feature], edgecolor="white")
            if len(members) > 1 and abs(value) > labelled:
                axes.text(left + value / 2, row, feature, ha="center", va="center", fontsize=7)
            left += value
    axes.set_yticks(range(len(order)), order)
    axes.set_xlabel("Shapley effect of the group, split into its features' Owen effects")
    figure.tight_layout()
    return figure
