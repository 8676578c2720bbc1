"""`cohortsql.audit`: does a model's output lean on an attribute it never saw? The paper's audit for
indirect inference (Section 6) in one call: cohort Shapley with the protected attributes among the
features, read per attribute, per group of it, and through the features it acts with."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Unpack, cast

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql import queries
from cohortsql._typing import EVERY_OTHER, AuditOptions, BaselineOptions, ShapleyOptions
from cohortsql.api.baseline import baseline_shapley
from cohortsql.api.estimate import estimate
from cohortsql.api.fairness import fairness_in
from cohortsql.api.local import cohort_shapley_and
from cohortsql.errors import CohortError
from cohortsql.interrupts import interruptible_call
from cohortsql.request.arguments import check_bins_named, check_decisions, protected_names
from cohortsql.request.options import (
    AUDIT_BASELINES,
    AUDIT_NULL,
    AUDIT_REPLICATES,
    Options,
    checked_options,
    documented,
)
from cohortsql.request.similarity import SimilarityArgument
from cohortsql.results.audit import AuditResult, LevelSums, audit_tables
from cohortsql.results.audit_groups import QUANTILE_GROUPS, targets_grouping
from cohortsql.results.baseline import BaselineShapleyResult
from cohortsql.results.cohort import CohortShapleyResult
from cohortsql.results.fairness import FairnessResult
from cohortsql.run.plans import Plan
from cohortsql.run.session import Session


@documented
@interruptible_call
def audit(
    data: Any,
    *,
    prediction: str,
    protected: str | Sequence[str],
    similarity: SimilarityArgument,
    model: Any = None,
    threshold: float | None = None,
    observed: str | None = None,
    **options: Unpack[AuditOptions],
) -> AuditResult:
    """Audit the `prediction` column for reliance on `protected` attributes, model inputs or not.

    The protected attributes join `similarity` as features (with their default kinds unless
    `similarity` names them), and one cohort Shapley run with interaction values and bootstrap
    replicates gives, for each protected attribute A (see `AuditResult` for every column):

    - its Shapley effect, the targets' mean of phi_A(t) of the squared game v_CS2, and ``share`` = effect / variance, the part
      of the variance explained that it takes (with every row a target, exactly `shapley_effects`'
      share), with an interval, and its rank among the features;
    - per level of A (numbers in quartiles of the targets, or as ``protected_bins`` groups them): ``value`` = the mean of phi_A(t) over the
      level's targets, ``gap`` = the level's mean prediction minus the mean, ``share_of_gap`` =
      value / gap, and paired intervals of the difference from the largest level;
    - ``proxies``: the features A acts with, the level's mean Shapley interaction value Phi_Ak, so that
      value = value_alone + sum over k of Phi_Ak;
    - with `model`, A's baseline and all-baseline Shapley values, which are exactly 0 when the model
      never reads A while cohort Shapley can credit it: the paper's contrast.

    What the audit measures is association in the table, not causation, and it depends on the
    similarity chosen for every feature: a proxy compared too coarsely passes its credit to A.

    Parameters
    ----------
    data
        The table: any input `cohort_shapley` reads.
    prediction
        The column of the model's predictions (or decisions) to audit.
    protected
        The protected attribute(s): columns of `data`, which need not be model inputs.
    similarity
        The model's inputs (or the predictors to compare against), as for `cohort_shapley`.
    model
        Optionally the model itself, as `baseline_shapley` takes it; it is called on every feature
        (protected ones included: a model that never used them ignores them) and must reproduce
        `prediction` on the targets.
    threshold, observed
        With either, the decisions' group fairness metrics over every row beside the audit
        (`fairness`, with the same replicates, seed and ``protected_bins``): a score at or above
        `threshold` is selected (without it `prediction` holds 0/1 decisions), and `observed` names the
        column of observed outcomes for the true and false positive rates.
    **options
        `cohort_shapley`'s options (``id``, ``targets``, ``sample``, ``include`` (ids explained beside
        the sample, weighing 0 in the groups' statistics), ``seed``, ``weight``,
        ``bootstrap`` (default {default:audit_bootstrap}), ``confidence``, ``method``, ``tolerance``, ``max_permutations``,
        the `RunOptions`) and, with `model`, `baseline_shapley`'s (``model_input``, ``model_output``,
        ``model_tolerance``, ``batch_rows``), ``baseline_sample`` (baselines of all-baseline Shapley,
        default {default:audit_baseline_sample}) and ``model_targets`` (how many targets, a random sample, the model is explained
        for; default {default:model_targets}); ``protected_bins`` groups a numeric attribute's targets: ``{"age": [30, 50]}``
        (under 30, 30 to 50, 50 and over) or ``{"age": 10}`` (deciles of the targets).

    Returns
    -------
    AuditResult
        The ``attributes``, ``groups`` and ``proxies`` tables, the cohort run, a `summary` in words and
        a `report` with an Audit section.

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> found = cohortsql.audit(loans, prediction="score", protected="region", similarity=["income"],
    ...                         bootstrap=20, seed=1)
    >>> found.attributes["protected"].to_list()
    ['region']
    """
    names, run, checked = _cohort_run(prediction, protected, options)
    threshold = check_decisions(threshold, observed)  # before the run, not after it
    asked = checked_options(run, ShapleyOptions)
    if model is not None and isinstance(data, pa.RecordBatchReader):
        data = data.read_all()  # the model's games read the rows again, and a stream is read once

    def every_row(session: Session) -> tuple[dict[str, LevelSums], FairnessResult | None]:
        """In the run's own session (its data read once, its draws): each attribute's rows per value,
        and with a threshold or observed outcomes the decisions' fairness."""
        sums = {name: _level_sums(session, name) for name in names}
        if threshold is None and observed is None:
            return sums, None
        fair = fairness_in(session, names, prediction, threshold, observed, checked)
        return sums, fair

    similarity = _with_protected(similarity, names)
    result, (sums, fair) = cohort_shapley_and(data, prediction, similarity, asked, every_row)
    if not isinstance(result, CohortShapleyResult):  # one prediction, checked above: one result
        raise TypeError(f"cohort_shapley returned {type(result).__name__} for one prediction column")
    bins = checked.auditing.protected_bins
    groupings = {name: targets_grouping(result, name, bins.get(name, QUANTILE_GROUPS)) for name in names}
    attributes, groups, proxies = audit_tables(result, names, groupings, sums)
    if result.null is not None:
        attributes = result.null.joined(attributes, on="protected")
    if model is not None:
        contrast = _model_contrast(data, model, prediction, result, names, options, checked.modelling.model_targets)
        attributes = attributes.join(contrast, on="protected", how="left", maintain_order="left")
    return AuditResult(attributes, groups, proxies, result, names, fair)


@documented
@interruptible_call
def estimate_audit(
    data: Any,
    *,
    prediction: str,
    protected: str | Sequence[str],
    similarity: SimilarityArgument,
    **options: Unpack[AuditOptions],
) -> Plan:
    """What `audit` with these arguments would do and how long its cohort Shapley run should take
    (``audit --dry-run``): `estimate` of that run, with the protected attributes among the features,
    interaction values, and the audit's replicates ({default:audit_bootstrap} unless `bootstrap` says otherwise). With a
    model, the model's baseline Shapley on `model_targets` targets comes on top
    (`estimate_compare` times it).

    Parameters
    ----------
    data, prediction, protected, similarity
        What `audit` would audit, given as to it.
    **options
        Every option of `audit` (`AuditOptions`).

    Returns
    -------
    Plan
        The plan of the audit's cohort Shapley run and the pilot batch's time, which gives the estimate.

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> plan = cohortsql.estimate_audit(loans, prediction="score", protected="region", similarity=["income"])
    >>> plan.features, plan.replicates
    (2, 200)
    """
    names, run, _ = _cohort_run(prediction, protected, options)
    return estimate(data, prediction=prediction, similarity=_with_protected(similarity, names), **run)


def _cohort_run(
    prediction: object, protected: object, options: Mapping[str, Any]
) -> tuple[tuple[str, ...], ShapleyOptions, Options]:
    """The protected attributes' names, the options of the audit's cohort Shapley run (the caller's,
    with interaction values and the audit's replicates, `AUDIT_REPLICATES` by default) and the audit's
    own checked options, whose seed (drawn when not given) the run's options carry."""
    names = protected_names(protected)
    if not isinstance(prediction, str):
        raise CohortError(
            f"an audit explains one prediction column, got {prediction!r}: audit each column in a call of its own"
        )
    checked = checked_options(options, AuditOptions, bootstrap=AUDIT_REPLICATES, null=AUDIT_NULL)
    check_bins_named(checked.auditing.protected_bins, names)
    given = {key: value for key, value in options.items() if key in ShapleyOptions.__optional_keys__}
    run = cast(
        ShapleyOptions,
        given
        | {
            "interactions": True,
            "bootstrap": checked.weighting.bootstrap,
            "seed": checked.selection.seed,
            "null": checked.nulls.null,
            "null_features": checked.nulls.null_features or names,
        },
    )
    return names, run, checked


def _with_protected(similarity: SimilarityArgument, names: tuple[str, ...]) -> SimilarityArgument:
    """`similarity` with each protected attribute added (default kind) unless it already names it, or
    gives every other column a kind (``"all"``, or a ``"*"`` entry: the attribute takes that kind)."""
    if similarity == "all":
        return similarity
    if isinstance(similarity, Mapping):
        if EVERY_OTHER in similarity:
            return similarity
        return {**similarity, **{name: None for name in names if name not in similarity}}
    if isinstance(similarity, Sequence) and not isinstance(similarity, str):
        return [*similarity, *(name for name in names if name not in similarity)]
    return similarity  # cohort_shapley says what is wrong with it


def _level_sums(session: Session, name: str) -> LevelSums:
    """A protected attribute's rows summed per value over every row of a cohort run's session, under
    the run's weightings (its replicates' draws): the groups' sizes and gaps."""
    prepared = session.prepared
    assert prepared.subjects_with_data is not None  # a call's own session: never a snapshot
    sql = queries.fairness.level_measures(prepared.subjects_with_data, name, prepared.measures, session.engine.dialect)
    table = pl.from_arrow(session.engine.fetch_arrow(sql, context=f"summing the predictions by {name!r}"))
    assert isinstance(table, pl.DataFrame)
    return LevelSums(
        values=table["level"].alias(name),
        rows=table["row_count"].to_numpy().astype(np.int64),
        weights=table.select(prepared.measures.weight_names).to_numpy().astype(np.float64),
        sums=table.select(prepared.measures.sum_names).to_numpy().astype(np.float64),
    )


def _model_contrast(
    data: Any,
    model: Any,
    prediction: str,
    result: CohortShapleyResult,
    names: tuple[str, ...],
    options: AuditOptions,
    model_targets: int,
) -> pl.DataFrame:
    """Each protected attribute's mean |phi| under the model's baseline and all-baseline Shapley, on
    a random sample of `model_targets` of the audit's targets."""
    unused = ("targets", "sample", "weight", "bootstrap", "confidence", "baseline_sample", "method")
    passed = {
        key: value for key, value in options.items() if key in BaselineOptions.__optional_keys__ and key not in unused
    }
    seed = result.bootstrap.seed if result.bootstrap else options.get("seed")
    ids = result.ids
    if len(ids) > model_targets:
        ids = ids.gather(np.sort(np.random.default_rng(seed).choice(len(ids), model_targets, replace=False)))
    passed |= {"targets": ids.to_list(), "seed": seed}

    def mean_abs(values: BaselineShapleyResult) -> list[float]:
        return [float(np.mean(np.abs(values.shapley[:, values.features.index(name)]))) for name in names]

    explain = partial(baseline_shapley, data, model=model, features=result.similarity, prediction=prediction)
    one = cast(BaselineOptions, passed | {"baseline": "mean"})
    every = cast(
        BaselineOptions,
        passed | {"baseline": "all", "baseline_sample": options.get("baseline_sample") or AUDIT_BASELINES},
    )
    columns = {"baseline_mean_abs": mean_abs(explain(**one)), "all_baseline_mean_abs": mean_abs(explain(**every))}
    return pl.DataFrame({"protected": list(names), **columns})
