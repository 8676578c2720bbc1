"""The result of `cohortsql.fairness`: group fairness metrics of decisions, in fairlearn's vocabulary,
over every row of the table, with Bayesian-bootstrap intervals (`cohortsql.numeric.fairness`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from cohortsql.formats.settings import Settings
from cohortsql.formats.tables import SMALL_GROUP, group_name
from cohortsql.numeric.bootstrap import BIAS_CORRECTED

METRIC_WORDS = {
    "demographic_parity_difference": "demographic-parity difference",
    "demographic_parity_ratio": "demographic-parity ratio",
    "equalized_odds_difference": "equalized-odds difference",
}
RATE_WORDS = {
    "selection_rate": "selected",
    "true_positive_rate": "true positive rate",
    "false_positive_rate": "false positive rate",
}


@dataclass(frozen=True)
class FairnessResult:
    """What `cohortsql.fairness` found, for each protected attribute A.

    `groups`, one row per level of A (numbers in quantile groups or the caller's bins, said in
    ``grouping``): ``rows`` and their total ``weight``; ``selection_rate``, the weighted share of the
    group's rows that were selected (fairlearn's ``selection_rate``); with an observed outcome,
    ``positives`` (rows with outcome 1), ``true_positive_rate`` = P(selected | outcome 1) and
    ``false_positive_rate`` = P(selected | outcome 0) (NaN where the group has no such row); each rate
    with its interval ``<rate>_ci_low`` .. ``_high``.

    `metrics`, one row per attribute and metric (fairlearn's, ``method="between_groups"``):
    ``demographic_parity_difference`` (largest less smallest selection rate),
    ``demographic_parity_ratio`` (smallest over largest), and with an outcome
    ``equalized_odds_difference`` (the larger of the spreads of the true and the false positive
    rates); ``value`` with ``ci_low`` .. ``ci_high``.
    """

    groups: pl.DataFrame
    metrics: pl.DataFrame
    protected: tuple[str, ...]
    settings: Settings = field(default_factory=dict)
    """How the decisions were made and the intervals drawn (prediction, threshold, outcome, bootstrap, seed)."""

    @property
    def decisions(self) -> str:
        """How a row was selected, in words: ``score >= 0.5``, or ``approved = 1``."""
        threshold = self.settings.get("threshold")
        prediction = self.settings.get("prediction", "the prediction")
        decided = f"{prediction} = 1" if threshold is None else f"{prediction} >= {threshold}"
        observed = self.settings.get("observed")
        return decided + ("" if observed is None else f"; observed outcome {observed}")

    def summary(self) -> list[str]:
        """The metrics in words, one line per attribute and one per group, e.g. ``sex: demographic-parity
        difference 0.62 (0.58 to 0.66)`` and ``sex = 'female': 78.1% selected (75.0% to 81.0%) of 388 rows``."""
        lines = []
        for name in self.protected:
            metrics = self.metrics.filter(pl.col("protected") == name)
            said = [
                f"{METRIC_WORDS[row['metric']]} {_number(row['value'])}{_interval(row['ci_low'], row['ci_high'], _number)}"
                for row in metrics.iter_rows(named=True)
            ]
            lines.append(f"{name}: " + "; ".join(said))
            for group in self.groups.filter(pl.col("protected") == name).iter_rows(named=True):
                rates = [
                    f"{_percent(group[rate])}{_interval(group.get(f'{rate}_ci_low'), group.get(f'{rate}_ci_high'), _percent)}"
                    + (" selected" if rate == "selection_rate" else f" {RATE_WORDS[rate]}")
                    for rate in RATE_WORDS
                    if rate in group
                ]
                few = f": too few to read alone, under {SMALL_GROUP}" if group["rows"] < SMALL_GROUP else ""
                lines.append(f"  {group_name(name, group['label'])}: {', '.join(rates)} ({group['rows']:,} rows{few})")
        level = self.settings.get("confidence")
        if level:
            lines.append(
                f"(intervals: {float(level):.0%} {BIAS_CORRECTED}, from {self.settings['bootstrap']}"
                " Bayesian-bootstrap replicates)"
            )
        return lines

    def __repr__(self) -> str:
        return f"FairnessResult({', '.join(self.protected)})\n" + "\n".join(self.summary())


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _interval(low: float | None, high: float | None, shown: object) -> str:
    if low is None or high is None:
        return ""
    assert callable(shown)
    return f" ({shown(low)} to {shown(high)})"
