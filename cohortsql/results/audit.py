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
from cohortsql.formats.tables import ROUNDING, SMALL_GROUP, group_name, percent, plural, rounded
from cohortsql.numeric import bootstrap as bootstrap_module
from cohortsql.numeric.bootstrap import bias_corrected_interval
from cohortsql.results.audit_groups import Grouping
from cohortsql.results.cohort import CohortShapleyResult
from cohortsql.results.fairness import FairnessResult


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
    ``count`` targets and ``rows``, the group's rows in the whole table; ``value`` = the group's
    (weighted) mean of phi_A(t) over its targets, with its interval ``value_ci_low`` .. ``_high``;
    ``gap`` = the group's mean prediction minus the mean ybar, both over every row (every row has a
    prediction, whichever rows are targets), with ``gap_ci_low`` .. ``_high`` from every row reweighed
    by the run's own replicate draws; ``share_of_gap`` = value / gap (how much of the group's elevation
    A accounts for), given only where the gap's interval excludes 0, with ``share_of_gap_ci_low`` ..
    ``_high`` paired (value and gap under the same replicate);
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
    fairness: FairnessResult | None = None
    """With ``threshold=`` or ``observed=``: the decisions' group fairness metrics over every row
    (`cohortsql.fairness`), which the summary and the report show after the audit's own tables."""

    @property
    def outcome(self) -> str:
        """The explained column (the model's prediction) whose variance and gaps the audit reads."""
        return self.cohort.outcome or "the prediction"

    def summary(self) -> list[str]:
        """The audit in words, one line per attribute and one per group, e.g. ``afam: 3.8% of the
        variance explained (2.9-5.2%)`` and ``afam = 'yes': +0.047 on average, 39% of the group's gap
        of +0.12 in score``. Values within rounding of zero for the prediction's own spread read as 0,
        at any scale."""
        scale = self.cohort.spread
        lines = []
        for row in self.attributes.iter_rows(named=True):
            name, null = row["protected"], self.cohort.null
            tested = null is not None and name in null.players
            contrast = ""
            if "baseline_mean_abs" in row and (not tested or null is None or null.clears(name)):
                contrast = (
                    f"; the model's baseline Shapley gives it {rounded(row['baseline_mean_abs'], scale)} on average"
                    f" (all-baseline {rounded(row['all_baseline_mean_abs'], scale)})"
                )
            rank = f"rank {row['rank']} of {len(self.cohort.features)} features{contrast}"
            if row["share"] is None or not math.isfinite(row["share"]):
                lines.append(f"{name}: no variance to explain (the prediction is constant), {rank}")
            else:
                interval = ""
                if row.get("share_ci_low") is not None:
                    interval = f" ({percent(row['share_ci_low'])} to {percent(row['share_ci_high'])})"
                floor = f"; {null.words(name)}" if tested and null is not None else ""
                lines.append(f"{name}: {percent(row['share'])} of the variance explained{interval}, {rank}{floor}")
            for group in self.groups.filter(pl.col("protected") == row["protected"]).iter_rows(named=True):
                rows = "" if group["rows"] == group["count"] else f" of {plural(group['rows'], 'row')}"
                lines.append(
                    f"  {group_name(row['protected'], group['label'])}: {rounded(group['value'], scale, signed=True)} on"
                    f" average{_gap_words(group, scale, self.outcome)} ({plural(group['count'], 'target')}{rows}"
                    + (f": too few to read alone, under {SMALL_GROUP})" if group["count"] < SMALL_GROUP else ")")
                )
        # the fairness section's own caveat (the same replicates) ends the whole text: the caveat once
        if self.cohort.bootstrap is not None and (
            self.fairness is None or not self.fairness.settings.get("confidence")
        ):
            level = f"{self.cohort.bootstrap.confidence:.0%}"
            lines.append(f"(intervals: {level} {bootstrap_module.BIAS_CORRECTED})")
        if self.fairness is not None:
            lines += ["", f"fairness of the decisions ({self.fairness.decisions}), over every row:"]
            lines += self.fairness.summary()
        return lines

    def report(self, path: str | os.PathLike[str], *, targets: list[Any] | None = None) -> None:
        """Write the cohort run's HTML report with an "Audit" section first (these tables in words, and
        each group's value with its interval)."""
        from cohortsql.report import ReportTables, write_report

        tables = ReportTables.of_result(self.cohort)
        write_report(tables.with_audit(self), path, targets, title=f"audit: {self.cohort.outcome}")

    def __repr__(self) -> str:
        return f"AuditResult({', '.join(self.protected)}; {len(self.cohort.ids)} targets)\n" + "\n".join(self.summary())


def _gap_words(group: Mapping[str, Any], scale: float, outcome: str) -> str:
    """ ", 39% of the group's gap of +0.12 in score" (the gap in the units of the explained column), or why
    no share is given: the gap is not clearly away from 0."""
    share = group["share_of_gap"]
    if share is not None and math.isfinite(share):
        low, high = group.get("share_of_gap_ci_low"), group.get("share_of_gap_ci_high")
        interval = "" if low is None or high is None else f" ({percent(low)} to {percent(high)})"
        return f", {percent(share)}{interval} of the group's gap of {rounded(group['gap'], scale, signed=True)} in {outcome}"
    low, high = group.get("gap_ci_low"), group.get("gap_ci_high")
    if low is None or high is None or rounded(low, scale) == rounded(high, scale) == "0":
        return ""  # no interval, or a gap that is 0 in every replicate (the group is everyone)
    return (
        f"; its gap {rounded(group['gap'], scale, signed=True)} ({rounded(low, scale, signed=True)}"
        f" to {rounded(high, scale, signed=True)}) may be 0, so no share of it is given"
    )


def audit_tables(
    result: CohortShapleyResult,
    protected: Sequence[str],
    groupings: Mapping[str, Grouping],
    every_row: Mapping[str, LevelSums],
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """`AuditResult`'s attributes, groups and proxies tables from a cohort run whose features include
    every `protected` attribute and which has interaction values (and, for intervals, replicates), and
    each attribute's rows summed per value over every row under the run's weightings (the gaps)."""
    if result.interactions is None:
        raise CohortError("an audit reads interaction values: run cohort_shapley with interactions=True")
    effects = result.global_
    ranked = effects.with_row_index("rank", offset=1)
    shares = _replicate_shares(result) if result.bootstrap is not None else None
    attributes = []
    for name in protected:
        row = ranked.filter(pl.col("feature") == name).row(0, named=True)
        entry = {"protected": name, "effect": row["shapley_effect"], "share": row["share"]}
        if shares is not None and result.bootstrap is not None:
            position = result.features.index(name)
            low, high = bias_corrected_interval(shares[:, position], row["share"], result.bootstrap.confidence, 0)
            entry["share_ci_low"], entry["share_ci_high"] = float(low), float(high)
        entry["rank"] = int(row["rank"])
        attributes.append(entry)
    groups, proxies = [], []
    for name in protected:
        tables = _group_tables(result, name, groupings[name], every_row[name])
        groups.append(tables[0])
        proxies.append(tables[1])
    return pl.DataFrame(attributes), pl.concat(groups, how="diagonal"), pl.concat(proxies)


def _replicate_shares(result: CohortShapleyResult) -> np.ndarray:
    """Each replicate's shares, (B, d): its Shapley effects over its own variance of the prediction
    (`bootstrap.replicate_variances`), so that the interval is of the share itself; two rows whose every
    reweighting gives a share of 1/2 have the interval [1/2, 1/2]."""
    assert result.bootstrap is not None
    variances = bootstrap_module.replicate_variances(
        result.prediction, result.mean, result.target_weights, result.bootstrap.target_weights
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(variances[:, None] > 0, result.bootstrap.effects / variances[:, None], np.nan)


@dataclass(frozen=True)
class LevelSums:
    """One protected attribute's rows summed per value over every row of the table
    (`cohortsql.queries.fairness.level_measures`), under the run's weightings."""

    values: pl.Series
    """The attribute's values, one per row of the arrays (as the engine returned them)."""
    rows: np.ndarray
    """How many rows hold each value."""
    weights: np.ndarray
    """W_b: each value's total weight under weighting b (its case weights, then each replicate's), (values, 1 + B)."""
    sums: np.ndarray
    """S_b: each value's weighted sum of the prediction (less a constant) under weighting b, (values, 1 + B)."""


def every_row_gaps(groups: Grouping, found: LevelSums) -> tuple[np.ndarray, np.ndarray]:
    """Each group's rows and its gap over every row under every weighting, (groups, 1 + B): the group's
    weighted mean prediction S_b(g) / W_b(g) less that of every row, S_b / W_b. Rows of a value no
    target's group holds count in the mean of every row, in no group."""
    number = groups.assign(found.values)
    kept = number >= 0
    count = len(groups.levels)
    rows = np.bincount(number[kept], weights=found.rows[kept], minlength=count).astype(np.int64)
    weights = np.zeros((count, found.weights.shape[1]))
    sums = np.zeros_like(weights)
    np.add.at(weights, number[kept], found.weights[kept])
    np.add.at(sums, number[kept], found.sums[kept])
    overall = found.sums.sum(axis=0) / found.weights.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return rows, sums / weights - overall[None, :]


def _group_tables(
    result: CohortShapleyResult, name: str, groups: Grouping, every_row: LevelSums
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One attribute's rows of the groups and proxies tables: values over the run's targets, sizes in
    rows and gaps over every row, and with replicates the intervals, the gap's and the share's paired
    with the values' (the same draws reweigh each row in both)."""
    assert result.interactions is not None
    index = result.features.index(name)
    count = len(groups.levels)
    kept = groups.number >= 0  # an id included beside a sample, of no group of it, weighs 0 anyway
    weights, number, interactions = result.target_weights[kept], groups.number[kept], result.interactions[kept]

    def means(values: np.ndarray) -> np.ndarray:  # (targets, k) -> (groups, k)
        return bootstrap_module.group_means(values[:, None, :], weights[:, None], number, count)[:, 0]

    value = means(result.shapley[kept][:, [index]])[:, 0]
    alone = means(interactions[:, index, [index]])[:, 0]
    rows, gaps = every_row_gaps(groups, every_row)
    gap = gaps[:, 0]
    sizes = np.bincount(number, weights=weights > 0, minlength=count).astype(np.int64)  # include= ids weigh 0
    totals = np.bincount(number, weights=weights, minlength=count)
    reference = int(np.argmax(totals))
    # a gap within rounding of 0 (one level: the group is everyone) has no share to speak of
    scale = max(abs(result.mean), float(np.sqrt(result.variance)), np.finfo(float).tiny)
    away = np.abs(gap) > ROUNDING * scale
    with np.errstate(divide="ignore", invalid="ignore"):
        share_of_gap = np.where(away, value / gap, np.nan)
    table: dict[str, Any] = {
        "protected": [name] * count,
        "grouping": [groups.grouping] * count,
        "level": pl.Series(groups.levels, dtype=pl.String),
        "label": groups.labels,
        "count": sizes,
        "rows": rows,
        "value": value,
    }
    replicates = result.bootstrap
    gap_interval: dict[str, np.ndarray] = {}
    share_interval: dict[str, np.ndarray] = {}
    if replicates is not None and replicates.shapley is not None:
        estimates = bootstrap_module.group_means(
            replicates.shapley[kept][:, :, [index]], replicates.target_weights[kept], number, count
        )  # (groups, B, 1)
        low, high = bias_corrected_interval(estimates[:, :, 0], value, replicates.confidence, 1)
        table |= {"value_ci_low": low, "value_ci_high": high}
        gap_low, gap_high = bias_corrected_interval(gaps[:, 1:], gap, replicates.confidence, 1)
        # a share of a gap that may be 0 is any number at all: shown only when the gap is clearly not 0
        away &= (gap_low > 0) | (gap_high < 0)
        share_of_gap = np.where(away, share_of_gap, np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            shares = np.where(away[:, None], estimates[:, :, 0] / gaps[:, 1:], 0.0)
        share_low, share_high = bias_corrected_interval(shares, np.nan_to_num(share_of_gap), replicates.confidence, 1)
        gap_interval = {"gap_ci_low": gap_low, "gap_ci_high": gap_high}
        share_interval = {
            "share_of_gap_ci_low": np.where(away, share_low, np.nan),
            "share_of_gap_ci_high": np.where(away, share_high, np.nan),
        }
    table |= {"gap": gap, **gap_interval, "share_of_gap": share_of_gap, **share_interval, "value_alone": alone}
    table |= {
        "reference": pl.Series([groups.levels[reference]] * count, dtype=pl.String),
        "difference": value - value[reference],
    }
    if replicates is not None and replicates.shapley is not None:
        low, high = bootstrap_module.paired_differences(estimates, value[:, None], reference, replicates.confidence)
        table |= {"difference_ci_low": low[:, 0], "difference_ci_high": high[:, 0]}
    others = [position for position in range(len(result.features)) if position != index]
    interactions = means(interactions[:, index, others])  # (groups, others)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = np.where(np.abs(value[:, None]) > ROUNDING * scale, interactions / value[:, None], np.nan)
    order = np.argsort(-np.abs(interactions), axis=1, kind="stable")  # the strongest first, within each group
    picked = np.take_along_axis(interactions, order, axis=1)
    proxies = pl.DataFrame(
        {
            "protected": [name] * (count * len(others)),
            "level": pl.Series([level for level in groups.levels for _ in others], dtype=pl.String),
            "label": [label for label in groups.labels for _ in others],
            "feature": [result.features[others[position]] for position in order.reshape(-1)],
            "interaction": picked.reshape(-1),
            "share_of_value": np.take_along_axis(shares, order, axis=1).reshape(-1),
        },
        nan_to_null=True,
    )
    return pl.DataFrame(table, nan_to_null=True), proxies
