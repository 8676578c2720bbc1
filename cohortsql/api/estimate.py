"""`cohortsql.estimate` and `cohortsql.estimate_compare`: the plan of a run and its time, from timed
pilot batches (``--dry-run``)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Literal, Unpack

import numpy as np

from cohortsql._typing import CompareOptions, Prediction, ShapleyOptions
from cohortsql.api.baseline import check_model, explain_with_model
from cohortsql.api.compare import checked_comparison
from cohortsql.api.local import copy_shares
from cohortsql.games.cohort import CohortGame
from cohortsql.interrupts import interruptible_call
from cohortsql.numeric import compilation, kernels
from cohortsql.request.arguments import explained_columns
from cohortsql.request.options import Options, checked_options
from cohortsql.request.similarity import SimilarityArgument
from cohortsql.run import readouts
from cohortsql.run.baseline_exact import Model
from cohortsql.run.integrated import IntegratedBatch
from cohortsql.run.null_copies import check_players, null_shares
from cohortsql.run.pace import CALIBRATION_FACTOR, fitted_costs
from cohortsql.run.plans import SCALED_PILOT, ComparisonPlan, ModelGamePlan, PilotScale, Plan
from cohortsql.run.progress import Silent
from cohortsql.run.route import Route
from cohortsql.run.session import Session, open_session
from cohortsql.run.strategy import MAX_FEATURES, choose_route, local_batches, make_pacer, model_route
from cohortsql.run.targets import TargetSet


@interruptible_call
def estimate(
    data: Any,
    *,
    prediction: Prediction,
    similarity: SimilarityArgument,
    **options: Unpack[ShapleyOptions],
) -> Plan:
    """What `cohort_shapley` with these arguments would do and how long it should take: the data are
    read and checked, the targets chosen, and one small pilot batch computed and timed (``--dry-run``).

    Parameters
    ----------
    data, prediction, similarity
        What `cohort_shapley` would explain, given as to it.
    **options
        Every option of `cohort_shapley` (`ShapleyOptions`).

    Returns
    -------
    Plan
        The plan (targets, features, method, path, engine) and the pilot batch's time, which gives the estimate.

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> plan = cohortsql.estimate(loans, prediction="score", similarity={"income": "abs:15", "region": "exact"})
    >>> plan.targets, plan.method, plan.path
    (12, 'exact', 'pairwise')
    """
    asked = checked_options(options, ShapleyOptions)
    outcomes = explained_columns(prediction)
    piloted, scale = pilot_options(asked)
    with open_session(data, piloted, outcomes=outcomes, similarity=similarity, max_features=MAX_FEATURES) as session:
        chosen = session.select()
        plan = cohort_plan(session, chosen, scale).scaled(scale)
        tested = asked.nulls.null_features or session.prepared.player_names
        check_players(session.prepared, tested)
        if not asked.nulls.null:
            return plan
        copies, distinct = asked.nulls.null, chosen.distinct.num_rows
        timed_copies = min(copies, TIMED_COPIES)
        sizes = sorted({max(1, plan.pilot_targets // 4), plan.pilot_targets})
        timed = [(size, _copies(session, chosen.first(size), tested[0], timed_copies, distinct)) for size in sizes]
        per_target, fixed = fitted_costs(timed[0], timed[-1])
        feature = (fixed + per_target * distinct) * copies / timed_copies
        how = (
            f"from {timed_copies} of them timed on {' and '.join(f'{size:,}' for size in sizes)} distinct targets"
            f" ({', '.join(f'{seconds:.2f} s' for _, seconds in timed)}), a fixed cost and a cost per target,"
            f" times {copies} / {timed_copies}"
        )
        return plan.with_null(copies, len(tested), feature, how)


TIMED_COPIES = 4
"""Shuffled copies a dry run times (of the first feature tested): each copy costs about the same."""


def _copies(session: Session, pilot: TargetSet, tested: str, copies: int, run_targets: int) -> float:
    """The seconds `copies` shuffled copies of feature `tested` take on the `pilot` targets, computed as
    the null reference computes them for a run of `run_targets` distinct targets
    (`cohortsql.api.local.copy_shares`, in one pass where it can)."""
    ids = pilot.table.column("__cohort_id").to_pylist()
    selection = replace(session.options.selection, targets=ids, sample=None, include=None)
    variances = np.ones(len(session.prepared.outcomes))  # a scale of the shares: not what is timed
    on_pilot = replace(session, options=replace(session.options, selection=selection))
    began = time.perf_counter()
    null_shares(on_pilot, [tested], copies, copy_shares, variances, run_targets)
    return time.perf_counter() - began


@interruptible_call
def estimate_compare(
    data: Any,
    *,
    model: Any,
    prediction: str,
    similarity: SimilarityArgument,
    **options: Unpack[CompareOptions],
) -> ComparisonPlan:
    """What `compare` with these arguments would do and how long each of its three stages should take
    (``compare --dry-run``): cohort Shapley's plan as `estimate` gives it, then baseline and
    all-baseline Shapley each run on their first few targets and timed (twice as many again when that
    was quick, so that the fixed cost of reading the baselines is not charged to every target).

    Parameters
    ----------
    data, model, prediction, similarity
        What `compare` would explain, given as to it. The model is checked against `prediction` first,
        as `compare` does.
    **options
        Every option of `compare` (`CompareOptions`).

    Returns
    -------
    ComparisonPlan
        The cohort plan and each model game's plan (baseline and all-baseline Shapley), with their
        estimates and the total.

    Examples
    --------
    >>> import cohortsql
    >>> plan = cohortsql.estimate_compare(
    ...     cohortsql.datasets.loans(), model=cohortsql.datasets.loans_model, prediction="score",
    ...     model_input="polars", similarity={"income": "abs:15", "region": "exact"},
    ... )
    >>> [(game.game, game.baselines, game.points_per_target) for game in plan.model_games]
    [('baseline', 1, 4), ('all-baseline', 12, 48)]
    """
    asked, function = checked_comparison(options, prediction, model)
    piloted, scale = pilot_options(asked)
    with open_session(
        data, piloted, outcomes=(prediction,), similarity=similarity, max_features=MAX_FEATURES
    ) as session:
        chosen = session.select()
        check_model(session, chosen, model)
        cohort = cohort_plan(session, chosen, scale).scaled(scale)
        route = model_route(asked.estimation.method, session.prepared.players)
        quiet = replace(session, options=replace(piloted, where=replace(piloted.where, progress=False)))
        games = tuple(
            _model_game_plan(quiet, chosen, function, baseline, route, scale.permutations)
            for baseline in ("mean", "all")
        )
    return ComparisonPlan(cohort, games)


PILOT_REPLICATES = 8
"""Bootstrap replicates a dry run's pilot computes, however many are asked: each adds its sums to every
target-subject pair and a game to every target, so a run's cost grows as 1 + B, and the pilot's time is
scaled by it (10^8 replicates on 200 rows: a plan in a second, not a run out of memory)."""
PILOT_PERMUTATIONS = 16
"""Random orders a dry run's pilot draws per target, however many are allowed: the permutation
method's cost per target grows with them, and its estimate is scaled to the most allowed (an upper
bound: the stop rule may end sooner)."""


def pilot_options(asked: Options) -> tuple[Options, PilotScale]:
    """The options a dry run's pilot runs with (at most `PILOT_REPLICATES` replicates and
    `PILOT_PERMUTATIONS` permutations), and how much more the asked run costs per target."""
    weighting, estimation = asked.weighting, asked.estimation
    replicates = min(weighting.bootstrap, PILOT_REPLICATES)
    permutations = min(estimation.max_permutations, PILOT_PERMUTATIONS)
    piloted = replace(
        asked,
        weighting=replace(weighting, bootstrap=replicates),
        estimation=replace(estimation, max_permutations=permutations, tolerance=None),
    )
    scale = PilotScale(
        (1 + weighting.bootstrap) / (1 + replicates), estimation.max_permutations / permutations, weighting.bootstrap
    )
    return piloted, scale


PILOT_MODEL_POINTS = 1 << 18
"""Hybrid points of the model games' pilot run (at least one target): a fraction of a second for a
fitted scikit-learn model."""
CALIBRATION_BELOW_SECONDS = 1.0
"""A model game's pilot quicker than this is followed by one `CALIBRATION_FACTOR` times larger, whose
difference from it separates the fixed cost (reading the baselines, their realism) from each target's."""


def _model_game_plan(
    session: Session,
    chosen: TargetSet,
    function: Model,
    baseline: Literal["mean", "all"],
    route: Route,
    permutations: float,
) -> ModelGamePlan:
    """Baseline (`baseline="mean"`) or all-baseline Shapley's plan: the game run on its first targets
    and timed, its cost per target and fixed cost fitted as the pacer fits them (`fitted_costs`); with
    the permutation method, the session's pilot permutations, the cost per target times `permutations`."""
    prepared, modelling = session.prepared, session.options.modelling
    baselines = (
        1 if baseline == "mean" else min(prepared.subject_count, modelling.baseline_sample or prepared.subject_count)
    )
    scale = 1.0 if route.exact else permutations
    if route.exact:
        per_target = baselines << prepared.players
    else:
        per_target = round(session.options.estimation.max_permutations * permutations) * (prepared.d + 1)
    distinct = chosen.distinct.num_rows
    timed: list[tuple[int, float]] = []
    size = max(1, min(distinct, PILOT_MODEL_POINTS // per_target))
    while True:
        began = time.perf_counter()
        explain_with_model(session, chosen.first(size), function, baseline=baseline, route=route)
        timed.append((size, time.perf_counter() - began))
        if len(timed) == 2 or size == distinct or timed[0][1] >= CALIBRATION_BELOW_SECONDS:
            break
        size = min(distinct, CALIBRATION_FACTOR * size)
    per_target_seconds, fixed = fitted_costs(timed[0], timed[-1])
    return ModelGamePlan(
        game="baseline" if baseline == "mean" else "all-baseline",
        route=route,
        distinct_targets=distinct,
        baselines=baselines,
        points_per_target=per_target,
        pilot_targets=max(size for size, _ in timed),  # the runs repeat the first targets
        pilot_seconds=sum(seconds for _, seconds in timed),
        estimated_seconds=fixed + per_target_seconds * scale * distinct,
    )


def cohort_plan(session: Session, chosen: TargetSet, scale: PilotScale) -> Plan:
    """Cohort Shapley's plan for the `chosen` targets of the session: its method and path, and one
    pilot and one calibration batch timed (`cohortsql.run.pace.Pacer`), and more while they are small;
    over every target when the pilot is `scale`d down from the run (`SCALED_PILOT`)."""
    running, prepared, asked = session.engine, session.prepared, session.options
    estimation = asked.estimation
    route = choose_route(estimation.method, estimation.path, prepared, chosen.count)
    scaled = scale.replicates * (scale.permutations if route.random else 1.0)
    share = 1.0 if scaled >= SCALED_PILOT else 0.5  # a scaled-down pilot may time every target
    games = chosen.distinct.num_rows * max(1, prepared.measures.games) * round(scale.replicates)
    compiling = compilation.seconds()
    if route.exact and kernels.worth_compiling(games, prepared.players):
        kernels.compile_now()  # the run computes compiled: the pilot must not time the compilation
    pacer = make_pacer(running, prepared, chosen, route, Silent(), pilot_only=True, pilot_share=share)
    batches = local_batches(
        running,
        prepared,
        chosen,
        route,
        pacer,
        asked.selection.seed,
        estimation.max_permutations,
        None,
        interactions=asked.terms.interactions and route.random,  # estimated with the values
    )
    pilot = sum(
        batch.rows
        if isinstance(batch, IntegratedBatch)
        else len(batch[0])
        if isinstance(batch, list)
        else len(batch.per_row.shapley) // max(1, prepared.measures.games)
        for batch in batches
    )
    passes = _second_passes(session, route)
    terms_seconds, terms_pilot = 0.0, 0
    if passes:
        sample = chosen.first(pilot)
        began, compiled = time.perf_counter(), compilation.seconds()
        _run_second_passes(replace(session, options=_silent(asked)), sample, passes)
        timed = time.perf_counter() - began - (compilation.seconds() - compiled)  # the run reads numba's cache
        terms_pilot = sample.distinct.num_rows
        terms_seconds = timed * chosen.distinct.num_rows / terms_pilot
    return Plan(
        targets=chosen.count,
        distinct_targets=chosen.distinct.num_rows,
        subjects=prepared.subject_count,
        subject_rows=prepared.subject_rows,
        features=prepared.d,
        players=prepared.players,
        route=route,
        engine=running.dialect.name,
        pilot_targets=pilot,
        pilot_seconds=sum(seconds for _, seconds in pacer.timed),
        estimated_seconds=pacer.run_seconds(pilot) + terms_seconds,
        compile_seconds=compilation.seconds() - compiling,
        replicates=prepared.measures.replicates,
        second_passes=passes,
        second_pass_seconds=terms_seconds,
        second_pass_pilot=terms_pilot,
        rows_collapsed=prepared.compressed,
        settings=session.settings(chosen, method=route.method, path=route.path),
    )


def _second_passes(session: Session, route: Route) -> tuple[str, ...]:
    """What an exact run computes in a pass of its own after the values (`explain_targets`):
    interaction values, anchored terms, Owen values."""
    if not route.exact:
        return ()
    terms, groups = session.options.terms, session.prepared.groups
    passes: tuple[str, ...] = ("interaction values",) if terms.interactions else ()
    passes += ("anchored terms",) if terms.anchored else ()
    return passes + (("Owen values",) if groups is not None and groups.values == "owen" else ())


def _run_second_passes(session: Session, sample: TargetSet, passes: tuple[str, ...]) -> None:
    """The second passes of `passes` on the `sample` targets, as the run makes them."""
    games = [CohortGame(outcome) for outcome in range(len(session.prepared.outcomes))]
    terms = session.options.terms
    if "interaction values" in passes or "anchored terms" in passes:
        readouts.lattice_terms(session, sample, games, interactions=terms.interactions, anchored=terms.anchored)
    if "Owen values" in passes:
        readouts.owen_values(session, sample, games)


def _silent(options: Options) -> Options:
    """`options` with no progress shown (a dry run's passes are timed, not watched)."""
    return replace(options, where=replace(options.where, progress=False))
