"""What the command line prints: results ranked, and the diagnostics in words (loaded when a command runs)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from cohortsql._typing import Row
from cohortsql.formats.tables import BIAS_CORRECTED, Diagnostics, default_kinds_in_words
from cohortsql.results.cohort import CohortShapleyResult
from cohortsql.results.effects import ShapleyEffects, zero_errors_note
from cohortsql.results.null import NullReference

if TYPE_CHECKING:
    from cohortsql.results.calibration import Calibration
    from cohortsql.results.comparison import Comparison
    from cohortsql.results.outcomes import CohortShapleyResults, ShapleyEffectsResults
    from cohortsql.results.uniqueness import GameResult, UniquenessResult

REASONS_SHOWN = 5
"""How many targets' reasons the summary prints (all of them go to the _reasons file)."""

SINGLETON_CAVEAT = 0.5
"""Above this share of targets alone in their cohort, the explained share is printed with a caveat."""


def diagnostics_in_words(checks: Diagnostics) -> list[str]:
    """The diagnostics as sentences: cohort sizes, singletons, features that narrow cohorts to almost nothing."""
    lines = [
        f"cohorts on every feature: median {checks['median_cohort_size']:,.0f} of {checks['subjects']:,} subjects;"
        f" {checks['singleton_share']:.1%} of the targets are alone in theirs"
    ]
    narrow = {name: share for name, share in checks["narrow_features"].items() if share > 0}
    for name, share in sorted(narrow.items(), key=lambda item: -item[1])[:5]:
        lines.append(f"similarity on {name} alone keeps at most 1% of the table for {share:.1%} of the targets")
    broad = {name: share for name, share in checks.get("broad_features", {}).items() if share > 0}
    for name, share in sorted(broad.items(), key=lambda item: -item[1])[:5]:
        lines.append(f"similarity on {name} alone keeps over 90% of the table for {share:.1%} of the targets")
    return lines


def marked(features: Iterable[str], warned: Collection[str]) -> dict[str, str]:
    """Each feature's name as a table shows it: "! name" when a warning printed above names it
    (quoted, as warnings name features), else "  name" (no prefix when no feature is named)."""
    named = {feature for feature in features if any(f"'{feature}'" in text for text in warned)}
    if not named:
        return {feature: feature for feature in features}
    return {feature: ("! " if feature in named else "  ") + feature for feature in features}


def _marks_legend(shown: Mapping[str, str], printed: Iterable[str] | None = None) -> list[str]:
    """The legend of the "!" mark, when a feature the table prints (`printed`, default every one) has it."""
    rows = shown if printed is None else {name: shown[name] for name in printed}
    return ["(! named in a warning above)"] if any(name.startswith("! ") for name in rows.values()) else []


def shapley_summary(
    result: CohortShapleyResult | CohortShapleyResults, top: int, reasons: int | None, warned: Collection[str] = ()
) -> str:
    """The run's size, its diagnostics, the features ranked by mean |value| and by the mean Shapley value of the squared game
    (marked where a warning named them), and (with --reasons) the first targets' reasons in words; one
    such summary per explained column."""
    if not isinstance(result, CohortShapleyResult):
        return "\n\n".join(
            f"== {outcome}\n" + shapley_summary(one, top, reasons, warned) for outcome, one in result.items()
        )
    importance = result.global_
    by_value = importance.sort("mean_abs_shapley", descending=True).head(top)
    by_square = importance.sort("shapley_effect", descending=True).head(top)
    shown = marked(result.features, warned)
    width = max(len(name) for name in shown.values())
    sampled = int(result.in_sample.sum())
    beside = (
        f" ({sampled:,} of a random sample, averaged; {len(result.ids) - sampled:,} more asked for beside it)"
        if sampled < len(result.ids)
        else ""
    )
    lines = [
        f"{len(result.ids)} targets{beside} x {len(result.features)} features, {result.subjects} subjects,"
        f" mean {result.mean:.6g}, method {result.method}",
        *default_kinds_in_words(result.settings),
        *diagnostics_in_words(result.diagnostics),
        "",
        f"{'by mean |shapley|':<{width + 14}}by mean shapley_squared (the squared game's values, not phi^2)",
    ]
    for left, right in zip(by_value.iter_rows(named=True), by_square.iter_rows(named=True)):
        lines.append(
            f"{shown[left['feature']]:<{width}}  {left['mean_abs_shapley']:<10.4g}  "
            f"{shown[right['feature']]:<{width}}  {right['shapley_effect']:.4g}{_interval(right)}"
        )
    printed = {*by_value["feature"].to_list(), *by_square["feature"].to_list()}
    lines += _not_shown(len(result.features), top) + _marks_legend(shown, printed)
    if result.bootstrap is not None:
        lines.append(
            f"({result.bootstrap.confidence:.0%} intervals from {result.bootstrap.replicates} Bayesian-bootstrap"
            f" replicates: the effects' are {BIAS_CORRECTED}; every value's percentile interval is in the"
            " shapley_ci_low/high columns)"
        )
    lines += null_lines(result.null)
    if result.interactions is not None:
        typical = np.average(np.abs(result.interactions), axis=0, weights=result.target_weights)
        lines += _interaction_lines(result.features, typical, "mean |interaction value| over the targets")
    if reasons:
        lines += ["", f"top {reasons} reasons (mean {result.mean:.4g}):"]
        table = result.reasons(reasons)
        for target in table["id"].unique(maintain_order=True).head(REASONS_SHOWN).to_list():
            rows = table.filter(table["id"] == target)
            lines.append(f"  {target}: prediction {rows['prediction'][0]:.4g}; " + "; ".join(rows["reason"].to_list()))
        if len(result.ids) > REASONS_SHOWN:
            lines.append(f"  ... and {len(result.ids) - REASONS_SHOWN:,} more targets")
    return "\n".join(lines)


def effects_summary(effects: ShapleyEffects | ShapleyEffectsResults, warned: Collection[str] = ()) -> str:
    """Shapley effects ranked, with their shares of the variance (and intervals) and the diagnostics,
    marked where a warning named them; one such summary per explained column."""
    if not isinstance(effects, ShapleyEffects):
        return "\n\n".join(f"== {outcome}\n" + effects_summary(one, warned) for outcome, one in effects.items())
    ranked = effects.effects.sort("shapley_effect", descending=True)
    shown = marked(ranked["feature"].to_list(), warned)
    width = max(len(name) for name in shown.values())
    caveat = ""
    if effects.diagnostics.get("singleton_share", 0) > SINGLETON_CAVEAT:
        caveat = " (most targets are alone in their cohort, so this share says little)"
    lines = [
        f"variance {effects.variance:.6g}; the cohorts on every feature explain {effects.explained:.6g}"
        f" ({effects.explained_share:.1%}){caveat}; {effects.targets} targets of {effects.subjects} subjects,"
        f" method {effects.method}, path {effects.path}",
        *default_kinds_in_words(effects.settings),
        *diagnostics_in_words(effects.diagnostics),
        "",
        f"{'feature':<{width}}  {'effect':>10}  {'se':>10}  {'share':>7}" + (_FLOOR_HEADER if effects.null else ""),
    ]
    for row in ranked.iter_rows(named=True):
        lines.append(
            f"{shown[row['feature']]:<{width}}  {row['shapley_effect']:>10.4g}  {_standard_error(row):>10}"
            f"  {row['share']:>7.1%}{_floor(row, effects.null)}{_interval(row)}"
        )
    lines += _marks_legend(shown) + _floor_legend(effects.null)
    if "shapley_effect_ci_low" in ranked.columns:
        level = float(effects.settings.get("confidence", 0.95))
        replicates = effects.settings.get("bootstrap", "")
        lines.append(f"({level:.0%} {BIAS_CORRECTED}, from {replicates} Bayesian-bootstrap replicates)")
    note = zero_errors_note(ranked)
    if note is not None:
        intervals = "shapley_effect_ci_low" in ranked.columns
        advice = "" if intervals else "; --bootstrap gives intervals for the data's own uncertainty"
        lines.append(f"({note}{advice})")
    if effects.interactions is not None:
        lines += _interaction_lines(effects.features, effects.interactions, "interaction values of the variance game")
    if effects.owen_table is not None:
        lines += _owen_lines(effects.owen_table)
    return "\n".join(lines)


_FLOOR_HEADER = f"  {'floor':>7}  {'p':>5}"
"""The columns of the null reference in a table of shares: the copies' upper quantile, the p-value."""


def _floor(row: Row, null: NullReference | None) -> str:
    """A share's null reference as table cells (blank for a feature without copies), and the mark of a
    share that does not clear it."""
    if null is None:
        return ""
    if row.get("p_value") is None:
        return f"  {'':>7}  {'':>5}"
    mark = {"above": "", "too few copies": "  (too few copies)", "at the floor": "  = a shuffled copy"}[
        null.verdict(row["feature"])
    ]
    return f"  {row['null_share_high']:>7.1%}  {row['p_value']:>5.2g}{mark}"


def _floor_legend(null: NullReference | None) -> list[str]:
    if null is None:
        return []
    return [
        f"(floor: the share {null.confidence:.0%} of {null.copies} shuffled copies of the feature stay at or under;"
        f" p: the share of copies at or above it, (1 + count) / (1 + {null.copies}); '= a shuffled copy': p above"
        f" {1 - null.confidence:.2g}, the share is indistinguishable from a shuffled copy's)"
    ]


def null_lines(null: NullReference | None) -> list[str]:
    """Each tested feature's share against its null reference, in words (none without one)."""
    if null is None:
        return []
    return ["", "null reference:", *(f"  {player}: {null.words(player)}" for player in null.players)]


def _owen_lines(owen: pl.DataFrame) -> list[str]:
    """Each grouped feature's Owen effect, group by group (a group's rows add up to its effect above)."""
    grouped = owen.filter(pl.len().over("group") > 1)
    if not len(grouped):
        return []
    width = max(len(f"{row['group']}.{row['feature']}") for row in grouped.iter_rows(named=True))
    return [
        "",
        "Owen effects within the groups (each group's features add up to its effect):",
        *(
            f"  {row['group'] + '.' + row['feature']:<{width}}  {row['owen_effect']:>10.4g}  {row['share']:>7.1%}"
            for row in grouped.iter_rows(named=True)
        ),
    ]


INTERACTIONS_SHOWN = 5
"""Pairs of features the summaries print with --interactions (every pair is in the written table)."""


def _interaction_lines(features: Sequence[str], values: np.ndarray, what: str) -> list[str]:
    """The pairs of features of largest |value| in a (d, d) matrix of interaction values (each pair's
    value is half its Shapley interaction index; the other half is on the other side of the diagonal)."""
    first, second = np.triu_indices(len(features), 1)
    order = np.argsort(-np.abs(values[first, second]), kind="stable")[:INTERACTIONS_SHOWN]
    if not len(order):
        return []
    return [
        "",
        f"largest interactions ({what}; each half of the pair's interaction index):",
        *(f"  {features[first[k]]} x {features[second[k]]}  {values[first[k], second[k]]:.4g}" for k in order),
    ]


def _standard_error(row: Row) -> str:
    """A standard error in 2 digits as Python holds it (0 when every row is a target: the summary's
    note says why), or "-" where there is none."""
    error = row["shapley_effect_se"]
    return "-" if error is None or error != error else f"{error:.2g}"


def uniqueness_summary(result: UniquenessResult, top: int) -> str:
    """How many targets are unique, and the features ranked by how much they identify."""
    checks = result.diagnostics
    heading = (
        f"{len(result.ids)} targets x {len(result.features)} features, {result.subjects} subjects;"
        f" {checks['unique_share']:.1%} of the targets are unique on every feature"
        f" (median cohort {checks['median_cohort_size']:,.0f})"
    )
    return game_summary(result, top, heading=heading, column="mean uniqueness (nats)")


def game_summary(result: GameResult, top: int, *, heading: str | None = None, column: str = "mean shapley") -> str:
    """A game's targets, subjects and mean value (or `heading`), and the features ranked by the size
    of their mean value (`column` names it)."""
    if heading is None:
        mean = float(np.average(result.value, weights=result.target_weights))
        heading = (
            f"{result.game}: {len(result.ids)} targets x {len(result.features)} features, {result.subjects} subjects;"
            f" mean value v(t, all features) = {mean:.4g}"
        )
    width = max(len(feature) for feature in result.features)
    size = max(len(column), 12)
    lines = [heading, "", f"{'feature':<{width}}  {column:>{size}}  {'share':>7}"]
    for row in result.global_.head(top).iter_rows(named=True):
        lines.append(f"{row['feature']:<{width}}  {row['mean_shapley']:>{size}.4g}  {row['share']:>7.1%}")
    lines += _not_shown(len(result.features), top) + null_lines(result.null)
    if result.interactions is not None:
        typical = np.average(np.abs(result.interactions), axis=0, weights=result.target_weights)
        lines += _interaction_lines(result.features, typical, "mean |interaction value| over the targets")
    return "\n".join(lines)


def _not_shown(features: int, top: int) -> list[str]:
    """A line saying how many features a table of the `top` leaves out (none when it shows them all)."""
    hidden = features - top
    return [f"... and {hidden:,} more features (--top {features} shows them all)"] if hidden > 0 else []


def _interval(row: Row) -> str:
    """ "  (low to high)" for a row with a bootstrap interval of its effect, else nothing."""
    if row.get("shapley_effect_ci_low") is None:
        return ""
    return f"  ({row['shapley_effect_ci_low']:.4g} to {row['shapley_effect_ci_high']:.4g})"


def comparison_summary(result: Comparison, top: int) -> str:
    """The global importance of CS2, BS2 and ABS2 per feature (ranked by CS2), with the realistic share
    of BS's and ABS's hybrid points: how much of the model-based explanations rest on impossible inputs."""
    table = result.global_.pivot(on="method", index="feature", values="importance").sort("CS2", descending=True)
    width = max(len(feature) for feature in result.features)
    totals = result.totals
    lines = [
        f"{len(result.cohort.ids)} targets x {len(result.features)} features; ABS over"
        f" {result.all_baseline.baselines} baselines",
    ]
    for name in ("bs", "abs"):
        column = f"{name}_realistic_share"
        if column in totals.columns:
            lines.append(f"{name.upper()}: {totals[column].to_numpy().mean():.1%} of the hybrid points are realistic")
    lines += [
        "",
        f"{'feature':<{width}}  {'CS2':>10}  {'BS2':>10}  {'ABS2':>10}   (mean Shapley values of the squared games)",
    ]
    for row in table.head(top).iter_rows(named=True):
        lines.append(f"{str(row['feature']):<{width}}  {row['CS2']:>10.4g}  {row['BS2']:>10.4g}  {row['ABS2']:>10.4g}")
    return "\n".join(lines + _not_shown(len(result.features), top))


def calibration_summary(result: Calibration) -> str:
    """The realistic shares at every threshold, and the recommended threshold in words."""
    rates = result.rates
    lines = [
        f"{result.rows} rows; windows on {', '.join(result.window_features) or 'no feature'}"
        f"; exact on {', '.join(result.exact_features) or 'no feature'}",
        "",
        "threshold  " + "  ".join(f"{name:>12}" for name in rates["points"].unique(maintain_order=True)),
    ]
    for threshold in result.thresholds:
        shares = rates.filter(rates["threshold"] == threshold)["mean"].to_list()
        lines.append(f"{threshold:>9g}  " + "  ".join(f"{share:>12.1%}" for share in shares))
    best = result.recommended
    lines.append("")
    lines.append(
        "no threshold makes 95% of held-out rows realistic: widen the thresholds or compare fewer features"
        if best is None
        else f"recommended threshold: {best:g} (the smallest at which 95% of held-out rows are realistic)"
    )
    return "\n".join(lines)
