"""`cohortsql.shapley_effects`: Shapley effects, each feature's share of the variance the cohorts
explain (global importance).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Unpack, overload

import numpy as np
import polars as pl

from cohortsql._typing import EffectsOptions, Prediction
from cohortsql.api.integrated import check_integrated, integrated_fields
from cohortsql.api.nulls import null_references, shares_by_player
from cohortsql.errors import CohortError
from cohortsql.formats.tables import diagnostics, warn_about_cohorts
from cohortsql.games.cohort import CohortGame
from cohortsql.interrupts import interruptible_call
from cohortsql.numeric import bootstrap as bootstrap_module
from cohortsql.numeric import permutation
from cohortsql.request.arguments import drawn_seed, explained_columns
from cohortsql.request.options import checked_options
from cohortsql.request.similarity import SimilarityArgument
from cohortsql.results.copies import copy_check_rows, warn_about_copies
from cohortsql.results.effects import ShapleyEffects, owen_effects_table
from cohortsql.results.outcomes import ShapleyEffectsResults
from cohortsql.run import readouts
from cohortsql.run.grouping_sets import variance_game
from cohortsql.run.route import Route
from cohortsql.run.session import Session, compared_exactly, feature_kinds, open_session
from cohortsql.run.strategy import (
    check_interactions,
    check_owen,
    choose_route,
    exact_route,
    feature_limit,
    local_batches,
    make_pacer,
)
from cohortsql.run.targets import TargetSet


@overload
def shapley_effects(
    data: Any,
    *,
    prediction: str,
    similarity: SimilarityArgument,
    **options: Unpack[EffectsOptions],
) -> ShapleyEffects: ...


@overload
def shapley_effects(
    data: Any,
    *,
    prediction: Sequence[str],
    similarity: SimilarityArgument,
    **options: Unpack[EffectsOptions],
) -> ShapleyEffectsResults: ...


@interruptible_call
def shapley_effects(
    data: Any,
    *,
    prediction: Prediction,
    similarity: SimilarityArgument,
    **options: Unpack[EffectsOptions],
) -> ShapleyEffects | ShapleyEffectsResults:
    """Shapley effects: the exact Shapley values of v_var(u) = (1/n) sum_t (ybar_{t,u} - ybar)^2.

    They split the variance explained by the cohorts on all d predictors, v_var(1:d), over the
    predictors; ``share`` divides by the variance of the explained column. With every row as a
    target this is exact. With a sample of targets (``sample=`` a count or a fraction, drawn with
    `seed`) v_var is the sample mean over the sampled targets and every effect gets a standard error.
    With case weights, v_var averages over the targets weighted by them; with ``bootstrap=B``, each
    effect gets a bias-corrected percentile interval (the replicates' central interval less their bias)
    from B Bayesian-bootstrap replicates of the whole table.

    ``method="permutation"`` (or ``"auto"``, above d = 16; up to 128 features) estimates them by
    linearity: v_var is the mean over the targets of the squared games v_t(u)^2, so its Shapley values
    are the mean of the targets' Shapley values of v_t^2, each estimated from random antithetic orders
    (at most `max_permutations` per target, fewer once every standard error is below `tolerance`).
    Their standard errors add the permutations' error to the sampling of targets; v_var(1:d), the
    total, stays exact. With ``interactions=True`` (exact method), ``interactions`` and
    ``interaction_table`` hold the interaction values of v_var in shap's convention (each feature's
    row adds up to its effect). Arguments are those of `cohort_shapley`; `variance_shapley` is the
    same function.

    Parameters
    ----------
    data
        The table: any input `cohort_shapley` reads.
    prediction
        The column to explain, or a list of columns explained over the same cohorts in one pass.
    similarity
        Feature -> similarity kind, or a list of features with default kinds (as for `cohort_shapley`).
    **options
        Which rows, weights and intervals, the method, interaction values, anchored terms, groups and where it runs (`EffectsOptions`; the options of `cohort_shapley` with the same names mean the same):
        ``id``, ``targets``, ``sample``, ``seed``, ``weight``, ``bootstrap``, ``confidence``, ``method``, ``tolerance``, ``max_permutations``, ``path``, ``interactions``, ``anchored``, ``groups``, ``group_values`` and the `RunOptions`.

    Returns
    -------
    ShapleyEffects or ShapleyEffectsResults
        The effects of each feature, largest first, one result per explained column when several are given.

    Examples
    --------
    >>> import polars as pl
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> similarity = {"income": "abs:15", "region": "exact"}
    >>> effects = cohortsql.shapley_effects(loans, prediction="score", similarity=similarity)
    >>> effects.effects.select("feature", pl.col("share").round(3)).rows()
    [('income', 0.78), ('region', 0.142)]
    """
    asked = checked_options(options, EffectsOptions)
    outcomes = explained_columns(prediction)
    limit = feature_limit(asked.estimation.method)
    with open_session(data, asked, outcomes=outcomes, similarity=similarity, max_features=limit) as session:
        kinds = feature_kinds(session.prepared)
        prepared = session.prepared
        route = choose_route(asked.estimation.method, asked.estimation.path, prepared, prepared.subject_count)
        if route.integrated:
            check_integrated(asked.terms, prepared)
        check_interactions(asked.terms, asked.estimation.method, route, prepared.players)
        check_owen(route, prepared)
        if route.random:
            if session.prepared.measures.replicates:
                raise CohortError(
                    "bootstrap intervals need method='exact' (the permutation method has standard errors)"
                )
            # the seed is recorded in the settings, so the run can be repeated
            session = replace(session, options=asked.with_seed(drawn_seed(asked.selection.seed)))
        results = _effects(session, route)
        variances = np.array([effects.variance for effects in results.values()])
        copies = lambda copy: _shares(copy, _effects(copy, route))  # noqa: E731 (a copy's run is the run's own)
        nulls = null_references(session, copies, _shares(session, results), variances)
        if nulls is not None:
            results = {outcome: results[outcome].with_null(null) for outcome, null in zip(results, nulls)}
        rows = session.sample_rows(copy_check_rows(session.prepared.d))
        features = session.prepared.feature_names
        exactly = compared_exactly(session.prepared)
    warn_about_cohorts(next(iter(results.values())).diagnostics, kinds, exactly)
    for outcome in outcomes:
        warn_about_copies(rows, features, rows[outcome].cast(pl.Float64).to_numpy(), outcome)
    return next(iter(results.values())) if isinstance(prediction, str) else ShapleyEffectsResults(results)


def _effects(session: Session, route: Route) -> dict[str, ShapleyEffects]:
    """Every explained column's effects by the route's method: integrated, by permutations, or exact."""
    if route.integrated:
        return _integrated_effects(session, route)
    if route.random:
        return _estimated_effects(session, route)
    return _exact_effects(session)


def _shares(session: Session, results: dict[str, ShapleyEffects]) -> np.ndarray:
    """Every result's share of each player, (results, players) in the session's players' order."""
    return shares_by_player([effects.effects for effects in results.values()], session.prepared.player_names)


def _exact_effects(session: Session) -> dict[str, ShapleyEffects]:
    """Every explained column's effects as the Shapley values of its exact variance game: from grouping
    sets over every row when they apply, else the mean of the targets' squared games."""
    selection, options = session.options.selection, session.options
    targets, sample, seed = selection.targets, selection.sample, selection.seed
    confidence, path = options.weighting.confidence, options.estimation.path
    running, prepared = session.engine, session.prepared
    measures, outcomes = prepared.measures, prepared.outcomes
    features = prepared.player_names
    route = exact_route(path, prepared, prepared.subject_count)
    settings = session.settings(None, method=route.method, path=path)
    if targets is None and sample is None and route.by_cells:
        (games, checks), squared, target_weights = variance_game(running, prepared), None, None
        count, population = prepared.subject_count, None
        variances = prepared.variances
    else:
        chosen = session.select()
        count, population = chosen.count, chosen.population
        route = exact_route(path, prepared, count)
        pacer = make_pacer(running, prepared, chosen, route, session.reporter())
        batches = local_batches(running, prepared, chosen, route, pacer, seed, 2, None)
        collected = bootstrap_module.collect(batches, measures, confidence, keep=False, intervals=False).fanned_out(
            chosen.group
        )
        weights = chosen.weights[:, measures.weighting_of_game]
        games = collected.squared_games / weights.sum(axis=0)[:, None]
        squared = [values.shapley_squared for values in collected.values]
        target_weights = chosen.weights[:, 0]
        variances = _target_variances(session, chosen)
        first = collected.values[0]
        checks = diagnostics(
            first.cohort_size, first.feature_cohort_size, features, prepared.total_weight, target_weights
        )
    owen = _owen_effects(session, chosen) if prepared.groups is not None and prepared.groups.values == "owen" else None
    return _grouped(
        session,
        {
            outcome: ShapleyEffects.from_game(
                features=features,
                game=games[measures.game(index, 0)],
                variance=float(variances[index]),
                subjects=prepared.subject_count,
                targets=count,
                squared_values=None if squared is None else squared[index],
                population=population,
                path=route.path,
                diagnostics=checks,
                settings={**settings, "prediction": outcome, "path": route.path},
                target_weights=target_weights if prepared.weight is not None else None,
                replicate_games=games[measures.game(index, 1) : measures.game(index + 1, 0)]
                if measures.replicates
                else None,
                confidence=confidence,
                interactions=options.terms.interactions,
                anchored=options.terms.anchored,
            )
            for index, outcome in enumerate(outcomes)
        },
        owen,
    )


def _estimated_effects(session: Session, route: Route) -> dict[str, ShapleyEffects]:
    """Every explained column's effects by the permutation method: by linearity, the (weighted) mean
    over the targets of their estimated Shapley values of v_t(u)^2, whose mean over the targets is
    v_var(u); the standard errors add the permutations' error to the sampling of targets."""
    running, prepared = session.engine, session.prepared
    features = prepared.player_names
    chosen = session.select()
    pacer = make_pacer(running, prepared, chosen, route, session.reporter())
    batches = list(
        local_batches(
            running,
            prepared,
            chosen,
            route,
            pacer,
            session.options.selection.seed,
            session.options.estimation.max_permutations,
            session.options.estimation.tolerance,
        )
    )
    settings = session.settings(chosen, method=route.method, path=route.path)
    target_weights = chosen.weights[:, 0]
    variances = _target_variances(session, chosen)
    results = {}
    for index, outcome in enumerate(prepared.outcomes):
        estimates = [estimate for batch in batches for estimate in batch[index]]
        stacked = permutation.stack(estimates, chosen.group)
        checks = diagnostics(
            stacked.cohort_size,
            stacked.feature_cohort_size,
            features,
            prepared.total_weight,
            target_weights,
        )
        results[outcome] = ShapleyEffects.from_estimates(
            features=features,
            squared_values=stacked.shapley_squared,
            distinct_errors=np.array([estimate.shapley_squared_se for estimate in estimates]),
            group=chosen.group,
            target_weights=target_weights,
            variance=float(variances[index]),
            subjects=prepared.subject_count,
            population=chosen.population,
            diagnostics=checks,
            settings={
                **settings,
                "prediction": outcome,
                "max_permutations": str(session.options.estimation.max_permutations),
            },
            method=route.method,
            path=route.path,
            replicate_effects=None,
            confidence=session.options.weighting.confidence,
        )
    return _grouped(session, results)


def _integrated_effects(session: Session, route: Route) -> dict[str, ShapleyEffects]:
    """Every explained column's effects by the integrated method: the (weighted) mean over the targets
    of their integrated gradients of v_t(u)^2 (`cohortsql.numeric.integrated`), with bootstrap intervals
    from the same histograms' replicate sums."""
    running, prepared = session.engine, session.prepared
    chosen = session.select()
    pacer = make_pacer(running, prepared, chosen, route, session.reporter())
    batches = list(local_batches(running, prepared, chosen, route, pacer, None, 0, None))
    fields, intervals, nodes = integrated_fields(session, chosen, batches)
    settings = session.settings(chosen, method=route.method, path=route.path) | {"integration_nodes": nodes}
    target_weights = chosen.weights[:, 0]
    variances = _target_variances(session, chosen)
    features = prepared.player_names
    results = {}
    for index, outcome in enumerate(prepared.outcomes):
        values, replicates = fields[index], intervals[index]
        results[outcome] = ShapleyEffects.from_estimates(
            features=features,
            squared_values=values.shapley_squared,
            distinct_errors=np.zeros(0),
            group=chosen.group,
            target_weights=target_weights,
            variance=float(variances[index]),
            subjects=prepared.subject_count,
            population=chosen.population,
            diagnostics=diagnostics(
                values.cohort_size, values.feature_cohort_size, features, prepared.total_weight, target_weights
            ),
            settings={**settings, "prediction": outcome},
            method=route.method,
            path=route.path,
            replicate_effects=None if replicates is None else replicates.effects,
            confidence=session.options.weighting.confidence,
        )
    return _grouped(session, results)


def _owen_effects(session: Session, chosen: TargetSet) -> np.ndarray:
    """Every feature's Owen value of each explained column's v_var, (outcomes, features in the data's
    order): the Owen values of the targets' mean squared cohort game (the variance game), its reduced
    games from one more pass over the chosen targets."""
    prepared = session.prepared
    games = [CohortGame(outcome, squared=True) for outcome in range(len(prepared.outcomes))]
    return readouts.owen_of_means(session, chosen, games, chosen.multiplicity[:, 0])


def _grouped(
    session: Session, results: dict[str, ShapleyEffects], owen: np.ndarray | None = None
) -> dict[str, ShapleyEffects]:
    """The effects of a grouped run with its players' members and (``group_values="owen"``) its
    features' Owen effects; the effects unchanged without groups."""
    groups = session.prepared.groups
    if groups is None:
        return results
    members = groups.members_by_name(session.prepared.feature_names)
    return {
        outcome: replace(
            effects,
            groups=members,
            owen_table=None
            if owen is None
            else owen_effects_table(members, owen[index][groups.member_order], effects.variance),
        )
        for index, (outcome, effects) in enumerate(results.items())
    }


def _target_variances(session: Session, chosen: TargetSet) -> np.ndarray:
    """Per explained column, the (weighted) mean over the targets of (y_t - ybar)^2."""
    prepared = session.prepared
    centred = (
        np.column_stack(
            [chosen.table.column(f"__cohort_y{index}").to_numpy() for index in range(len(prepared.outcomes))]
        )
        - prepared.centred_means
    )
    return np.average(centred**2, axis=0, weights=chosen.weights[:, 0])


variance_shapley = shapley_effects
"""The earlier name of `shapley_effects`."""
