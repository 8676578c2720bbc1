"""Figures of wide tables: a target's insertion and deletion curves (the tests of an attribution's
order), and a target's values laid out on a grid (an image's pixels as features)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from cohortsql.errors import CohortError
from cohortsql.plot.tables import pyplot

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from cohortsql.results.cohort import CohortShapleyResult
    from cohortsql.results.insertion import InsertionDeletion


def insertion_deletion(result: InsertionDeletion, id: Any) -> Figure:
    """Target `id`'s insertion curve (the cohort mean as its features are required similar, in the
    attribution's order) and deletion curve (as they stop being required), each with the straight line
    between its ends, whose area between is the test's ABC."""
    if id not in result.abc["id"].to_list():  # any type of id: a filter would fail comparing text with numbers
        raise CohortError(f"target {id!r} is not a target of this test")
    curves = result.curves.filter(pl.col("id") == id)
    abc = result.abc.filter(pl.col("id") == id).row(0, named=True)
    steps = curves["step"].to_numpy()
    plt = pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for axis, name, sign in ((axes[0], "insertion", 1), (axes[1], "deletion", -1)):
        points = curves[name].to_numpy()
        axis.plot(steps, points, marker="o", markersize=3, label=f"{name} (ABC {abc[f'{name}_abc']:+.4g})")
        axis.plot([steps[0], steps[-1]], [points[0], points[-1]], linestyle="--", color="grey", linewidth=1)
        axis.fill_between(steps, points, np.interp(steps, [steps[0], steps[-1]], [points[0], points[-1]]), alpha=0.15)
        axis.set_xlabel("features " + ("required similar" if sign > 0 else "no longer required"))
        axis.set_title(f"{name} curve of target {id!r}", fontsize=10)
        axis.legend(fontsize=8)
    axes[0].set_ylabel(f"cohort mean of {result.outcome}")
    figure.tight_layout()
    return figure


def grid(result: CohortShapleyResult, id: Any, *, shape: Sequence[int], squared: bool = False) -> Figure:
    """Target `id`'s values (or `squared` values) on a grid of `shape` (rows, columns) in the features'
    order: an image's pixels as features (e.g. 8 x 8 for scikit-learn's digits), red raising the
    cohort mean and blue lowering it."""
    rows, columns = shape
    if rows * columns != len(result.features):
        raise CohortError(f"shape {tuple(shape)} holds {rows * columns} cells, not the {len(result.features)} features")
    values = (result.shapley_squared if squared else result.shapley)[result.index_of(id)].reshape(rows, columns)
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(4.2, 3.8))
    limit = float(np.abs(values).max(initial=0.0)) or 1.0
    image = axes.imshow(values, cmap="RdBu_r", vmin=-limit, vmax=limit)
    axes.set_xticks([])
    axes.set_yticks([])
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
    what = "squared-game values" if squared else "values"
    axes.set_title(f"{result.method} {what} of target {id!r}", fontsize=10)
    figure.tight_layout()
    return figure
