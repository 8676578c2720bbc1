"""`cohortsql.fairness`: group fairness metrics of a model's decisions, in fairlearn's vocabulary."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Unpack

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql import queries
from cohortsql._typing import FairnessOptions
from cohortsql.errors import CohortError, CohortWarning
from cohortsql.formats.settings import run_settings
from cohortsql.interrupts import interruptible_call
from cohortsql.numeric import fairness as metrics_module
from cohortsql.numeric.bootstrap import bias_corrected_interval
from cohortsql.request.arguments import check_bins_named, check_decisions, protected_names
from cohortsql.request.features import described_type, is_numeric, require_column
from cohortsql.request.options import AUDIT_REPLICATES, Options, checked_options, documented
from cohortsql.results.audit_groups import QUANTILE_GROUPS, grouping
from cohortsql.results.fairness import FairnessResult
from cohortsql.run.session import Session, open_session


@documented
@interruptible_call
def fairness(
    data: Any,
    *,
    prediction: str,
    protected: str | Sequence[str],
    threshold: float | None = None,
    observed: str | None = None,
    **options: Unpack[FairnessOptions],
) -> FairnessResult:
    """Group fairness metrics of the decisions in `prediction`, over every row of the table.

    A row is selected when its prediction is at or above `threshold` (a score), or, without one, when
    the prediction is 1 or true (a decision column of 0/1 or booleans). For each protected attribute:
    each group's selection rate, and with the `observed` outcomes (0/1 or booleans) its true and false
    positive rates; between the groups, the demographic-parity difference and ratio and the
    equalized-odds difference — fairlearn's ``MetricFrame`` of ``selection_rate``,
    ``true_positive_rate`` and ``false_positive_rate`` and its ``demographic_parity_difference``,
    ``demographic_parity_ratio`` and ``equalized_odds_difference``, computed in one GROUP BY on the
    engine. Every number has a Bayesian-bootstrap interval (`cohortsql.numeric.fairness`).

    These metrics describe the decisions, not why they were made: `audit` says how much of the
    predictions a protected attribute accounts for, and through which features.

    Parameters
    ----------
    data
        The table: any input `cohort_shapley` reads.
    prediction
        The column of scores (with `threshold`) or of 0/1 decisions.
    protected
        The protected attribute(s). Numbers with more than 4 distinct values are read in quartile
        groups of the rows unless ``protected_bins`` groups them (as `audit` does).
    threshold
        The score at or above which a row is selected; None: `prediction` holds the decisions.
    observed
        The column of observed outcomes (0/1 or booleans), for the true and false positive rates.
    **options
        ``weight`` (case weights), ``bootstrap`` (replicates, default {default:audit_bootstrap}; 0 for none), ``confidence``,
        ``seed``, ``protected_bins`` and the `RunOptions`.

    Returns
    -------
    FairnessResult
        The ``groups`` and ``metrics`` tables, and a `summary` in words.

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> found = cohortsql.fairness(loans, prediction="score", protected="region", threshold=0.5, seed=1)
    >>> found.metrics["metric"].to_list()
    ['demographic_parity_difference', 'demographic_parity_ratio']
    """
    names = protected_names(protected)
    threshold = check_decisions(threshold, observed)
    checked = checked_options(options, FairnessOptions, bootstrap=AUDIT_REPLICATES)
    check_bins_named(checked.auditing.protected_bins, names)
    # every row, whatever the targets; the cells' replicates are drawn here, not by the session
    plain = replace(
        checked,
        selection=replace(checked.selection, targets=None, sample=None),
        weighting=replace(checked.weighting, bootstrap=0),
    )
    with warnings.catch_warnings():
        # the protected attributes are grouped here, not compared as features: the session's warnings
        # about their similarity kinds say nothing about these metrics
        warnings.simplefilter("ignore", CohortWarning)
        similarity = dict.fromkeys(names, "exact")
        with open_session(  # counts by group: no row is read by itself, so rows need no positions
            data, plain, outcomes=(prediction,), similarity=similarity, max_features=len(names), rows_identified=False
        ) as session:
            return fairness_in(session, names, prediction, threshold, observed, checked)


def fairness_in(
    session: Session,
    names: tuple[str, ...],
    prediction: str,
    threshold: float | None,
    observed: str | None,
    checked: Options,
) -> FairnessResult:
    """`fairness` over every row of a session's data (its own, or an audit's cohort run's), under the
    call's checked options (replicates, their seed and coverage, case weights, ``protected_bins``)."""
    cells = {name: _cells(session, name, prediction, threshold, observed) for name in names}
    replicates, seed = checked.weighting.bootstrap, checked.selection.seed
    bins = checked.auditing.protected_bins
    groups, metrics = [], []
    for index, name in enumerate(names):
        spec = bins.get(name, QUANTILE_GROUPS)
        confidence = checked.weighting.confidence
        table, between = _tables(
            name, cells[name], spec, observed is not None, replicates, (seed or 0) + index, confidence
        )
        groups.append(table)
        metrics.append(between)
    settings = run_settings(
        prediction=prediction,
        protected=list(names),
        threshold=threshold,
        observed=observed,
        weight=checked.weighting.weight,
        **({"bootstrap": replicates, "confidence": checked.weighting.confidence, "seed": seed} if replicates else {}),
    )
    return FairnessResult(pl.concat(groups, how="diagonal_relaxed"), pl.concat(metrics), names, settings)


def _cells(session: Session, name: str, prediction: str, threshold: float | None, outcome: str | None) -> pl.DataFrame:
    """The rows counted by `name`'s value, decision and observed outcome, checked: decisions and outcomes are 0/1."""
    prepared = session.prepared
    schema = prepared.input.schema
    if outcome is not None:
        columns = dict(zip(schema.names, schema.types, strict=True))
        require_column(columns, outcome, "observed")
        kind = columns[outcome]
        if not (pa.types.is_boolean(kind) or is_numeric(kind)):
            raise CohortError(f"observed column {outcome!r} holds {described_type(kind)}; it must hold 0/1 or booleans")
    sql = queries.fairness.fairness_cells(
        prepared.input.relation,
        name,
        prediction,
        threshold=threshold,
        prediction_is_boolean=pa.types.is_boolean(schema.field(prediction).type),
        outcome=outcome,
        outcome_is_boolean=outcome is not None and pa.types.is_boolean(schema.field(outcome).type),
        weight=prepared.weight,
        dialect=session.engine.dialect,
    )
    found = pl.from_arrow(session.engine.fetch_arrow(sql, context=f"counting decisions by {name!r}"))
    assert isinstance(found, pl.DataFrame)
    # in one order whatever the engine's: each cell's replicate draws are then the same on every engine
    found = found.sort(["level", "decision", "observed"], nulls_last=True)
    if (found["decision"] == 2).any():
        raise CohortError(
            f"prediction column {prediction!r} holds values other than 0 and 1 (or true and false): give the"
            " score at or above which a row is selected (threshold=)"
        )
    if (found["observed"] == 2).any():
        raise CohortError(f"observed column {outcome!r} holds values other than 0 and 1 (or true and false), or NULL")
    return found


def _tables(
    name: str,
    found: pl.DataFrame,
    bins: int | tuple[float, ...],
    observed: bool,
    replicates: int,
    seed: int,
    confidence: float,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One attribute's rows of the groups and metrics tables, from its cells (`observed`: with outcomes)."""
    values = found["level"].alias(name)
    levels = found.group_by("level", maintain_order=True).agg(pl.col("count").sum())
    groups = grouping(levels["level"].alias(name), bins, levels["count"].to_numpy())
    position = {_key(value): index for index, value in enumerate(levels["level"].to_list())}
    number = np.array([groups.number[position[_key(value)]] for value in values.to_list()], dtype=np.int64)
    cells = metrics_module.Cells(
        group=number,
        decision=found["decision"].to_numpy(),
        observed=found["observed"].to_numpy() if observed else None,
        weight=found["weight"].to_numpy().astype(np.float64),
        weight_squared=found["weight_squared"].to_numpy().astype(np.float64),
        groups=len(groups.levels),
    )
    rates = metrics_module.group_rates(cells, cells.weight)
    between = metrics_module.between_groups(rates)
    table: dict[str, Any] = {
        "protected": [name] * len(groups.levels),
        "grouping": [groups.grouping] * len(groups.levels),
        "level": pl.Series(groups.levels, dtype=pl.String),
        "label": groups.labels,
        "rows": np.bincount(number, weights=found["count"].to_numpy(), minlength=len(groups.levels)).astype(np.int64),
        "weight": np.bincount(number, weights=cells.weight, minlength=len(groups.levels)),
    }
    interval: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if replicates:
        ends = {rate: (np.empty(len(estimate)), np.empty(len(estimate))) for rate, estimate in rates.items()}
        spread: metrics_module.Extremes | None = None
        for chunk, replicate_rates in metrics_module.replicate_rates(cells, replicates, seed):  # bounded memory
            for rate, replicated in replicate_rates.items():
                low, high = bias_corrected_interval(replicated, rates[rate][chunk], confidence, 1)
                ends[rate][0][chunk], ends[rate][1][chunk] = low, high
            spread = metrics_module.merged(spread, metrics_module.extremes(replicate_rates))
        assert spread is not None
        replicate_between = metrics_module.metrics_of(spread)
        for metric, estimate in between.items():
            interval[metric] = _within_unit(
                *bias_corrected_interval(replicate_between[metric], estimate, confidence, 0)
            )
        for rate, estimate in rates.items():
            low, high = _within_unit(*ends[rate])
            table[rate], table[f"{rate}_ci_low"], table[f"{rate}_ci_high"] = estimate, low, high
    else:
        table |= rates
    metrics = pl.DataFrame(
        {
            "protected": [name] * len(between),
            "metric": list(between),
            "value": [float(value) for value in between.values()],
            "ci_low": [float(interval[metric][0]) if metric in interval else None for metric in between],
            "ci_high": [float(interval[metric][1]) if metric in interval else None for metric in between],
        },
        nan_to_null=True,
        schema_overrides={"ci_low": pl.Float64, "ci_high": pl.Float64},
    )
    return pl.DataFrame(table, nan_to_null=True), metrics


def _within_unit(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An interval of a rate, a difference of rates or their ratio, all between 0 and 1: the bias
    correction's shift may carry an end of a rate near 0 or 1 past it."""
    return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)


def _key(value: object) -> object:
    """A value as a dictionary key: every NaN the same key (NaN is not equal to itself)."""
    return "NaN" if isinstance(value, float) and math.isnan(value) else (type(value) is str, value)
