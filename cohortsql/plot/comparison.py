"""Figures of the paper's comparison: cohort, baseline and all-baseline Shapley side by side, realistic\nparts solid, and the calibration of the similarity threshold (Section 5, Appendices 4 and 5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

import numpy as np
import polars as pl

from cohortsql.errors import CohortError
from cohortsql.plot.local import stacked_bars
from cohortsql.plot.tables import pyplot
from cohortsql.results.calibration import Calibration
from cohortsql.results.comparison import Comparison


def compare_stacked(comparison: Comparison, method: str = "ABS") -> Figure:
    """Every target's values under one of CS, CS2, BS, BS2, ABS, ABS2, stacked by feature, targets
    ordered by the model's prediction, with the method's sum and cohort Shapley's sum (CS or CS2)
    over them: the paper's per-method figures of Appendix 4."""
    plt = pyplot()
    methods = ("CS", "CS2", "BS", "BS2", "ABS", "ABS2")
    if method not in methods:
        raise CohortError(f"compare_stacked draws one of {', '.join(methods)}, not {method!r}")
    values = comparison.values(method)
    cohort = comparison.values("CS2" if method.endswith("2") else "CS")
    order = np.argsort(comparison.baseline.prediction, kind="stable")
    figure, axes = plt.subplots(figsize=(10, 4.5))
    stacked_bars(plt, axes, values[order], list(comparison.features))
    x = np.arange(len(order))
    axes.plot(x, values[order].sum(axis=1), color="black", linewidth=1.2, label=f"{method} sum")
    if not method.startswith("CS"):
        axes.plot(
            x,
            cohort[order].sum(axis=1),
            color="tab:red",
            linewidth=1,
            linestyle="--",
            label=f"{'CS2' if method.endswith('2') else 'CS'} sum",
        )
    axes.axhline(0, color="grey", linewidth=0.5)
    axes.set_xlabel("targets, ordered by the model's prediction")
    axes.set_ylabel(f"{method} value")
    axes.set_xlim(-0.5, len(order) - 0.5)
    axes.legend(fontsize="small", ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    figure.tight_layout()
    return figure


def compare_global(comparison: Comparison, *, squared: bool = True) -> Figure:
    """Each feature's global importance under CS, BS and ABS side by side (squared: CS2, BS2, ABS2, the
    mean Shapley values of the squared games, with the realistic part of BS2 and ABS2 solid and the rest hatched), after
    the paper's Appendix 4 bar comparison."""
    plt = pyplot()
    methods = ("CS2", "BS2", "ABS2") if squared else ("CS", "BS", "ABS")
    table = comparison.global_
    features = list(comparison.features)
    figure, axes = plt.subplots(figsize=(max(6, 0.9 * len(features) + 2), 4))
    width = 0.8 / len(methods)
    x = np.arange(len(features))
    for index, method in enumerate(methods):
        rows = table.filter(pl.col("method") == method)
        importance = rows["importance"].to_numpy()
        realistic = rows["realistic"].to_numpy()
        position = x + (index - 1) * width
        colour = f"C{index}"
        if squared and not np.isnan(realistic.astype(float)).all() and method != "CS2":
            real = realistic.astype(float)
            axes.bar(position, real, width, color=colour, label=f"{method} realistic")
            axes.bar(
                position,
                importance - real,
                width,
                bottom=real,
                color="white",
                edgecolor=colour,
                hatch="//",
                label=f"{method} unrealistic",
            )
        else:
            axes.bar(position, importance, width, color=colour, label=method)
    axes.set_xticks(x, features, rotation=45, ha="right")
    axes.axhline(0, color="grey", linewidth=0.5)
    axes.set_ylabel("mean Shapley value of the squared game" if squared else "mean |value|")
    axes.legend(fontsize="small", ncol=2)
    figure.tight_layout()
    return figure


def compare_target(comparison: Comparison, id: object) -> Figure:
    """One target's values under CS, BS and ABS per feature, the baseline methods split into their
    realistic (solid) and unrealistic (hatched) parts: the paper's Boston subject figure."""
    plt = pyplot()
    ids = comparison.cohort.ids.to_list()
    if id not in ids:
        raise CohortError(f"{id!r} is not one of the {len(ids)} targets of this comparison")
    row = ids.index(id)
    features = list(comparison.features)
    figure, axes = plt.subplots(figsize=(max(6, 0.9 * len(features) + 2), 4))
    width = 0.27
    x = np.arange(len(features))
    for index, method in enumerate(("CS", "BS", "ABS")):
        values = comparison.values(method)[row]
        realistic = comparison.realistic(method)
        position = x + (index - 1) * width
        if realistic is None:
            axes.bar(position, values, width, color=f"C{index}", label=method)
            continue
        real = realistic[row]
        axes.bar(position, real, width, color=f"C{index}", label=f"{method} realistic")
        axes.bar(
            position,
            values - real,
            width,
            bottom=real,
            color="white",
            edgecolor=f"C{index}",
            hatch="//",
            label=f"{method} unrealistic",
        )
    axes.set_xticks(x, features, rotation=45, ha="right")
    axes.axhline(0, color="grey", linewidth=0.5)
    axes.set_ylabel("Shapley value")
    axes.set_title(f"target {id}")
    axes.legend(fontsize="small", ncol=2)
    figure.tight_layout()
    return figure


def calibration(result: Calibration) -> Figure:
    """The realistic share of held-out rows (each holdout fraction) and of marginal draws against the
    threshold, mean over the runs with their min-max band, and the recommended threshold (paper, Appendix 5)."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(6, 3.5))
    for index, (name, rows) in enumerate(result.rates.group_by("points", maintain_order=True)):
        threshold = rows["threshold"].to_numpy()
        axes.plot(threshold, rows["mean"].to_numpy(), color=f"C{index}", label=str(name[0]))
        axes.fill_between(threshold, rows["low"].to_numpy(), rows["high"].to_numpy(), color=f"C{index}", alpha=0.15)
    axes.axhline(0.95, color="grey", linestyle=":", linewidth=1)
    if result.recommended is not None:
        axes.axvline(
            result.recommended, color="black", linestyle="--", linewidth=1, label=f"recommended {result.recommended:g}"
        )
    axes.set_xlabel(f"threshold (share of each feature's {result.kind} width)")
    axes.set_ylabel("share of realistic points")
    axes.set_ylim(-0.02, 1.02)
    axes.legend(fontsize="small")
    figure.tight_layout()
    return figure
