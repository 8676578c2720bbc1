"""The result of `cohortsql.audit`: how much a model's decisions lean on attributes it may never have
seen (the paper's auditing for indirect inference, Section 6), as three tables read from one cohort
Shapley run with the protected attributes among the features.

A baseline-type method gives an attribute the model never reads exactly zero. Cohort Shapley credits
it when it tracks the predictors the model used: subjects similar to a target on the protected
attribute have, on average, predictions that differ from the mean. This measures association in the
data, not causation, and depends on the similarity chosen for every feature.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from cohortsql.errors import CohortError
from cohortsql.numeric import bootstrap as bootstrap_module
from cohortsql.numeric.bootstrap import percentile_interval
from cohortsql.results.cohort import CohortShapleyResult

QUANTILE_GROUPS = 4
"""A numeric protected attribute with more distinct values among the targets than this is read in
this many quantile groups of the targets (quartiles), each labelled with its range."""


@dataclass(frozen=True)
class Grouping:
    """Each target's group of one protected attribute: its label, and how the labels were made."""

    labels: list[str]
    """The groups' labels, in order (levels sorted, or quantile groups from low to high)."""
    number: np.ndarray
    """Each target's group (an index into `labels`)."""
    grouping: str
    """``level`` (each value its own group) or ``quantile group`` (numbers in ranges)."""


def grouping(values: pl.Series, groups: int = QUANTILE_GROUPS) -> Grouping:
    """The targets' groups of a protected attribute: each value (missing values together as ``null``),
    or for numbers with more than `groups` distinct values, `groups` quantile groups of the targets."""
    numeric = values.dtype.is_numeric() and values.dtype != pl.Boolean
    present = values.drop_nulls()
    if numeric and present.n_unique() > groups:
        numbers = values.cast(pl.Float64).to_numpy()
        finite = numbers[np.isfinite(numbers)]
        edges = np.unique(np.quantile(finite, np.linspace(0, 1, groups + 1)))
        inner = edges[1:-1]
        number = np.searchsorted(inner, numbers, side="right")
        labels = [
            f"[{low:.4g}, {high:.4g}{']' if index == len(edges) - 2 else ')'}"
            for index, (low, high) in enumerate(zip(edges[:-1], edges[1:]))
        ]
        missing = ~np.isfinite(numbers)
        if missing.any():
            number[missing] = len(labels)
            labels.append("null")
        return Grouping(labels, number, "quantile group")
    text = values.cast(pl.String).fill_null("null")
    labels = sorted(text.unique().to_list(), key=lambda label: (label == "null", label))
    lookup = {label: index for index, label in enumerate(labels)}
    return Grouping(labels, np.array([lookup[label] for label in text.to_list()]), "level")


@dataclass(frozen=True)
class AuditResult:
    """What `cohortsql.audit` found, for each protected attribute A (a feature of `cohort`).

    `attributes`, one row per attribute: ``protected``; ``effect``, its Shapley effect (the targets'
    mean of phi_A(t) of the squared game v_CS2, the paper's variance explained); ``share`` = effect / variance (as
    `cohortsql.shapley_effects` gives it when the targets are every row); with bootstrap replicates,
    ``share_ci_low`` .. ``share_ci_high`` (the effect's interval over the same variance); ``rank`` among
    every feature (1: the largest effect); and with ``model=``, ``baseline_mean_abs`` and
    ``all_baseline_mean_abs``: the mean |phi_A| of baseline and all-baseline Shapley of the model,
    exactly 0 when the model never reads A.

    `groups`, one row per level of each attribute (numbers in quantile groups, said in ``grouping``):
    ``count`` targets; ``value`` = the group's (weighted) mean of phi_A(t), with its interval
    ``value_ci_low`` .. ``_high``; ``gap`` = the group's mean prediction minus the mean ybar over every
    subject; ``share_of_gap`` = value / gap (how much of the group's elevation A accounts for);
    ``value_alone`` = the group's mean of Phi_AA, A's main term; and the paired difference from the
    ``reference`` level (the largest group): ``difference`` with ``difference_ci_low`` .. ``_high``,
    every group's mean recomputed under the same replicate weights.

    `proxies`, one row per level and other feature k: ``interaction``, the group's mean of the
    Shapley interaction value Phi_Ak (shap's convention: half the interaction index), and
    ``share_of_value`` = interaction / value. A's value splits exactly as
    value = value_alone + sum over k of interaction. Reading the sign: Phi_Ak > 0 when, averaged over the
    orders in which features join the cohort, A moves the cohort mean further up (or less far down)
    once k is in the cohort than before it is, and Phi_Ak < 0 the other way round; a large |Phi_Ak| says
    that A's credit comes through its association with k (k carries what A would say).
    """

    attributes: pl.DataFrame
    groups: pl.DataFrame
    proxies: pl.DataFrame
    cohort: CohortShapleyResult
    """The cohort Shapley run the tables come from (every feature, the protected ones among them)."""
    protected: tuple[str, ...]

    def summary(self) -> list[str]:
        """The audit in words, one line per attribute and one per group, e.g. ``afam: 3.8% of the
        variance explained (2.9-5.2%)`` and ``afam = yes: +0.047 on average, 39% of the group's gap``."""
        lines = []
        for row in self.attributes.iter_rows(named=True):
            interval = ""
            if row.get("share_ci_low") is not None:
                interval = f" ({_percent(row['share_ci_low'])}–{_percent(row['share_ci_high'])})"
            contrast = ""
            if "baseline_mean_abs" in row:
                contrast = (
                    f"; the model's baseline Shapley gives it {_rounded(row['baseline_mean_abs'])} on average"
                    f" (all-baseline {_rounded(row['all_baseline_mean_abs'])})"
                )
            lines.append(
                f"{row['protected']}: {_percent(row['share'])} of the variance explained{interval},"
                f" rank {row['rank']} of {len(self.cohort.features)} features{contrast}"
            )
            for group in self.groups.filter(pl.col("protected") == row["protected"]).iter_rows(named=True):
                gap = group["share_of_gap"]
                part = "" if gap is None or not math.isfinite(gap) else f", {_percent(gap)} of the group's gap"
                lines.append(
                    f"  {row['protected']} = {group['level']}: {_rounded(group['value'], signed=True)} on average"
                    f"{part} ({group['count']:,} targets)"
                )
        return lines

    def report(self, path: str | os.PathLike[str], *, targets: list[Any] | None = None) -> None:
        """Write the cohort run's HTML report with an "Audit" section first (these tables in words, and
        each group's value with its interval)."""
        from cohortsql.report import ReportTables, write_report

        tables = ReportTables.of_result(self.cohort)
        write_report(tables.with_audit(self), path, targets, title=f"audit: {self.cohort.outcome}")

    def __repr__(self) -> str:
        return f"AuditResult({', '.join(self.protected)}; {len(self.cohort.ids)} targets)\n" + "\n".join(self.summary())


ROUNDING = 1e-12
"""Values smaller than this are shown to people as 0: floating-point rounding of an exact zero."""


def _rounded(value: float, *, signed: bool = False) -> str:
    """A value for people: 4 significant digits, rounding noise as 0."""
    if abs(value) < ROUNDING:
        return "0"
    return f"{value:+.4g}" if signed else f"{value:.4g}"


def _percent(value: float) -> str:
    return f"{100 * value:.2g}%" if abs(value) < 0.1 else f"{100 * value:.1f}%"


def audit_tables(
    result: CohortShapleyResult,
    protected: Sequence[str],
    groupings: Mapping[str, Grouping],
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """`AuditResult`'s attributes, groups and proxies tables from a cohort run whose features include
    every `protected` attribute and which has interaction values (and, for intervals, replicates)."""
    if result.interactions is None:
        raise CohortError("an audit reads interaction values: run cohort_shapley with interactions=True")
    effects = result.global_
    ranked = effects.with_row_index("rank", offset=1)
    attributes = []
    for name in protected:
        row = ranked.filter(pl.col("feature") == name).row(0, named=True)
        entry = {"protected": name, "effect": row["shapley_effect"], "share": row["share"]}
        if "shapley_effect_ci_low" in row:
            variance = result.target_variance
            entry["share_ci_low"] = row["shapley_effect_ci_low"] / variance if variance > 0 else math.nan
            entry["share_ci_high"] = row["shapley_effect_ci_high"] / variance if variance > 0 else math.nan
        entry["rank"] = int(row["rank"])
        attributes.append(entry)
    groups, proxies = [], []
    for name in protected:
        tables = _group_tables(result, name, groupings[name])
        groups.append(tables[0])
        proxies.append(tables[1])
    return pl.DataFrame(attributes), pl.concat(groups, how="diagonal"), pl.concat(proxies)


def _group_tables(result: CohortShapleyResult, name: str, groups: Grouping) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One attribute's rows of the groups and proxies tables."""
    assert result.interactions is not None
    index = result.features.index(name)
    count = len(groups.labels)
    weights = result.target_weights
    number = groups.number

    def means(values: np.ndarray) -> np.ndarray:  # (targets, k) -> (groups, k)
        return bootstrap_module.group_means(values[:, None, :], weights[:, None], number, count)[:, 0]

    value = means(result.shapley[:, [index]])[:, 0]
    alone = means(result.interactions[:, index, [index]])[:, 0]
    predicted = means(result.prediction[:, None])[:, 0]
    gap = predicted - result.mean
    sizes = np.bincount(number, minlength=count)
    totals = np.bincount(number, weights=weights, minlength=count)
    reference = int(np.argmax(totals))
    # a gap within rounding of 0 (one level: the group is everyone) has no share to speak of
    scale = max(abs(result.mean), float(np.sqrt(result.variance)), np.finfo(float).tiny)
    with np.errstate(divide="ignore", invalid="ignore"):
        share_of_gap = np.where(np.abs(gap) > ROUNDING * scale, value / gap, np.nan)
    table: dict[str, Any] = {
        "protected": [name] * count,
        "grouping": [groups.grouping] * count,
        "level": groups.labels,
        "count": sizes,
        "value": value,
    }
    replicates = result.bootstrap
    if replicates is not None and replicates.shapley is not None:
        estimates = bootstrap_module.group_means(
            replicates.shapley[:, :, [index]], replicates.target_weights, number, count
        )  # (groups, B, 1)
        low, high = percentile_interval(estimates[:, :, 0], replicates.confidence, 1)
        table |= {"value_ci_low": low, "value_ci_high": high}
    table |= {"gap": gap, "share_of_gap": share_of_gap, "value_alone": alone}
    table |= {"reference": [groups.labels[reference]] * count, "difference": value - value[reference]}
    if replicates is not None and replicates.shapley is not None:
        low, high = bootstrap_module.paired_differences(estimates, reference, replicates.confidence)
        table |= {"difference_ci_low": low[:, 0], "difference_ci_high": high[:, 0]}
    others = [position for position in range(len(result.features)) if position != index]
    interactions = means(result.interactions[:, index, others])  # (groups, others)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = np.where(np.abs(value[:, None]) > ROUNDING * scale, interactions / value[:, None], np.nan)
    order = np.argsort(-np.abs(interactions), axis=1, kind="stable")  # the strongest first, within each group
    picked = np.take_along_axis(interactions, order, axis=1)
    proxies = pl.DataFrame(
        {
            "protected": [name] * (count * len(others)),
            "level": np.repeat(groups.labels, len(others)).tolist(),
            "feature": [result.features[others[position]] for position in order.reshape(-1)],
            "interaction": picked.reshape(-1),
            "share_of_value": np.take_along_axis(shares, order, axis=1).reshape(-1),
        },
        nan_to_null=True,
    )
    return pl.DataFrame(table, nan_to_null=True), proxies
