"""Pictures of cohort Shapley results, after the paper's figures (matplotlib: ``pip install 'cohortsql[plot]'``).

Every function returns a matplotlib Figure. Local plots take a `CohortShapleyResult` or the path of
the long table that ``cohortsql shapley --out`` writes (its ``_totals`` and ``_paths`` files beside it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import polars as pl

from cohortsql.errors import CohortError
from cohortsql.output import read_frame, sibling_path
from cohortsql.result import CohortShapleyResult, ShapleyEffects

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from cohortsql.calibration import Calibration
    from cohortsql.comparison_result import Comparison

Source = CohortShapleyResult | str | os.PathLike[str]


class Tables(NamedTuple):
    """The three tables of a local result: values, per-target totals, refinement paths."""

    local: pl.DataFrame
    totals: pl.DataFrame
    paths: pl.DataFrame


def read_tables(source: Source) -> Tables:
    """The tables of a result object, or of the files ``cohortsql shapley --out FILE`` wrote."""
    if isinstance(source, CohortShapleyResult):
        return Tables(source.local, source.totals, source.paths)
    path = Path(source)
    role = f"plot, from the files `cohortsql shapley --out {path.name}` writes"
    return Tables(
        *(read_frame(sibling_path(path, label) if label else path, role) for label in ("", "totals", "paths"))
    )


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise CohortError("plots need matplotlib: pip install 'cohortsql[plot]'") from None
    return plt


def stacked(source: Source, *, squared: bool = False) -> Figure:
    """Every target's values stacked by feature, targets ordered by prediction, with the line of
    (prediction - mean) (squared: its square) over them: the paper's per-subject figure."""
    plt = _pyplot()
    local, totals, _ = read_tables(source)
    column = "shapley_squared" if squared else "shapley"
    wide = local.pivot(on="feature", index="id", values=column, maintain_order=True)
    features = [name for name in wide.columns if name != "id"]
    order = totals.with_row_index("position").sort("prediction")
    values = wide.join(order.select("id", "prediction"), on="id").sort("prediction")
    mean = float(np.mean(totals["cohort_mean"].to_numpy() - totals["value"].to_numpy()))
    x = np.arange(values.height)
    figure, axes = plt.subplots(figsize=(10, 4.5))
    _stacked_bars(plt, axes, values.select(features).to_numpy(), features)
    line = values["prediction"].to_numpy() - mean
    axes.plot(
        x,
        line**2 if squared else line,
        color="black",
        linewidth=1.2,
        label="(prediction - mean)²" if squared else "prediction - mean",
    )
    axes.axhline(0, color="grey", linewidth=0.5)
    axes.set_xlabel("targets, ordered by prediction")
    axes.set_ylabel("squared cohort Shapley value" if squared else "cohort Shapley value")
    axes.set_xlim(-0.5, values.height - 0.5)
    axes.legend(fontsize="small", ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    figure.tight_layout()
    return figure


def _stacked_bars(plt: Any, axes: Any, values: np.ndarray, features: list[str]) -> None:
    """Bars of (targets, features) values at x = 0, 1, ...: positive parts stacked up, negative down."""
    positive_base = np.zeros(len(values))
    negative_base = np.zeros(len(values))
    colours = plt.get_cmap("tab20")
    x = np.arange(len(values))
    for index, feature in enumerate(features):
        height = values[:, index]
        base = np.where(height >= 0, positive_base, negative_base)
        axes.bar(x, height, bottom=base, width=1.0, color=colours(index % 20), label=feature, linewidth=0)
        positive_base += np.where(height >= 0, height, 0)
        negative_base += np.where(height < 0, height, 0)


def compare_stacked(comparison: Comparison, method: str = "ABS") -> Figure:
    """Every target's values under one of CS, CS2, BS, BS2, ABS, ABS2, stacked by feature, targets
    ordered by the model's prediction, with the method's sum and cohort Shapley's sum (CS or CS2)
    over them: the paper's per-method figures of Appendix 4."""
    plt = _pyplot()
    methods = ("CS", "CS2", "BS", "BS2", "ABS", "ABS2")
    if method not in methods:
        raise CohortError(f"compare_stacked draws one of {', '.join(methods)}, not {method!r}")
    values = comparison.values(method)
    cohort = comparison.values("CS2" if method.endswith("2") else "CS")
    order = np.argsort(comparison.baseline.prediction, kind="stable")
    figure, axes = plt.subplots(figsize=(10, 4.5))
    _stacked_bars(plt, axes, values[order], list(comparison.features))
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


def effects(source: ShapleyEffects | Source) -> Figure:
    """Shapley effects as a bar chart, largest first, with error bars where there are standard errors."""
    plt = _pyplot()
    if isinstance(source, ShapleyEffects):
        table = source.effects
    elif isinstance(source, CohortShapleyResult):
        table = source.global_
    else:
        local = read_tables(source).local
        count = pl.len()
        table = local.group_by("feature", maintain_order=True).agg(
            shapley_effect=pl.col("shapley_squared").mean(),
            shapley_effect_se=pl.col("shapley_squared").std() / count.sqrt(),
        )
    table = table.sort("shapley_effect")
    errors = table["shapley_effect_se"].fill_nan(0).fill_null(0).to_numpy()
    figure, axes = plt.subplots(figsize=(6, 0.35 * table.height + 1.2))
    axes.barh(
        table["feature"].to_list(),
        table["shapley_effect"].to_numpy(),
        xerr=errors if errors.any() else None,
        color="tab:blue",
        capsize=3,
    )
    axes.set_xlabel("Shapley effect (mean squared cohort Shapley value)")
    figure.tight_layout()
    return figure


def target(source: Source, id: object) -> Figure:
    """One target's values as ordered bars from the mean to its cohort mean (a waterfall)."""
    plt = _pyplot()
    local, totals, _ = read_tables(source)
    row = _target_row(totals, id)
    values = local.filter(pl.col("id") == id).with_columns(size=pl.col("shapley").abs()).sort("size", descending=True)
    mean = row["cohort_mean"] - row["value"]
    starts = mean + np.concatenate([[0.0], np.cumsum(values["shapley"].to_numpy())[:-1]])
    heights = values["shapley"].to_numpy()
    figure, axes = plt.subplots(figsize=(7, 0.4 * values.height + 1.5))
    positions = np.arange(values.height)[::-1]
    axes.barh(positions, heights, left=starts, color=np.where(heights >= 0, "tab:red", "tab:blue"))
    axes.set_yticks(positions, values["feature"].to_list())
    axes.axvline(mean, color="grey", linestyle=":", label=f"mean {mean:.4g}")
    axes.axvline(row["cohort_mean"], color="black", linestyle="--", label=f"cohort mean {row['cohort_mean']:.4g}")
    axes.set_xlabel(f"target {id}: from the mean to the cohort mean")
    axes.legend(fontsize="small")
    figure.tight_layout()
    return figure


def path(source: Source, id: object) -> Figure:
    """One target's refinement path: cohort size and cohort mean as features join in order of importance."""
    plt = _pyplot()
    _, totals, paths = read_tables(source)
    row = _target_row(totals, id)
    steps = paths.filter(pl.col("id") == id).sort("step")
    labels = ["all"] + [f"+{feature}" for feature in steps["feature"].to_list()[1:]]
    sizes, means = steps["cohort_size"].to_numpy(), steps["cohort_mean"].to_numpy()
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(max(6, 0.6 * len(labels)), 5.5), sharex=True)
    x = np.arange(len(labels))
    top.plot(x, sizes, marker="o")
    top.set_yscale("log")
    top.set_ylabel("cohort size")
    bottom.plot(x, means, marker="o", color="tab:red")
    bottom.axhline(row["prediction"], color="black", linestyle="--", linewidth=1, label="prediction")
    bottom.set_ylabel("cohort mean")
    bottom.set_xticks(x, labels, rotation=45, ha="right")
    bottom.legend(fontsize="small")
    top.set_title(f"target {id}: cohort refinement")
    figure.tight_layout()
    return figure


def cohort_scatter(data: pl.DataFrame, result: CohortShapleyResult, id: object, x: str, y: str) -> Figure:
    """Two predictors of every subject, the target, the mean point and the target's cohort
    boundaries on both (the paper's Boston figure). `data` is the table the result explains."""
    plt = _pyplot()
    for column in (x, y):
        if column not in data.columns:
            raise CohortError(f"cohort_scatter: column {column!r} is not in the data")
    target_row = result.targets.row(result._row(id), named=True)
    figure, axes = plt.subplots(figsize=(6, 5))
    xs, ys = data[x].cast(pl.Float64).to_numpy(), data[y].cast(pl.Float64).to_numpy()
    inside = np.ones(len(xs), dtype=bool)
    bounds = {}
    for column, values in ((x, xs), (y, ys)):
        interval = result.similar_interval(id, column) if column in result.kinds else None
        if interval is not None:
            bounds[column] = interval
            inside &= (values >= interval[0]) & (values <= interval[1])
    axes.scatter(xs[~inside], ys[~inside], s=8, color="lightgrey", label="subjects")
    axes.scatter(xs[inside], ys[inside], s=10, color="tab:blue", label="similar on both")
    for column, interval in bounds.items():
        draw = axes.axvline if column == x else axes.axhline
        for edge in interval:
            draw(edge, color="tab:blue", linestyle="--", linewidth=0.8)
    axes.scatter([np.nanmean(xs)], [np.nanmean(ys)], marker="s", s=60, color="black", label="mean")
    axes.scatter([target_row[x]], [target_row[y]], marker="*", s=200, color="tab:red", label=f"target {id}")
    axes.set_xlabel(x)
    axes.set_ylabel(y)
    axes.legend(fontsize="small")
    figure.tight_layout()
    return figure


def _target_row(totals: pl.DataFrame, id: object) -> dict[str, Any]:
    rows = totals.filter(pl.col("id") == id)
    if rows.height == 0:
        raise CohortError(f"{id!r} is not one of the {totals.height} targets of this result")
    return rows.row(0, named=True)


def compare_global(comparison: Comparison, *, squared: bool = True) -> Figure:
    """Each feature's global importance under CS, BS and ABS side by side (squared: CS2, BS2, ABS2, the
    mean squared values, with the realistic part of BS2 and ABS2 solid and the rest hatched), after
    the paper's Appendix 4 bar comparison."""
    plt = _pyplot()
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
    axes.set_ylabel("mean squared value" if squared else "mean |value|")
    axes.legend(fontsize="small", ncol=2)
    figure.tight_layout()
    return figure


def compare_target(comparison: Comparison, id: object) -> Figure:
    """One target's values under CS, BS and ABS per feature, the baseline methods split into their
    realistic (solid) and unrealistic (hatched) parts: the paper's Boston subject figure."""
    plt = _pyplot()
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
    plt = _pyplot()
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
