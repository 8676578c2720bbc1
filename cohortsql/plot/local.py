"""Figures of one game's values per target: stacked bars, effects, beeswarm, a target's waterfall and
refinement path, and a target's cohort in two predictors (the paper's Figures 1-4)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from cohortsql._typing import Row
from cohortsql.errors import CohortError
from cohortsql.formats.colours import feature_colours, level_colour, run_feature_order
from cohortsql.formats.files import one_outcome, parquet_settings, read_frame
from cohortsql.formats.tables import effect_floors, effects_of_tables, shown_value
from cohortsql.plot.tables import Source, chosen_outcome, pyplot, read_tables
from cohortsql.results.baseline import BaselineShapleyResult
from cohortsql.results.cohort import CohortShapleyResult
from cohortsql.results.effects import ShapleyEffects
from cohortsql.results.outcomes import CohortShapleyResults, ShapleyEffectsResults

if TYPE_CHECKING:
    from matplotlib.figure import Figure


MAX_BARS = 1_000
"""Beyond this many targets, `stacked` draws bars of neighbouring targets (by prediction): a figure's
width cannot show more, and each bar is then their mean."""


def stacked(source: Source, *, squared: bool = False, outcome: str | None = None) -> Figure:
    """Every target's values stacked by feature, targets ordered by prediction, with the line of
    (prediction - mean) (squared: its square) over them: the paper's per-subject figure.

    Beyond `MAX_BARS` targets, each bar is the mean of neighbouring targets, and the figure says how many."""
    plt = pyplot()
    local, totals, _ = read_tables(source, paths=False, outcome=outcome)
    column = "shapley_squared" if squared else "shapley"
    wide = local.pivot(on="feature", index="id", values=column, maintain_order=True)
    features = [name for name in wide.columns if name != "id"]
    values = wide.join(totals.select("id", "prediction"), on="id").sort("prediction")
    mean = float(np.mean(totals["cohort_mean"].to_numpy() - totals["value"].to_numpy()))
    line = values["prediction"].to_numpy() - mean
    heights, line, per_bar = _binned(values.select(features).to_numpy(), line**2 if squared else line)
    figure, axes = plt.subplots(figsize=(10, 4.5))
    stacked_bars(plt, axes, heights, features)
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
    axes.set_ylabel("Shapley value of the squared game (not phi^2)" if squared else "cohort Shapley value")
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


def stacked_bars(plt: Any, axes: Any, values: np.ndarray, features: list[str]) -> None:
    """Bars of (targets, features) values at x = 0, 1, ...: positive parts stacked up, negative down,
    each feature in its colour (`cohortsql.formats.colours`); two filled step outlines per feature, so
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


def effects(source: ShapleyEffects | ShapleyEffectsResults | Source, *, outcome: str | None = None) -> Figure:
    """Shapley effects as a bar chart, largest first, whiskers at the bootstrap intervals where there are
    intervals (a file's ``ci_low``/``ci_high`` columns too), else at one standard error.

    `source` is a result, or a file: what ``cohortsql effects --out`` writes, or the long table of
    ``cohortsql shapley --out`` (whose mean Shapley values of the squared game are the effects); of several explained
    columns, `outcome` names the one drawn."""
    plt = pyplot()
    if isinstance(source, (ShapleyEffectsResults, CohortShapleyResults)):
        source = source[chosen_outcome(source.outcomes, outcome)]
    if isinstance(source, ShapleyEffects):
        table, settings = source.effects, source.settings
    elif isinstance(source, CohortShapleyResult):
        table, settings = source.global_, source.settings
    elif isinstance(source, BaselineShapleyResult):
        table, settings = source.global_.rename({"mean_squared_shapley": "shapley_effect"}), source.settings
    else:
        table = read_frame(source, "plot --kind effects, from what `cohortsql effects` or `shapley` writes")
        settings = parquet_settings(source)
        if "shapley_effect" in table.columns:
            (table,) = one_outcome([table], outcome, repr(str(source)))
        else:
            table = effects_of_tables(*read_tables(source, outcome=outcome), settings)
    colours = feature_colours(run_feature_order(settings, table["feature"].to_list()))
    table = table.sort("shapley_effect")
    figure, axes = plt.subplots(figsize=(6, 0.35 * table.height + 1.2))
    axes.barh(
        table["feature"].to_list(),
        table["shapley_effect"].to_numpy(),
        xerr=_effect_whiskers(table),
        color=[colours[name] for name in table["feature"].to_list()],
        capsize=3,
    )
    label = "Shapley effect (mean Shapley value of the squared game)"
    if "shapley_effect_ci_low" in table.columns:
        level = settings.get("confidence", 0.95)
        label += f"\nwhiskers: {float(level):.0%} bias-corrected bootstrap intervals"
    floors = effect_floors(table)
    if floors is not None:
        for row, floor in enumerate(floors):
            if floor is not None:
                axes.plot([floor, floor], [row - 0.42, row + 0.42], color="#111111", linewidth=2.5)
        label += "\ndark ticks: the floor (what shuffled copies of the feature reach)"
    axes.set_xlabel(label)
    figure.tight_layout()
    return figure


def _effect_whiskers(table: pl.DataFrame) -> np.ndarray | None:
    """Each bar's whisker: its bootstrap interval where the table has one (the effect need not sit in
    the middle of it: (2, n) distances below and above), else one standard error each way, else none."""
    effect = table["shapley_effect"].to_numpy()
    if "shapley_effect_ci_low" in table.columns:
        low = table["shapley_effect_ci_low"].fill_null(np.nan).to_numpy()
        high = table["shapley_effect_ci_high"].fill_null(np.nan).to_numpy()
        return np.nan_to_num(np.vstack([effect - low, high - effect]).clip(min=0.0))
    if "shapley_effect_se" in table.columns:
        errors = table["shapley_effect_se"].fill_nan(0).fill_null(0).to_numpy()
        return errors if errors.any() else None
    return None


BEESWARM_POINTS = 2_000
"""Points per feature in `beeswarm`: a random sample beyond this (the figure says so)."""


def beeswarm(source: Source, *, squared: bool = False, seed: int = 0, outcome: str | None = None) -> Figure:
    """Every target's value per feature as a point (one row per feature, most important on top,
    jittered vertically), coloured by the target's value of the feature from low (blue) to high
    (red): how a feature's values drive its attributions, as in shap's beeswarm."""
    plt = pyplot()
    local = read_tables(source, paths=False, outcome=outcome).local
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
    categories: list[Any] = []  # legend handles of the categorical features' levels (one colour each)
    categorical = 0
    for row, feature in enumerate(order):
        part = local.filter(pl.col("feature") == feature)
        if part.height > BEESWARM_POINTS:
            part = part.sample(BEESWARM_POINTS, seed=seed)
            sampled = True
        values = part[column].to_numpy()
        heights = row + rng.uniform(-0.3, 0.3, size=len(values))
        shown = part["feature_value"].cast(pl.Float64, strict=False)
        if shown.null_count() == part.height and part["feature_value"].null_count() < part.height:
            categories += _categorical_points(
                axes, plt, feature, part["feature_value"], values, heights, len(categories)
            )
            categorical += 1
            continue
        rank = shown.rank("average").to_numpy() / max(shown.len(), 1)
        axes.scatter(
            values, heights, c=np.nan_to_num(rank, nan=0.5), cmap="coolwarm", s=6, vmin=0, vmax=1, linewidths=0
        )
    axes.set_yticks(np.arange(len(order)), order)
    axes.axvline(0, color="grey", linewidth=0.5)
    note = f" (a sample of {BEESWARM_POINTS:,} targets per feature)" if sampled else ""
    colour = "; colour: a number's value, low (blue) to high (red)" if categorical < len(order) else ""
    axes.set_xlabel(f"{'squared ' if squared else ''}cohort Shapley value{note}{colour}")
    if categories:
        axes.legend(handles=categories, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="x-small", frameon=False)
    figure.tight_layout()
    return figure


def dependence(
    source: Source, feature: str, *, colour: str | None = None, squared: bool = False, outcome: str | None = None
) -> Figure:
    """A dependence plot, as shap draws one: each target's value of `feature` (x) against its cohort
    Shapley value for `feature` (y), coloured by its value of `colour` — by default the other feature
    with the largest mean |value|. A text or boolean feature is drawn at one position per level (most
    frequent first, jittered), a missing number at the left edge in grey."""
    plt = pyplot()
    local = read_tables(source, paths=False, outcome=outcome).local
    column = "shapley_squared" if squared else "shapley"
    features = local["feature"].unique(maintain_order=True).to_list()
    for name, role in ((feature, "feature"), (colour, "colour")):
        if name is not None and name not in features:
            raise CohortError(
                f"dependence {role} {name!r} is not a feature of this result; its features are {features}"
            )
    if colour is None and len(features) > 1:
        others = local.filter(pl.col("feature") != feature)
        colour = others.group_by("feature").agg(pl.col(column).abs().mean()).sort(column, descending=True)["feature"][0]
    part = local.filter(pl.col("feature") == feature).select("id", "feature_value", column)
    if colour is not None:
        coloured = local.filter(pl.col("feature") == colour).select("id", pl.col("feature_value").alias("__colour"))
        part = part.join(coloured, on="id", how="left", maintain_order="left")
    figure, axes = plt.subplots(figsize=(6.5, 4.5))
    positions, ticks = _positions(part["feature_value"], np.random.default_rng(0))
    shades, numeric_colour = None, False
    if colour is not None:
        numbers = part["__colour"].cast(pl.Float64, strict=False)
        numeric_colour = numbers.null_count() < part.height or part["__colour"].null_count() == part.height
        if numeric_colour:
            shades = numbers.rank("average").to_numpy() / max(numbers.len(), 1)
        else:
            levels = part["__colour"].fill_null("missing").cast(pl.String)
            shades = levels.rank("dense").to_numpy() / max(levels.n_unique(), 1)
    drawn = axes.scatter(
        positions,
        part[column].to_numpy(),
        c="grey" if shades is None else np.nan_to_num(shades, nan=0.5),
        cmap=None if shades is None else "coolwarm",
        s=10,
        linewidths=0,
    )
    if ticks is not None:
        axes.set_xticks(np.arange(len(ticks)), ticks, rotation=30, ha="right", fontsize="small")
    if shades is not None:
        bar = figure.colorbar(drawn, ax=axes)
        bar.set_label(f"{colour}: low to high" if numeric_colour else f"{colour} (levels in order)")
    axes.axhline(0, color="grey", linewidth=0.5)
    axes.set_xlabel(feature)
    axes.set_ylabel(f"{'squared game: ' if squared else ''}cohort Shapley value of {feature}")
    figure.tight_layout()
    return figure


def _positions(values: pl.Series, rng: np.random.Generator) -> tuple[np.ndarray, list[str] | None]:
    """Where each target's value of a feature goes on the x axis: numbers as they are (missing ones at
    the left edge); text and booleans one position per level, most frequent first, with its labels."""
    numbers = values.cast(pl.Float64, strict=False)
    if numbers.null_count() < values.len() or values.null_count() == values.len():
        x = numbers.to_numpy().astype(float)
        finite = x[np.isfinite(x)]
        left = (finite.min() - 0.05 * (np.ptp(finite) or 1.0)) if finite.size else 0.0
        return np.where(np.isnan(x), left, x), None
    levels = values.fill_null("missing").cast(pl.String)
    order = levels.value_counts(sort=True)[levels.name].to_list()
    index = {level: position for position, level in enumerate(order)}
    return np.array([index[level] for level in levels.to_list()]) + rng.uniform(-0.2, 0.2, levels.len()), order


CATEGORY_LEVELS = 8
"""A categorical feature's most frequent levels that get their own colour in the beeswarm; the rest share one."""


def _categorical_points(
    axes: Any, plt: Any, feature: str, levels: pl.Series, values: np.ndarray, heights: np.ndarray, first: int
) -> list[Any]:
    """A text or boolean feature's points, one colour per level (the most frequent `CATEGORY_LEVELS`,
    then "other"; colours continue from the `first`-th, so no two levels in the legend share one), and
    their legend handles labelled feature = level."""
    counts = levels.fill_null("missing").value_counts(sort=True)
    named = counts[levels.name].head(CATEGORY_LEVELS).to_list()
    text = levels.fill_null("missing").to_list()
    handles = []
    for index, level in enumerate([*named, None]):
        chosen = np.array([item == level if level is not None else item not in named for item in text])
        if not chosen.any():
            continue
        colour = level_colour(plt, first + index) if level is not None else "grey"
        handles.append(
            axes.scatter(
                values[chosen],
                heights[chosen],
                color=colour,
                s=6,
                linewidths=0,
                label=f"{feature} = {level if level is not None else 'other'}",
            )
        )
    return handles


def target(source: Source, id: object, *, outcome: str | None = None) -> Figure:
    """One target's values as a waterfall from the mean to its cohort mean: features by importance,
    each labelled with the target's value (fractions to 4 significant digits) and its Shapley value
    written on its bar. The bars are Shapley values, averages over every order of the features, so no
    cohort size is written beside them: the refinement path (`path`) shows the cohorts of one order."""
    plt = pyplot()
    local, totals, _ = read_tables(source, outcome=outcome)
    row = _target_row(totals, id)
    values = (
        local.filter(pl.col("id") == id)
        .with_columns(size=pl.col("shapley").abs(), feature_value=shown_value())
        .sort("size", descending=True)
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
        f"{name} = {'missing' if shown is None else shown}"
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
    axes.set_xlabel(f"target {id}: each bar its Shapley value (the refinement path shows cohort sizes)")
    axes.legend(fontsize="small", loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    ends = np.concatenate([starts, starts + heights, [mean, row["cohort_mean"]]])
    pad = 0.12 * (ends.max() - ends.min() or 1.0)
    axes.set_xlim(ends.min() - pad, ends.max() + pad)
    figure.tight_layout()
    return figure


def path(source: Source, id: object, *, outcome: str | None = None) -> Figure:
    """One target's refinement path: cohort size and cohort mean as features join in order of importance."""
    plt = pyplot()
    _, totals, paths = read_tables(source, outcome=outcome)
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


def cohort_scatter(result: CohortShapleyResult, id: object, x: str, y: str, *, data: pl.DataFrame) -> Figure:
    """Two predictors of every subject, the target, the mean point and the target's cohort
    boundaries on both (the paper's Boston figure). The result comes first, as in every figure;
    `data` is the table the result explains (the result holds its targets' rows only)."""
    if not isinstance(result, CohortShapleyResult):
        raise CohortError(
            f"cohort_scatter takes the result first and the table as data=: got {type(result).__name__} first"
        )
    if not isinstance(data, pl.DataFrame):
        raise CohortError(
            f"cohort_scatter: data= is the polars DataFrame the result explains, got {type(data).__name__}"
        )
    plt = pyplot()
    for column in (x, y):
        if column not in data.columns:
            raise CohortError(f"cohort_scatter: column {column!r} is not in the data")
    target_row = result.targets.row(result.index_of(id), named=True)
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


def _target_row(totals: pl.DataFrame, id: object) -> Row:
    rows = totals.filter(pl.col("id") == id)
    if rows.height == 0:
        raise CohortError(f"{id!r} is not one of the {totals.height} targets of this result")
    return rows.row(0, named=True)
