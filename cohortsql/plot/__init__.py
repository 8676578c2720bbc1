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
from cohortsql.plot.colours import feature_colours
from cohortsql.results.baseline import BaselineShapleyResult
from cohortsql.results.cohort import CohortShapleyResult
from cohortsql.results.effects import ShapleyEffects, effects_of_tables
from cohortsql.results.files import parquet_settings, read_frame, sibling_path

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from cohortsql.results.calibration import Calibration
    from cohortsql.results.comparison import Comparison

Source = CohortShapleyResult | BaselineShapleyResult | str | os.PathLike[str]
"""A result, or the file `cohortsql shapley --out` wrote. Baseline Shapley results draw like cohort
Shapley ones, with f(x_t) for the cohort mean and the mean baseline prediction for the mean."""


class Tables(NamedTuple):
    """The three tables of a local result: values, per-target totals, refinement paths."""

    local: pl.DataFrame
    totals: pl.DataFrame
    paths: pl.DataFrame


def read_tables(source: Source, *, paths: bool = True) -> Tables:
    """The tables of a result object, or of the files ``cohortsql shapley --out FILE`` wrote (the
    refinement paths only when `paths`; an empty frame otherwise)."""
    if isinstance(source, CohortShapleyResult):
        return Tables(source.local, source.totals, source.paths if paths else pl.DataFrame())
    if isinstance(source, BaselineShapleyResult):
        totals = source.totals.with_columns(cohort_mean=pl.col("prediction"))
        return Tables(source.local, totals, pl.DataFrame(schema={"id": totals["id"].dtype, "feature": pl.String}))
    path = Path(source)
    role = f"plot, from the files `cohortsql shapley --out {path.name}` writes"
    labels = ("", "totals", "paths") if paths else ("", "totals")
    frames = [read_frame(sibling_path(path, label) if label else path, role) for label in labels]
    return Tables(*frames, *([] if paths else [pl.DataFrame()]))


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise CohortError("plots need matplotlib: pip install 'cohortsql[plot]'") from None
    return plt


MAX_BARS = 1_000
"""Beyond this many targets, `stacked` draws bars of neighbouring targets (by prediction): a figure's
width cannot show more, and each bar is then their mean."""


def stacked(source: Source, *, squared: bool = False) -> Figure:
    """Every target's values stacked by feature, targets ordered by prediction, with the line of
    (prediction - mean) (squared: its square) over them: the paper's per-subject figure.

    Beyond `MAX_BARS` targets, each bar is the mean of neighbouring targets, and the figure says how many."""
    plt = _pyplot()
    local, totals, _ = read_tables(source, paths=False)
    column = "shapley_squared" if squared else "shapley"
    wide = local.pivot(on="feature", index="id", values=column, maintain_order=True)
    features = [name for name in wide.columns if name != "id"]
    values = wide.join(totals.select("id", "prediction"), on="id").sort("prediction")
    mean = float(np.mean(totals["cohort_mean"].to_numpy() - totals["value"].to_numpy()))
    line = values["prediction"].to_numpy() - mean
    heights, line, per_bar = _binned(values.select(features).to_numpy(), line**2 if squared else line)
    figure, axes = plt.subplots(figsize=(10, 4.5))
    _stacked_bars(plt, axes, heights, features)
    x = np.arange(len(heights))
    axes.plot(
        x,
        line,
        color="black",
        linewidth=1.2,
        label="(prediction - mean)²" if squared else "prediction - mean",
    )
    axes.axhline(0, color="grey", linewidth=0.5)
    binned = f"; each bar is the mean of {per_bar:,} neighbouring targets" if per_bar > 1 else ""
    axes.set_xlabel(f"{len(values):,} targets, ordered by prediction{binned}")
    axes.set_ylabel("squared cohort Shapley value" if squared else "cohort Shapley value")
    axes.set_xlim(-0.5, len(heights) - 0.5)
    axes.legend(fontsize="small", ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    figure.tight_layout()
    return figure


def _binned(values: np.ndarray, line: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """At most `MAX_BARS` rows: consecutive rows averaged in groups of equal size (the last may be
    smaller), with how many rows each group holds (1: unchanged)."""
    per_bar = max(1, -(-len(values) // MAX_BARS))
    if per_bar == 1:
        return values, line, 1
    starts = np.arange(0, len(values), per_bar)
    counts = np.diff(np.append(starts, len(values)))
    return np.add.reduceat(values, starts, axis=0) / counts[:, None], np.add.reduceat(line, starts) / counts, per_bar


def _stacked_bars(plt: Any, axes: Any, values: np.ndarray, features: list[str]) -> None:
    """Bars of (targets, features) values at x = 0, 1, ...: positive parts stacked up, negative down,
    each feature in its colour (`cohortsql.plot.colours`); two filled step outlines per feature, so
    drawing costs the same for 50 bars or 5,000."""
    colours = feature_colours(features)
    edges = np.arange(len(values) + 1) - 0.5
    for sign in (1, -1):
        base = np.zeros(len(values))
        for index, feature in enumerate(features):
            part = np.where(sign * values[:, index] > 0, values[:, index], 0.0)
            axes.stairs(
                base + part,
                edges,
                baseline=base,
                fill=True,
                color=colours[feature],
                label=feature if sign == 1 else None,
                linewidth=0,
            )
            base = base + part


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
    """Shapley effects as a bar chart, largest first, with error bars where there are standard errors.

    `source` is a result, or a file: what ``cohortsql effects --out`` writes, or the long table of
    ``cohortsql shapley --out`` (whose mean squared values are the effects)."""
    plt = _pyplot()
    if isinstance(source, ShapleyEffects):
        table = source.effects
    elif isinstance(source, CohortShapleyResult):
        table = source.global_
    elif isinstance(source, BaselineShapleyResult):
        table = source.global_.rename({"mean_squared_shapley": "shapley_effect"})
    else:
        table = read_frame(source, "plot --kind effects, from what `cohortsql effects` or `shapley` writes")
        if "shapley_effect" not in table.columns:
            table = effects_of_tables(*read_tables(source), parquet_settings(source))
    if "outcome" in table.columns:
        raise CohortError("effects plots one explained column: filter the table to one outcome first")
    colours = feature_colours(table["feature"].to_list())
    table = table.sort("shapley_effect")
    errors = (
        table["shapley_effect_se"].fill_nan(0).fill_null(0).to_numpy() if "shapley_effect_se" in table.columns else None
    )
    figure, axes = plt.subplots(figsize=(6, 0.35 * table.height + 1.2))
    axes.barh(
        table["feature"].to_list(),
        table["shapley_effect"].to_numpy(),
        xerr=errors if errors is not None and errors.any() else None,
        color=[colours[name] for name in table["feature"].to_list()],
        capsize=3,
    )
    axes.set_xlabel("Shapley effect (mean squared cohort Shapley value)")
    figure.tight_layout()
    return figure


BEESWARM_POINTS = 2_000
"""Points per feature in `beeswarm`: a random sample beyond this (the figure says so)."""


def beeswarm(source: Source, *, squared: bool = False, seed: int = 0) -> Figure:
    """Every target's value per feature as a point (one row per feature, most important on top,
    jittered vertically), coloured by the target's value of the feature from low (blue) to high
    (red): how a feature's values drive its attributions, as in shap's beeswarm."""
    plt = _pyplot()
    local = read_tables(source, paths=False).local
    column = "shapley_squared" if squared else "shapley"
    order = (
        local.group_by("feature", maintain_order=True)
        .agg(importance=pl.col(column).abs().mean())
        .sort("importance")["feature"]
        .to_list()
    )
    rng = np.random.default_rng(seed)
    figure, axes = plt.subplots(figsize=(8, 0.45 * len(order) + 1.5))
    sampled = False
    for row, feature in enumerate(order):
        part = local.filter(pl.col("feature") == feature)
        if part.height > BEESWARM_POINTS:
            part = part.sample(BEESWARM_POINTS, seed=seed)
            sampled = True
        values = part[column].to_numpy()
        shown = part["feature_value"].cast(pl.Float64, strict=False)
        if shown.null_count() == part.height:  # text values: colour by their rank
            shown = part["feature_value"].rank("dense").cast(pl.Float64)
        rank = shown.rank("average").to_numpy() / max(shown.len(), 1)
        axes.scatter(
            values,
            row + rng.uniform(-0.3, 0.3, size=len(values)),
            c=np.nan_to_num(rank, nan=0.5),
            cmap="coolwarm",
            s=6,
            vmin=0,
            vmax=1,
            linewidths=0,
        )
    axes.set_yticks(np.arange(len(order)), order)
    axes.axvline(0, color="grey", linewidth=0.5)
    note = f" (a sample of {BEESWARM_POINTS:,} targets per feature)" if sampled else ""
    axes.set_xlabel(
        f"{'squared ' if squared else ''}cohort Shapley value{note}; colour: the feature's value, low to high"
    )
    figure.tight_layout()
    return figure


def target(source: Source, id: object) -> Figure:
    """One target's values as a waterfall from the mean to its cohort mean: features by importance,
    each labelled with the target's value, its contribution written on the bar, and the size of
    the cohort once the feature has joined (the refinement path)."""
    plt = _pyplot()
    local, totals, paths = read_tables(source)
    row = _target_row(totals, id)
    values = local.filter(pl.col("id") == id).with_columns(size=pl.col("shapley").abs()).sort("size", descending=True)
    sizes = (
        dict(paths.filter(pl.col("id") == id).select("feature", "cohort_size").iter_rows())
        if "cohort_size" in paths.columns
        else {}
    )
    mean = row["cohort_mean"] - row["value"]
    heights = values["shapley"].to_numpy()
    starts = mean + np.concatenate([[0.0], np.cumsum(heights)[:-1]])
    colours = feature_colours(local["feature"].unique(maintain_order=True).to_list())
    figure, axes = plt.subplots(figsize=(8, 0.42 * values.height + 1.8))
    positions = np.arange(values.height)[::-1]
    features = values["feature"].to_list()
    axes.barh(positions, heights, left=starts, color=[colours[name] for name in features])
    labels = [
        f"{name} = {'missing' if shown is None else shown}" + (f"  (n={sizes[name]:,.0f})" if name in sizes else "")
        for name, shown in zip(features, values["feature_value"].to_list())
    ]
    axes.set_yticks(positions, labels)
    for position, start, height in zip(positions, starts, heights):
        axes.annotate(
            f"{height:+.3g}",
            (max(start, start + height), position),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize="small",
        )
    start, end = ("mean baseline f", "f(x_t)") if isinstance(source, BaselineShapleyResult) else ("mean", "cohort mean")
    axes.axvline(mean, color="grey", linestyle=":", label=f"{start} {mean:.4g}")
    axes.axvline(row["cohort_mean"], color="black", linestyle="--", label=f"{end} {row['cohort_mean']:.4g}")
    sized = " (n = cohort size once the feature joins)" if sizes else ""
    axes.set_xlabel(f"target {id}: from the {start} to the {end}{sized}")
    axes.legend(fontsize="small", loc="lower right")
    ends = np.concatenate([starts, starts + heights, [mean, row["cohort_mean"]]])
    pad = 0.12 * (ends.max() - ends.min() or 1.0)
    axes.set_xlim(ends.min() - pad, ends.max() + pad)
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
