"""The result of `cohortsql.cohort_shapley`: per-target, per-feature cohort Shapley values
(`CohortShapleyResult`), with the totals, refinement paths, reasons, global importance and
diagnostics that say how far to trust them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np
import polars as pl

from cohortsql.errors import CohortError
from cohortsql.formats.tables import (
    Diagnostics,
    anchored_table,
    by_importance,
    diagnostics,
    effects_table,
    reason,
    standard_error,
    target_groups,
)
from cohortsql.numeric import bootstrap as bootstrap_module
from cohortsql.numeric.bootstrap import Bootstrap, bias_corrected_interval, percentile_interval
from cohortsql.numeric.local_values import LocalValues
from cohortsql.request.similarity import Similarity
from cohortsql.results.base import TargetValues

VALUE_FIELDS = ("cohort_size", "shapley", "shapley_squared", "path_order", "path_size", "feature_cohort_size")
OPTIONAL_VALUE_FIELDS = ("shapley_se", "shapley_squared_se", "permutations", "interactions_se")


SIZE_FIELDS = ("cohort_size", "path_size", "feature_cohort_size")

FULL_COHORT_REST = "(rest of the full cohort)"
"""`to_shap(end="prediction")`'s last column: y_t minus the target's cohort mean over every feature."""


def value_fields(values: LocalValues, offset: float, *, counted: bool = True) -> dict[str, Any]:
    """Result fields from a driver's values (exact, estimated or integrated); cohort means are stored
    relative to `offset` (the pilot value), which is added back here. Sizes are whole numbers when
    `counted` (no case weights), else sums of weights."""
    fields: dict[str, Any] = {name: getattr(values, name) for name in VALUE_FIELDS}
    fields.update({name: getattr(values, name) for name in OPTIONAL_VALUE_FIELDS if getattr(values, name) is not None})
    for name in SIZE_FIELDS:
        fields[name] = np.rint(fields[name]).astype(np.int64) if counted else np.asarray(fields[name], dtype=np.float64)
    fields["cohort_mean"] = values.cohort_mean + offset
    fields["path_mean"] = values.path_mean + offset
    return fields


@dataclass(frozen=True, eq=False, kw_only=True)
class CohortShapleyResult(TargetValues):
    """Cohort Shapley values phi_j(t) of v_CS and v_CS2 for every target t and feature j.

    For every target, ``shapley`` adds up to ``value`` = cohort_mean - mean (efficiency) and
    ``shapley_squared`` adds up to ``value_squared`` = value^2. `local` holds them with their standard
    errors when estimated and their Bayesian-bootstrap intervals (``shapley_ci_low`` ..
    ``shapley_squared_ci_high``) with ``bootstrap=B``.

    A squared value can be negative: it is the Shapley value of the game v(u)^2, whose increments
    v(u + j)^2 - v(u)^2 are negative whenever adding j moves the cohort mean back towards the overall
    mean (paper, Appendix 4). They add up to value^2 >= 0 over the features.
    """

    shapley_squared: np.ndarray
    """phi_j(t) of v_CS2, shape (targets, features)."""
    similarity: dict[str, str]
    """Each feature's similarity kind in text form, defaults filled in."""
    kinds: dict[str, Similarity]
    """Each feature's similarity kind."""
    feature_statistics: dict[str, dict]
    """The whole-table statistics each feature's kind used (min, max, quantiles, missing values)."""
    mean: float
    """ybar: the mean of the explained column over all subjects."""
    variance: float
    """The population variance of the explained column over all subjects (the total that Shapley effects split)."""
    subjects: int
    """n: how many subjects (rows) the cohorts were drawn from."""
    prediction: np.ndarray
    """y_t for each target."""
    cohort_size: np.ndarray
    """|C_{t,1:d}| for each target."""
    cohort_mean: np.ndarray
    """ybar_{t,1:d} for each target."""
    path_order: np.ndarray
    """Each target's features by decreasing |shapley| (indexes into `features`), shape (targets, features)."""
    path_size: np.ndarray
    """Cohort sizes as the features of `path_order` are added one at a time, shape (targets, features)."""
    path_mean: np.ndarray
    """Cohort means along the same refinement path, shape (targets, features)."""
    feature_cohort_size: np.ndarray
    """|C_{t,{j}}|: how many subjects are similar to the target on feature j alone, shape (targets, features)."""
    population: int | None = None
    """How many rows the targets were drawn from, when they are every row or a random sample of the
    table; None when they were chosen by id or predicate. Sets the finite-population correction."""
    path: str = "pairwise"
    """How the cohorts were found: ``pairwise`` or ``grouping_sets``."""
    outcome: str | None = None
    """The explained column (None when assembled from a warehouse's histogram)."""
    total_weight: float | None = None
    """The subjects' total case weight, n of a weighted table (None: unweighted, n = `subjects`)."""
    bootstrap: Bootstrap | None = None
    """Bayesian-bootstrap replicates and intervals (``bootstrap=B``), else None."""
    anchored_terms: np.ndarray | None = None
    """With ``anchored=K``: the paper's anchored terms (Theorem 1) of v_CS, the Harsanyi dividends g_T of
    every set T of 1..K features, shape (targets, sets) in `anchored`'s order; else None."""
    anchored_order: int = 0
    """K: the largest sets whose anchored terms were computed (0: none)."""

    @property
    def population_weight(self) -> float:
        """n, or the subjects' total weight when weighted: the size of the table cohorts are drawn from."""
        return float(self.subjects if self.total_weight is None else self.total_weight)

    @property
    def prediction_column(self) -> np.ndarray:
        return self.prediction

    def value_arrays(self) -> dict[str, np.ndarray]:
        arrays = super().value_arrays()
        if self.bootstrap is not None:
            arrays |= {
                "shapley_ci_low": self.bootstrap.shapley_low,
                "shapley_ci_high": self.bootstrap.shapley_high,
                "shapley_squared_ci_low": self.bootstrap.shapley_squared_low,
                "shapley_squared_ci_high": self.bootstrap.shapley_squared_high,
            }
        return arrays

    def group_arrays(self) -> dict[str, np.ndarray]:
        return {"shapley": self.shapley, "shapley_squared": self.shapley_squared}

    @cached_property
    def totals(self) -> pl.DataFrame:
        """One row per target: ``id``, ``prediction``, ``cohort_size``, ``cohort_mean``, ``value``,
        ``value_squared``; with ``include=`` ids beside a sample, ``in_sample`` (False for an included id
        the sample did not draw: it counts in no average over targets)."""
        value = self.cohort_mean - self.mean
        in_sample = self.in_sample
        return pl.DataFrame(
            {
                "id": self.ids,
                "prediction": self.prediction,
                "cohort_size": self.cohort_size,
                "cohort_mean": self.cohort_mean,
                "value": value,
                "value_squared": value**2,
                **({} if in_sample.all() else {"in_sample": in_sample}),
            }
        )

    @cached_property
    def diagnostics(self) -> Diagnostics:
        """How much of the explanation rests on tiny cohorts (see `cohortsql.results.cohort.diagnostics`)."""
        return diagnostics(
            self.cohort_size, self.feature_cohort_size, self.features, self.population_weight, self.target_weights
        )

    def reasons(self, k: int = 3) -> pl.DataFrame:
        """The top `k` features of each target by |shapley|: ``id``, ``prediction``, ``rank``, ``feature``,
        ``feature_value``, ``shapley`` and a ``reason`` in words, e.g. "sex = male lowered the cohort
        mean by 0.31" (relative to the mean over every subject)."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise CohortError(f"reasons(k): k must be a whole number >= 1, got {k!r}")
        targets, d = self.shapley.shape
        top = self.path_order[:, : min(k, d)]
        rows = np.repeat(np.arange(targets), top.shape[1])
        features = top.reshape(-1)
        values = self.shapley[rows, features]
        texts = self.feature_values[rows, features]
        names = np.array(self.features, dtype=object)[features]
        return pl.DataFrame(
            {
                "id": self.ids.gather(rows),
                "prediction": self.prediction[rows],
                "rank": np.tile(np.arange(1, top.shape[1] + 1), targets),
                "feature": pl.Series(names.tolist(), dtype=pl.String),
                "feature_value": pl.Series(texts.tolist(), dtype=pl.String),
                "shapley": values,
            }
        ).with_columns(reason=reason())

    def similar_interval(self, id: object, feature: str) -> tuple[float, float] | None:
        """The values of `feature` similar to target `id`'s (a closed interval), or None when the
        feature's kind is not an interval (``sql:``) or its value is missing."""
        if feature not in self.kinds:
            raise CohortError(
                f"similar_interval: {feature!r} is not a feature; the features are {', '.join(self.features)}"
            )
        value = self.targets[feature][self.index_of(id)]
        if value is None or isinstance(value, str):
            return None
        return self.kinds[feature].interval(float(value), self.feature_statistics[feature])

    def index_of(self, id: object) -> int:
        """Position of target `id` in `ids`."""
        matches = np.flatnonzero((self.ids == id).fill_null(False).to_numpy())
        if len(matches) == 0:
            raise CohortError(f"{id!r} is not one of the {len(self.ids)} targets of this result")
        return int(matches[0])

    @cached_property
    def paths(self) -> pl.DataFrame:
        """Each target's refinement path (the paper's cohort refinement): one row per (target, step) with
        ``id``, ``step``, the ``feature`` added at that step (step 0: none, the cohort is every subject;
        step 1: the most important feature), and the ``cohort_size`` and ``cohort_mean`` of the cohort
        similar to the target on the features so far."""
        targets, d = self.path_order.shape
        names = np.array([None, *self.features], dtype=object)
        order = np.column_stack([np.zeros(targets, dtype=np.int64), self.path_order + 1])
        sizes = np.column_stack([np.full(targets, self.population_weight), self.path_size])
        means = np.column_stack([np.full(targets, self.mean), self.path_mean])
        return pl.DataFrame(
            {
                "id": self.ids.gather(np.repeat(np.arange(targets), d + 1)),
                "step": np.tile(np.arange(d + 1), targets),
                "feature": pl.Series(names[order.reshape(-1)].tolist(), dtype=pl.String),
                "cohort_size": sizes.reshape(-1),
                "cohort_mean": means.reshape(-1),
            }
        )

    def anchored(self, max_order: int | None = None) -> pl.DataFrame:
        """With ``anchored=K``, each target's anchored terms g_T for the sets T of at most `max_order`
        (<= K, default K) features: ``id``, ``term`` (the features joined by " & "), ``order`` (|T|) and
        ``anchored``. v_CS(t, u) is the sum of g_T over T in u (the paper's Theorem 1), so all of a
        target's terms add up to cohort mean - mean, and phi_j = sum over T containing j of g_T / |T|."""
        table = anchored_table(self.features, self.anchored_terms, self.anchored_order, max_order)
        per_target = table.height // max(1, len(self.ids))
        return table.with_columns(id=self.ids.gather(np.repeat(np.arange(len(self.ids)), per_target))).select(
            "id", "term", "order", "anchored"
        )

    @property
    def spread(self) -> float:
        """The explained column's standard deviation over all subjects: the scale below which a value
        (in its units) is rounding noise of 0 (`cohortsql.formats.tables.ROUNDING`)."""
        return float(np.sqrt(max(self.variance, 0.0)))

    @property
    def target_variance(self) -> float:
        """Mean over the targets (weighted) of (y_t - ybar)^2: the variance of the explained column when
        the targets are every row, its estimate for a random sample, and the denominator of `global_`'s shares."""
        return float(np.average((self.prediction - self.mean) ** 2, weights=self.target_weights))

    @cached_property
    def global_(self) -> pl.DataFrame:
        """Per feature, the largest effect first, averaged over the targets (weighted by their case weights): ``shapley_effect``
        (the mean Shapley value of the squared game, the paper's squared cohort Shapley value; not the
        mean of shapley squared), its standard error ``shapley_effect_se``, ``share`` =
        shapley_effect / `target_variance`, and ``mean_abs_shapley``; with ``bootstrap=B``, the
        interval ``shapley_effect_ci_low`` .. ``_high``; with ``null=B``, the share's null reference
        (``null_share``, ``null_share_high``, ``p_value``: `cohortsql.results.null.NullReference`).

        When the targets are every row, the squared values average to the Shapley effects of
        v_var(u) = (1/n) sum_t (ybar_{t,u} - ybar)^2 exactly (paper: additivity of Shapley values), the
        shares are of the variance, and the standard error is 0. For a random sample of targets it is the
        sample mean's standard error, with the finite-population correction. For targets chosen by id or
        predicate, shares are of those targets' own spread around the overall mean.
        """
        weights = self.target_weights
        errors = standard_error(self.shapley_squared, self.population, self.shapley_squared_se, weights)
        effects = np.average(self.shapley_squared, axis=0, weights=weights)
        table = effects_table(self.features, effects, errors, self.target_variance)
        table = table.with_columns(
            mean_abs_shapley=pl.Series(np.average(np.abs(self.shapley), axis=0, weights=weights))
        )
        if self.bootstrap is not None:
            low, high = bias_corrected_interval(self.bootstrap.effects, effects, self.bootstrap.confidence, 0)
            table = table.with_columns(shapley_effect_ci_low=pl.Series(low), shapley_effect_ci_high=pl.Series(high))
        if self.null is not None:
            table = self.null.joined(table)
        return by_importance(table, "shapley_effect")

    def by(self, column: str, reference: object = None) -> pl.DataFrame:
        """Per group of `column` (any column of the data, a model input or not) and feature: the group's
        number of targets, and the mean and standard error of the cohort Shapley values and their squares
        (weighted by case weights).

        The audit of the paper's redlining point: e.g. the mean attribution to a protected attribute
        among women versus men. Standard errors treat the group's targets as a sample (no correction).

        With ``bootstrap=B``, each group's mean gets its interval (``shapley_ci_low`` .. ``_high``) and
        its difference from the `reference` group (default: the first group) a paired interval
        (``shapley_difference``, ``shapley_difference_ci_low`` .. ``_high``): every group's mean is
        recomputed under the same replicate weights, so the interval is of the differences.
        """
        table = super().by(column)
        if self.bootstrap is None:
            return table
        groups, number = target_groups(self.targets.filter(pl.Series(self.in_sample)), column)
        return table.join(
            self._group_intervals(column, groups, number, reference),
            on=[column, "feature"],
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )

    def _group_intervals(
        self, column: str, groups: pl.DataFrame, number: np.ndarray, reference: object
    ) -> pl.DataFrame:
        """Per group and feature: bootstrap intervals of the group's mean and of its difference from `reference`."""
        replicates = self.bootstrap
        assert replicates is not None
        if replicates.shapley is None or replicates.shapley_squared is None:
            size = len(self.ids) * replicates.replicates * len(self.features) * 8
            raise CohortError(
                f"by({column!r}) intervals need each target's replicate values, which were not kept for"
                f" {len(self.ids)} targets x {replicates.replicates} replicates ({size / 2**20:.0f} MiB, over"
                " the run's memory budget for them): use fewer targets (sample= / --sample) or replicates, or a larger"
                " memory_limit"
            )
        values = groups[column].to_list()
        if reference is None:
            position = 0
        elif reference in values:
            position = values.index(reference)
        else:
            raise CohortError(f"by({column!r}, reference={reference!r}): no such group; the groups are {values!r}")
        count, d = len(groups), len(self.features)
        columns: dict[str, pl.Series | np.ndarray] = {
            column: groups[column].gather(np.repeat(np.arange(count), d)),
            "feature": pl.Series(list(self.features) * count, dtype=pl.String),
        }
        confidence, kept = replicates.confidence, self.in_sample  # the targets that count in averages
        weights = replicates.target_weights[kept]
        for name, estimates in (("shapley", replicates.shapley), ("shapley_squared", replicates.shapley_squared)):
            means = bootstrap_module.group_means(estimates[kept], weights, number, count)
            low, high = percentile_interval(means, confidence, 1)
            columns[f"{name}_ci_low"], columns[f"{name}_ci_high"] = low.reshape(-1), high.reshape(-1)
        main = bootstrap_module.group_means(
            self.shapley[kept][:, None, :], self.target_weights[kept][:, None], number, count
        )[:, 0]
        columns["shapley_difference"] = (main - main[position]).reshape(-1)
        means = bootstrap_module.group_means(replicates.shapley[kept], weights, number, count)
        low, high = bootstrap_module.paired_differences(means, main, position, confidence)
        columns["shapley_difference_ci_low"], columns["shapley_difference_ci_high"] = low.reshape(-1), high.reshape(-1)
        return pl.DataFrame(columns)

    def to_shap(self, *, squared: bool = False, end: Literal["cohort_mean", "prediction"] = "cohort_mean") -> Any:
        """The values as a ``shap.Explanation`` (needs ``pip install 'cohortsql[shap]'``), for SHAP's
        waterfall, beeswarm and bar plots.

        shap labels a target's bars from E[f(X)] to f(x). Here E[f(X)] (``base_values``) is the mean ybar
        of the explained column and f(x) = base + the sum of the values is the target's cohort mean
        ybar_{t,1:d}: the mean over the rows similar to the target in every feature (v(1:d) + ybar,
        efficiency). It is the target's own prediction only when the target is alone in that cohort.
        With ``end="prediction"`` a last column, ``(rest of the full cohort)``, holds y_t - ybar_{t,1:d}
        so that f(x) reads as each target's prediction: it is not an attribution to any feature, it is
        what the features cannot separate the target from the rows that share all of its similarities.

        With ``squared=True`` the values are those of v_CS2 (base 0, f(x) = (ybar_{t,1:d} - ybar)^2, or
        (y_t - ybar)^2 with ``end="prediction"``). ``instance_names`` are the targets' ids as text, in
        the order ``targets=[...]`` listed them (``ex[0]`` is the first id asked for), else in id order;
        ``output_names`` says what f(x) is; estimated values carry ``error_std`` and bootstrap intervals
        ``lower_bounds`` / ``upper_bounds``.
        """
        try:
            import shap
        except ImportError:
            raise CohortError("to_shap() needs shap: pip install 'cohortsql[shap]'") from None
        if end not in ("cohort_mean", "prediction"):
            raise CohortError(f"to_shap(end={end!r}): end must be 'cohort_mean' or 'prediction'")
        values = self.shapley_squared if squared else self.shapley
        errors = self.shapley_squared_se if squared else self.shapley_se
        low = high = None
        if self.bootstrap is not None:
            low = self.bootstrap.shapley_squared_low if squared else self.bootstrap.shapley_low
            high = self.bootstrap.shapley_squared_high if squared else self.bootstrap.shapley_high
        data = self.targets.select(self.features)
        names = list(self.features)
        explained = self.settings.get("prediction", "the prediction")
        output = f"cohort mean of {explained}"
        if end == "prediction":
            own = self.prediction - self.mean
            rest = (own**2 if squared else own) - values.sum(axis=1)
            values = np.column_stack([values, rest])
            errors, low, high = (
                None if a is None else np.column_stack([a, np.zeros(len(a))]) for a in (errors, low, high)
            )
            data = data.with_columns(pl.lit(None).alias(FULL_COHORT_REST))
            names.append(FULL_COHORT_REST)
            output = explained
        if squared:
            output = f"({output} - mean)^2"
        order = self.asked_order()
        return shap.Explanation(
            values=values[order],
            base_values=np.full(len(values), 0.0 if squared else self.mean),
            data=_shap_data(data)[order],
            feature_names=names,
            instance_names=[str(target) for target in self.ids.gather(order).to_list()],
            output_names=output,
            error_std=None if errors is None else errors[order],
            lower_bounds=None if low is None else low[order],
            upper_bounds=None if high is None else high[order],
        )

    def report(self, path: str | os.PathLike[str], *, targets: list[Any] | None = None) -> None:
        """Write a self-contained HTML report (settings, diagnostics, effects, drivers, every target's
        top reasons, and a waterfall and refinement path for `targets`; see `cohortsql.report`)."""
        from cohortsql.report import ReportTables, write_report

        write_report(ReportTables.of_result(self), path, targets)

    def __repr__(self) -> str:
        extra = "" if self.bootstrap is None else f", bootstrap={self.bootstrap.replicates}"
        return (
            f"CohortShapleyResult({len(self.ids)} targets x {len(self.features)} features, "
            f"{self.subjects} subjects, mean={self.mean:.6g}, method={self.method!r}, path={self.path!r}{extra})"
        )


MISSING_TEXT = "(missing)"
"""A missing text value as `CohortShapleyResult.to_shap` hands it to shap (whose plots sort the values,
and cannot sort None beside text)."""


def _shap_data(data: pl.DataFrame) -> np.ndarray:
    """The targets' feature values as shap's plots read them: floats with NaN for missing numbers
    (shap's scatter colours NaN grey); where any feature is text, an object array whose numeric
    columns still hold floats and NaN and whose missing text reads `MISSING_TEXT`."""
    numeric = [dtype.is_numeric() or dtype in (pl.Boolean, pl.Null) for dtype in data.dtypes]
    columns = [
        data[name].cast(pl.Float64).fill_null(np.nan).to_numpy()
        if is_number
        else np.array(data[name].cast(pl.String).fill_null(MISSING_TEXT).to_list(), dtype=object)
        for name, is_number in zip(data.columns, numeric)
    ]
    if all(numeric):
        return np.column_stack(columns) if columns else np.empty((data.height, 0))
    return np.column_stack([column.astype(object) for column in columns])
