"""`cohortsql.cohort_shapley`: each target's cohort Shapley values of every feature (local values)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar, Unpack, overload

import numpy as np
import polars as pl

from cohortsql._typing import (
    Prediction,
    ShapleyOptions,
)
from cohortsql.api.integrated import check_integrated, explain_integrated
from cohortsql.api.nulls import null_references, shares_by_player
from cohortsql.errors import CohortError
from cohortsql.formats.tables import warn_about_cohorts
from cohortsql.games.cohort import CohortGame
from cohortsql.interrupts import interruptible_call
from cohortsql.numeric import bootstrap as bootstrap_module
from cohortsql.numeric import permutation
from cohortsql.request.arguments import explained_columns
from cohortsql.request.options import Options, checked_options, documented
from cohortsql.request.similarity import SimilarityArgument
from cohortsql.results.cohort import CohortShapleyResult, value_fields
from cohortsql.results.copies import copy_check_rows, warn_about_copies
from cohortsql.results.outcomes import CohortShapleyResults
from cohortsql.run import readouts
from cohortsql.run.preparation import Prepared
from cohortsql.run.session import Session, compared_exactly, open_session
from cohortsql.run.strategy import (
    check_interactions,
    check_owen,
    choose_route,
    feature_limit,
    local_batches,
    make_pacer,
)
from cohortsql.run.targets import TargetSet

Found = TypeVar("Found")


@overload
def cohort_shapley(
    data: Any,
    *,
    prediction: str,
    similarity: SimilarityArgument,
    **options: Unpack[ShapleyOptions],
) -> CohortShapleyResult: ...


@overload
def cohort_shapley(
    data: Any,
    *,
    prediction: Sequence[str],
    similarity: SimilarityArgument,
    **options: Unpack[ShapleyOptions],
) -> CohortShapleyResults: ...


@documented
@interruptible_call
def cohort_shapley(
    data: Any,
    *,
    prediction: Prediction,
    similarity: SimilarityArgument,
    **options: Unpack[ShapleyOptions],
) -> CohortShapleyResult | CohortShapleyResults:
    """Cohort Shapley values of every feature for every target (Mase, Owen & Seiler).

    For target t and predictor set u, the cohort C_{t,u} is every subject similar to t on all of
    u; v_CS(t, u) = ybar_{t,u} - ybar and v_CS2(t, u) = v_CS(t, u)^2. The result holds
    phi_j = sum_{u subset of -j} w(|u|) (v(u + j) - v(u)), w(s) = s! (d - s - 1)! / d!, for both
    games (docs/design.md §2).

    Parameters
    ----------
    data
        A path (parquet, csv, json, globs), a SQL query, a pyarrow Table, a polars DataFrame or
        LazyFrame, a pandas DataFrame, a DuckDB relation, a Spark DataFrame, or the name of a table
        on `connection`.
    prediction
        The column to explain (a model's prediction or an observed response), or a list of columns
        explained over the same cohorts in one pass (the result is then a `CohortShapleyResults`, one
        result per column, its tables with an ``outcome`` column).
    similarity
        Feature -> similarity kind (object or text such as ``"range:0.1"``), or a list of feature
        names that get default kinds; its order is the feature order. ``"all"``: every column but
        the explained ones, the id and the weight, with default kinds; in a mapping, the key ``"*"``
        stands for every column not named otherwise (``{"*": "exact"}``: one kind for all).
    **options
        The options of `ShapleyOptions`, each below.

    Other Parameters
    ----------------
    id : str, optional
        The column that identifies rows; None uses the 0-based row position.
    targets : None, str, list, int or float
        None for every row, a list of id values, a boolean mask of the rows, or a SQL predicate over
        the data's columns (a count or a fraction here means ``sample=`` of every row, and needs a
        ``seed``: ``targets=204`` is 204 random rows, ``targets=[204]`` the row whose id is 204).
    sample : int or float, optional
        A random sample of the targets (every row, or the rows of a predicate): a count or a
        fraction, drawn with `seed`, the same on every engine.
    include : list, optional
        Ids explained beside the `sample`, drawn or not: they weigh 0 in every average over targets
        (effects, shares, their errors and intervals), which stay the sample's; ``totals`` then has
        an ``in_sample`` column.
    seed : int, optional
        Seeds the random sample of targets, the permutations and the bootstrap replicates.
    weight : str, optional
        A column of case weights (finite, >= 0): cohort means, the overall mean, averages over
        targets and quantile windows weigh each row by it (an integer weight counts as that many
        copies of the row; a weight of 0 drops it).
    bootstrap : int
        B (0, or 2 to 8,000) Bayesian-bootstrap replicates (exact method): every subject reweighted by an Exp(1) draw
        per replicate, all computed in the same SQL pass; gives percentile intervals of every value
        (``res.local``), of the effects (``res.global_``) and paired intervals of group differences
        (``res.by``).
    confidence : float
        The intervals' coverage (default {default:confidence}).
    method : {"exact", "permutation", "integrated", "auto"}
        ``exact`` (d <= 24, the default), ``permutation`` (Monte Carlo over random orders of the
        predictors, d <= 128, with standard errors), ``integrated`` (integrated gradient cohort Shapley,
        O(n d) per target, d <= 10,000: it equals cohort Shapley only where the cohort mean is
        multilinear, and approximates it otherwise) or ``auto`` (exact up to d = 16, then permutations,
        then integrated beyond 128, with a warning).
    tolerance : float, optional
        Permutation method: stop a target once every standard error is at most this.
    max_permutations : int
        Permutation method: the budget per target (antithetic pairs count twice; default {default:max_permutations}).
    path : {"auto", "pairwise", "grouping_sets"}
        How exact cohorts are found: joining targets with subjects (any kind), or the cells of
        ``exact`` and ``bins`` kinds with no join; ``auto`` chooses.
    interactions : bool
        Also each target's pairwise Shapley interaction values of v_CS, in shap's convention
        (``res.interactions``, targets x d x d; ``res.interaction_table``): Phi_ij = Phi_ji is half
        the Shapley interaction index of {i, j}, I_ij = sum over T containing {i, j} of
        g_T / (|T| - 1) (g: the Harsanyi dividends, the paper's Theorem 1), and Phi_ii = phi_i - sum
        over j != i of Phi_ij, so row i adds up to phi_i (exact method: one more pass over the data;
        permutation method: estimated from the same permutations, with ``res.interactions_se``).
    anchored : int
        K > 0: each target's anchored terms, the Harsanyi dividends g_T of every set T of at most K
        features (``res.anchored()``; the paper's Theorem 1: they add up to cohort mean - mean).
    groups : mapping of str to list of str, optional
        Features explained together: each group is one player, similar when similar on all of its
        members; a feature no group names is a player of its own.
    group_values : {"players", "owen"}
        ``owen`` adds each feature's Owen value within its group (``res.owen``, ``res.owen_table``).
    progress, connection, engine : RunOptions
        Where and how it runs, the same for every method (`RunOptions`): progress on stderr (None: on
        long runs at a terminal), a DuckDB connection or a SparkSession to read its tables by name,
        and the engine by name or configured with its own settings
        (``engine=cohortsql.DuckDB(memory_limit="1GB")``: beyond the limit DuckDB spills to its
        ``temp_directory``; ``engine=cohortsql.Spark(master="local[4]")``).

    Returns
    -------
    CohortShapleyResult or CohortShapleyResults
        The values of every target (in id order; row order when ids are row positions), one result
        per explained column when several are given.

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> similarity = {"income": "abs:15", "region": "exact"}
    >>> res = cohortsql.cohort_shapley(loans, prediction="score", similarity=similarity)
    >>> res
    CohortShapleyResult(12 targets x 2 features, 12 subjects, mean=0.52, method='exact', path='pairwise')
    >>> res.shapley[0].round(4).tolist()  # target 0: income raises its cohort mean most
    [0.2738, -0.0037]
    >>> round(res.totals["value"][0], 4)  # the values add up to cohort mean - mean
    0.27
    """
    asked = checked_options(options, ShapleyOptions)
    return cohort_shapley_and(data, prediction, similarity, asked, lambda _: None)[0]


def cohort_shapley_and(
    data: Any,
    prediction: Prediction,
    similarity: SimilarityArgument,
    asked: Options,
    then: Callable[[Session], Found],
) -> tuple[CohortShapleyResult | CohortShapleyResults, Found]:
    """`cohort_shapley` under checked options, and what `then` finds in the same session after the
    run (its subjects and replicates as the run drew them; `data` is read once, a stream included)."""
    outcomes = explained_columns(prediction)
    limit = feature_limit(asked.estimation.method)
    with open_session(data, asked, outcomes=outcomes, similarity=similarity, max_features=limit) as session:
        results = explain_targets(session, session.select())
        variances = np.array([result.target_variance for result in results.values()])
        nulls = null_references(session, copy_shares, _shares(session, results), variances)
        if nulls is not None:
            results = {outcome: replace(results[outcome], null=null) for outcome, null in zip(results, nulls)}
        first = next(iter(results.values()))
        # the data's rows, not the targets: three targets prove nothing (when every row is a target, they are)
        checked = copy_check_rows(session.prepared.d)
        every_row = len(first.ids) == session.prepared.subject_count <= checked
        rows = first.targets if every_row else session.sample_rows(checked)
        found = then(session)
        exactly = compared_exactly(session.prepared)
    warn_about_cohorts(first.diagnostics, first.kinds, exactly)
    for outcome in outcomes:
        warn_about_copies(rows, first.features, rows[outcome].cast(pl.Float64).to_numpy(), outcome)
    return (first if isinstance(prediction, str) else CohortShapleyResults(results)), found


def copy_shares(session: Session) -> np.ndarray:
    """The shares (the ``global_``) of a cohort run of the session's targets, (results, players): what
    the null reference reads of each shuffled copy."""
    return _shares(session, explain_targets(session, session.select()))


def _shares(session: Session, results: dict[str, CohortShapleyResult]) -> np.ndarray:
    """Every result's share of each player (its ``global_``), (results, players) in the session's order."""
    return shares_by_player([result.global_ for result in results.values()], session.prepared.player_names)


def explain_targets(session: Session, chosen: TargetSet) -> dict[str, CohortShapleyResult]:
    """Cohort Shapley values of the `chosen` targets for every explained column of the session, by
    the method and path the strategy picks (`cohortsql.run.strategy`) for the call's options (its
    estimation, seed, terms and the intervals' confidence), which the settings record."""
    prepared, estimation, terms = session.prepared, session.options.estimation, session.options.terms
    path, seed, confidence = estimation.path, session.options.selection.seed, session.options.weighting.confidence
    route = choose_route(estimation.method, path, prepared, chosen.count)
    if route.integrated:
        check_integrated(terms, prepared)
        pacer = make_pacer(session.engine, prepared, chosen, route, session.reporter())
        batches = local_batches(session.engine, prepared, chosen, route, pacer, seed, 0, None)
        return explain_integrated(session, chosen, list(batches))
    if prepared.measures.replicates and not route.exact:
        raise CohortError("bootstrap intervals need method='exact' (the permutation method has standard errors)")
    check_interactions(terms, estimation.method, route, prepared.players, estimated=True)
    check_owen(route, prepared)
    settings = session.settings(chosen, method=route.method, path=path)
    pacer = make_pacer(session.engine, prepared, chosen, route, session.reporter())
    batches = local_batches(
        session.engine,
        prepared,
        chosen,
        route,
        pacer,
        seed,
        estimation.max_permutations,
        estimation.tolerance,
        interactions=terms.interactions,
    )
    intervals = None
    if route.random:
        estimates = list(batches)
        fields = [
            permutation.stack([estimate for batch in estimates for estimate in batch[outcome]], chosen.group)
            for outcome in range(len(prepared.outcomes))
        ]
    else:
        keep = bootstrap_module.worth_keeping(chosen.count, prepared.players, prepared.measures, prepared.batch_bytes)
        intervals = bootstrap_module.collect(batches, prepared.measures, confidence, keep=keep).fanned_out(chosen.group)
        fields = intervals.values
    games = [CohortGame(outcome) for outcome in range(len(prepared.outcomes))]
    exact_interactions = terms.interactions and route.exact
    interactions, anchored = readouts.lattice_terms(
        session, chosen, games, interactions=exact_interactions, anchored=terms.anchored
    )
    if route.random and terms.interactions:  # estimated with the values
        interactions = np.stack([values.interactions for values in fields if values.interactions is not None])
    grouped = prepared.groups is not None and prepared.groups.values == "owen"
    owen = readouts.owen_values(session, chosen, games) if grouped else None
    return {
        outcome: CohortShapleyResult(
            **session.result_fields(chosen, index),
            **value_fields(fields[index], prepared.pilots[index], counted=prepared.weight is None),
            method=route.method,
            path=route.path,
            settings={**settings, "prediction": outcome, "path": route.path},
            bootstrap=None if intervals is None else _bootstrap(intervals, prepared, chosen, index, confidence),
            interactions=None if interactions is None else interactions[index],
            anchored_terms=None if anchored is None else anchored[index],
            anchored_order=terms.anchored,
            owen=None if owen is None else owen[index],
        )
        for index, outcome in enumerate(prepared.outcomes)
    }


def _bootstrap(
    collected: bootstrap_module.Collected, prepared: Prepared, targets: TargetSet, outcome: int, confidence: float
) -> bootstrap_module.Bootstrap | None:
    """Outcome `outcome`'s replicates and intervals, fanned out to every target (None without replicates)."""
    measures = prepared.measures
    if not measures.replicates:
        return None
    first = measures.game(outcome, 1)
    games = collected.squared_games[first : first + measures.replicates]
    replicate_weights = targets.weights[:, 1:]
    effects = bootstrap_module.replicate_effects(games, replicate_weights)
    return bootstrap_module.Bootstrap.of(
        measures.replicates,
        measures.seed,
        confidence,
        collected.intervals[outcome],
        effects,
        replicate_weights,
        collected.replicate_values[outcome],
    )
