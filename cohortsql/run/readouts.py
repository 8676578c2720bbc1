"""Readouts of any game over a call's chosen targets: what a target's dense game v(u) gives through
linear maps of its Harsanyi dividends (`cohortsql.numeric.dividends`): Shapley values (of the data's
own weighting and of every bootstrap replicate's), interaction values, the paper's anchored terms and
Owen values under the run's groups. Each runs the exact driver of its path
(`cohortsql.run.pairwise.dense_games`, `cohortsql.run.grouping_sets.dense_games`) once, for every game
asked for, and returns arrays of every chosen target (distinct targets fanned out); `estimated_values`
runs the permutation driver (`cohortsql.run.pairwise.game_permutations`) instead, and `game_result`
makes any game's result from them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np

from cohortsql.games.base import DenseBatch, Game
from cohortsql.numeric import bootstrap, dividends, players, shapley
from cohortsql.results.uniqueness import GameResult
from cohortsql.run import grouping_sets, pairwise
from cohortsql.run.route import EXACT_PAIRWISE, Route
from cohortsql.run.session import GamePass, Session
from cohortsql.run.strategy import check_owen, game_route, make_pacer
from cohortsql.run.targets import TargetSet


class GameValues(NamedTuple):
    """One game's Shapley values for every chosen target, and what each target's whole cohort is."""

    shapley: np.ndarray
    """phi_j(t), (targets, players)."""
    value: np.ndarray
    """v(t, every player): what the values add up to, (targets,)."""
    cohort_size: np.ndarray
    """|C_{t,1:d}| (a sum of weights when weighted), (targets,)."""
    shapley_ci_low: np.ndarray | None = None
    """With bootstrap replicates: the low end of each value's percentile interval over the replicates'
    games, (targets, players); else None."""
    shapley_ci_high: np.ndarray | None = None
    """With bootstrap replicates: the high end of the same interval."""
    shapley_se: np.ndarray | None = None
    """The permutation method's standard errors, (targets, players); None when exact."""
    permutations: np.ndarray | None = None
    """The permutation method's number of permutations per target; None when exact."""


def shapley_values(
    session: Session, chosen: TargetSet, game: Game, route: Route, *, confidence: float | None = None
) -> GameValues:
    """Exact Shapley values of `game` for the `chosen` targets, by the exact driver of the `route`'s
    path, and with a `confidence` their percentile intervals over every bootstrap replicate's game. A
    batch's replicate values are held until its last replicate comes, then reduced to the intervals:
    memory stays that of a batch, whatever the targets."""
    driver = grouping_sets.dense_games if route.by_cells else pairwise.dense_games
    pacer = make_pacer(session.engine, session.prepared, chosen, route, session.reporter())
    measures, rows, d = session.prepared.measures, chosen.distinct.num_rows, session.prepared.players
    replicates = confidence is not None and measures.replicates > 0
    phi, value, size = np.zeros((rows, d)), np.zeros(rows), np.zeros(rows)
    low, high = (np.zeros((rows, d)), np.zeros((rows, d))) if replicates else (None, None)
    pending: dict[tuple[int, int], dict[int, np.ndarray]] = {}  # a chunk's replicate values so far
    for batch in driver(GamePass(session, chosen, pacer, [game]), replicates=replicates):
        span = slice(batch.start, batch.start + batch.rows)
        values = shapley.shapley_values(batch.values[0])
        if batch.weighting == 0:
            phi[span], value[span], size[span] = values, batch.values[0][:, -1], batch.cohorts.weight[:, -1]
            continue
        held = pending.setdefault((batch.start, batch.rows), {})
        held[batch.weighting] = values
        if len(held) == measures.replicates:  # the chunk's last replicate: its intervals
            assert low is not None and high is not None and confidence is not None
            low[span], high[span] = bootstrap.percentile_interval(np.stack(list(held.values())), confidence, 0)
            del pending[(batch.start, batch.rows)]
    group = chosen.group
    return GameValues(
        phi[group],
        value[group],
        size[group],
        None if low is None else low[group],
        None if high is None else high[group],
    )


def estimated_values(session: Session, chosen: TargetSet, game: Game, route: Route) -> GameValues:
    """Permutation estimates of `game`'s Shapley values for the `chosen` targets (`pairwise.game_permutations`)."""
    prepared, estimation = session.prepared, session.options.estimation
    pacer = make_pacer(session.engine, prepared, chosen, route, session.reporter())
    estimates = [
        estimate
        for batch in pairwise.game_permutations(
            session.engine,
            prepared,
            chosen,
            pacer,
            game,
            seed=session.options.selection.seed,
            max_permutations=estimation.max_permutations,
            tolerance=estimation.tolerance,
        )
        for estimate in batch
    ]
    d, group = prepared.players, chosen.group
    phi = np.array([estimate.shapley for estimate in estimates]).reshape(-1, d)
    errors = np.array([estimate.shapley_se for estimate in estimates]).reshape(-1, d)
    counts = np.array([estimate.permutations for estimate in estimates], dtype=np.int64)
    value = np.array([estimate.value for estimate in estimates])
    size = np.array([estimate.cohort_size for estimate in estimates])
    return GameValues(phi[group], value[group], size[group], None, None, errors[group], counts[group])


def game_result(session: Session, game: Game) -> GameResult:
    """The result (in the game's `result` class) of any game of cohorts for the session's targets:
    exact Shapley values on the path the strategy picks or permutation estimates, bootstrap intervals,
    interaction values and, when the run's groups ask for them, each feature's Owen value."""
    prepared, options = session.prepared, session.options
    estimation, weighting, terms = options.estimation, options.weighting, options.terms
    chosen = session.select()
    route = game_route(estimation.method, estimation.path, prepared, chosen.count, terms)
    if route.random:
        values = estimated_values(session, chosen, game, route)
    else:
        values = shapley_values(session, chosen, game, route, confidence=weighting.confidence)
    owen = None
    if prepared.groups is not None and prepared.groups.values == "owen":
        owen = owen_values(session, chosen, [game])[0]
    interactions = lattice_terms(session, chosen, [game], interactions=terms.interactions, anchored=0).interactions
    settings = session.settings(chosen, method=route.method, path=route.path)
    return game.result(
        **session.result_fields(chosen, None),
        game=str(game),
        total_weight=prepared.total_weight if prepared.weight is not None else None,
        shapley=values.shapley,
        shapley_se=values.shapley_se,
        permutations=values.permutations,
        shapley_ci_low=values.shapley_ci_low,
        shapley_ci_high=values.shapley_ci_high,
        owen=owen,
        interactions=None if interactions is None else interactions[0],
        value=values.value,
        cohort_size=values.cohort_size if prepared.weight is not None else np.rint(values.cohort_size).astype(np.int64),
        method=route.method,
        path=route.path,
        settings={**settings, "game": str(game)},
    )


class LatticeTerms(NamedTuple):
    """What every chosen target's whole games give beyond their Shapley values, one entry per game."""

    interactions: np.ndarray | None
    """Shapley interaction values in shap's convention, (games, targets, d, d): row i of a target's
    matrix adds up to its phi_i, the whole matrix to v(1:d)."""
    anchored: np.ndarray | None
    """The dividends g_T of the sets of `dividends.sets_up_to` (games, targets, sets): the paper's
    anchored terms (Theorem 1), adding up to v(1:d)."""


def lattice_terms(
    session: Session, chosen: TargetSet, games: Sequence[Game], *, interactions: bool, anchored: int
) -> LatticeTerms:
    """Interaction values and anchored terms of sets of at most `anchored` players (as asked) of each of
    `games`, from one more pass over the data (the pairwise path's)."""
    if not interactions and not anchored:
        return LatticeTerms(None, None)
    prepared = session.prepared
    d, rows = prepared.players, chosen.distinct.num_rows
    sets = dividends.sets_up_to(d, anchored) if anchored else None
    pairs = np.empty((len(games), rows, d, d)) if interactions else None
    terms = None if sets is None else np.empty((len(games), rows, len(sets)))
    pacer = make_pacer(session.engine, prepared, chosen, EXACT_PAIRWISE, session.reporter())
    for batch in pairwise.dense_games(GamePass(session, chosen, pacer, games)):
        rows_of_batch = slice(batch.start, batch.start + batch.rows)
        for index, game in enumerate(batch.values):
            if pairs is not None:
                pairs[index, rows_of_batch] = dividends.interaction_values(game)
            if terms is not None:
                terms[index, rows_of_batch] = dividends.dividends(game)[:, sets]
    return LatticeTerms(
        None if pairs is None else pairs[:, chosen.group], None if terms is None else terms[:, chosen.group]
    )


def owen_values(session: Session, chosen: TargetSet, games: Sequence[Game]) -> np.ndarray:
    """Each feature's Owen value of each of `games` under the run's groups, (games, targets, features as
    the result's ``groups`` list them): each union's members valued in its reduced game (every other
    union whole, each member alone: 2^(m - 1 + |B_k|) cells, never 2^d), from one more pass."""
    prepared = session.prepared
    groups = prepared.groups
    assert groups is not None
    check_owen(EXACT_PAIRWISE, prepared)
    values = np.zeros((len(games), chosen.distinct.num_rows, prepared.d))
    for batch, reduced in _union_batches(session, chosen, games):
        rows = np.arange(batch.start, batch.start + batch.rows)[:, None]
        for index, game in enumerate(batch.values):
            values[index, rows, reduced.members] = players.members_owen(game, reduced)
    return values[:, chosen.group][..., groups.member_order]


def owen_of_means(session: Session, chosen: TargetSet, games: Sequence[Game], weights: np.ndarray) -> np.ndarray:
    """Each feature's Owen value of the weighted mean over the targets of each of `games` (the variance
    game for the squared cohort game), (games, features in the data's order): per union, the targets'
    reduced games averaged with the distinct targets' `weights`, whose Owen values are the members'."""
    prepared = session.prepared
    assert prepared.groups is not None
    unions = prepared.groups.members
    sums = [np.zeros((len(games), 1 << len(players.union_game(unions, index).players))) for index in range(len(unions))]
    values = np.zeros((len(games), prepared.d))
    for batch, _ in _union_batches(session, chosen, games):
        part = weights[batch.start : batch.start + batch.rows]
        for index, game in enumerate(batch.values):
            sums[batch.reduction][index] += part @ game
    for index, total in enumerate(sums):
        reduced = players.union_game(unions, index)
        values[:, reduced.members] = players.members_owen(total / weights.sum(), reduced)
    return values


def _union_batches(
    session: Session, chosen: TargetSet, games: Sequence[Game]
) -> Iterator[tuple[DenseBatch, players.UnionGame]]:
    """The dense batches of every union's reduced game (one pass over the data), each with its union."""
    prepared = session.prepared
    assert prepared.groups is not None
    unions = prepared.groups.members
    reduced = [players.union_game(unions, index) for index in range(len(unions))]
    pacer = make_pacer(session.engine, prepared, chosen, EXACT_PAIRWISE, session.reporter())
    batches = pairwise.dense_games(
        GamePass(session, chosen, pacer, games), reductions=[union.players for union in reduced]
    )
    for batch in batches:
        yield batch, reduced[batch.reduction]
