"""The null reference of a run's shares (docs/design.md, "The null reference"): for each player asked,
B copies of its column(s) with the values permuted across the subjects (seeded, the same draws on every
engine: ``sql/permuted_copies.sql``), each copy taking the player's place with its similarity kind and
window, every other feature and option as the run asked. A copy's share is what the player would get
were it unrelated to everything else; the copies' shares are the null draws.

A copy is a property of the run, not of a game or a method: each copy is the run itself on a variant of
the session (`Session` with the copy's column read in place of the player's), computed by the caller's
own function (`shares`), so every game, method and path gets the same null. What the copies share is
the session: the engine, the input, the whole-table statistics and kinds, the chosen targets' ids and
one relation holding every copy (one permutation per copy, drawn in one query).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import polars as pl

from cohortsql import queries
from cohortsql.errors import CohortError
from cohortsql.games.cohort import CohortGame
from cohortsql.numeric.shapley import shapley_values
from cohortsql.request.features import ResolvedFeature
from cohortsql.request.measures import Measures
from cohortsql.request.options import Options
from cohortsql.run import pairwise
from cohortsql.run.preparation import Prepared
from cohortsql.run.progress import Silent
from cohortsql.run.route import EXACT_PAIRWISE
from cohortsql.run.session import GamePass, Session
from cohortsql.run.strategy import choose_route, make_pacer
from cohortsql.run.targets import TargetSet, regrouped

Shares = Callable[[Session], np.ndarray]
"""A run's shares of every player, (results, players) in the prepared players' order (a result per
explained column, or one for a game of cohort sizes): the caller's own computation, run on the session
or on a variant of it holding a copy."""


def null_shares(
    session: Session,
    players: Sequence[str],
    copies: int,
    shares: Shares,
    variances: np.ndarray | None = None,
    run_targets: int | None = None,
) -> np.ndarray:
    """Each copy's share of each of `players` (names of the session's players), (results, players,
    copies): copy b of player p is the run (`shares`) of the session with p's columns read from their
    b-th permuted copies. The permutations are drawn with the session's seed.

    A cohort run's shares (its Shapley effects over `variances`, one per explained column: the effects,
    `global_`, the audit) come, where the exact pairwise driver takes them, from one pass over the data
    for all of a player's copies (`_in_one_pass`); else each copy is the run again. A dry run timing
    the copies on a few targets gives `run_targets`, the distinct targets of the run it estimates, so that
    it takes the way the run will."""
    prepared, engine = session.prepared, session.engine
    names = list(prepared.player_names)
    members = {player: _members(session, player) for player in players}
    copied_features = sorted({index for indices in members.values() for index in indices})
    relation = engine.create(
        queries.null_copies.permuted_copies(
            prepared.subjects,
            [prepared.features[index] for index in copied_features],
            copies,
            session.options.selection.seed or 0,
            engine.dialect,
        ),
        "null_copies",
        materialize=True,
        context="permuting the columns of the null reference",
    )
    # The call's targets, read once with every copy's columns, and their rows as they are in the data.
    copied = Session(engine, _point_estimate(prepared, relation, prepared.features), _point_options(session.options))
    chosen = copied.select()
    data = copied.target_data(chosen)
    if variances is not None and _one_pass_applies(copied, chosen, run_targets or chosen.distinct.num_rows):
        passes = [
            _in_one_pass(copied, chosen, data, names.index(player), members[player], copies) for player in players
        ]
        effects = np.asarray(passes, dtype=np.float64).transpose(1, 0, 2)
        # a column without spread has no share (NaN, as in the effects table), not a 0 / 0 warning
        spread = variances[:, None, None]
        return np.divide(effects, spread, out=np.full_like(effects, np.nan), where=spread > 0)
    found = [  # the relation is dropped with the engine: the copies' runs read it
        [
            shares(with_copy(copied, chosen, data, members[player], copy))[:, names.index(player)]
            for copy in range(1, copies + 1)
        ]
        for player in players
    ]
    return np.asarray(found, dtype=np.float64).transpose(2, 0, 1)


ONE_PASS_ROWS = 1 << 23
"""The most histogram rows the one pass for a player's copies may return in all (distinct targets times
subject rows bounds them: with B random copy bits nearly every subject has a mask of its own)."""


def _one_pass_applies(copied: Session, chosen: TargetSet, distinct_targets: int) -> bool:
    """Whether a cohort run's copies take the exact pairwise driver in one pass: the exact method, and a
    histogram of at most `ONE_PASS_ROWS` rows."""
    prepared, estimation = copied.prepared, copied.options.estimation
    route = choose_route(estimation.method, estimation.path, prepared, chosen.count)
    return route.exact and distinct_targets * prepared.subject_rows <= ONE_PASS_ROWS


def _in_one_pass(
    copied: Session, chosen: TargetSet, data: pl.DataFrame, player: int, members: Sequence[int], copies: int
) -> np.ndarray:
    """Each copy's Shapley effect of `player` (position among the players), (results, copies), from one
    pass of the exact pairwise driver: the subjects' masks over the features and every copy of
    `members` (a mask bit each), each copy's game the features' with the copy's bits in the members'
    place (a reduction of the players, as for Owen values); the targets' squared cohort games averaged
    with their weights, whose Shapley values are the effects (additivity)."""
    prepared = copied.prepared
    width = len(members)
    wide = replace(
        prepared,
        features=prepared.features
        + tuple(prepared.features[index].copied(copy) for copy in range(1, copies + 1) for index in members),
        groups=None,
    )
    own = prepared.groups.members if prepared.groups is not None else tuple((index,) for index in range(prepared.d))
    position = {index: slot for slot, index in enumerate(members)}

    def copy_of(copy: int, features: tuple[int, ...]) -> int:
        bits = [prepared.d + (copy - 1) * width + position[index] if index in position else index for index in features]
        return sum(1 << bit for bit in bits)

    reductions = [[copy_of(copy, features) for features in own] for copy in range(1, copies + 1)]
    session = replace(copied, prepared=wide, chosen=None, _target_data=[])
    targets = regrouped(chosen, wide, data)
    games = [CohortGame(outcome, squared=True) for outcome in range(len(prepared.outcomes))]
    weights = targets.multiplicity[:, 0]
    sums = np.zeros((copies, len(games), 1 << len(own)))
    pacer = make_pacer(copied.engine, wide, targets, EXACT_PAIRWISE, Silent())
    for batch in pairwise.dense_games(GamePass(session, targets, pacer, games), reductions=reductions):
        part = weights[batch.start : batch.start + batch.rows]
        for index, game in enumerate(batch.values):
            sums[batch.reduction, index] += part @ game
    effects = shapley_values(sums / weights.sum())  # (copies, results, players)
    return effects[:, :, player].T


def with_copy(copied: Session, chosen: TargetSet, data: pl.DataFrame, members: Sequence[int], copy: int) -> Session:
    """The session of the subjects with every copy (`copied`) with the features `members` read from their
    `copy`-th permuted copies (1 .. B), its targets `chosen` (rows as they are in the data: `data`)."""
    prepared = copied.prepared
    features = tuple(feature.copied(copy) if feature.index in members else feature for feature in prepared.features)
    variant = replace(prepared, features=features)
    return replace(copied, prepared=variant, chosen=regrouped(chosen, variant, data), _target_data=[])


def _point_estimate(prepared: Prepared, relation: str, features: tuple[ResolvedFeature, ...]) -> Prepared:
    """`prepared` reading the subjects of `relation` (with every copy) and `features`, without bootstrap
    replicates (a copy's share is a point estimate)."""
    measures = Measures(prepared.measures.outcomes, weighted=prepared.measures.weighted, seed=prepared.measures.seed)
    return replace(prepared, features=features, subjects=relation, subjects_with_data=None, measures=measures)


def _point_options(options: Options) -> Options:
    """`options` for a copy's share: the point estimate alone, quietly."""
    groups = options.grouping
    return replace(
        options,
        weighting=replace(options.weighting, bootstrap=0),
        terms=replace(options.terms, interactions=False, anchored=0),
        grouping=replace(groups, group_values="players"),
        where=replace(options.where, progress=False),
    )


def check_players(prepared: Prepared, players: Sequence[str]) -> None:
    """Refuse a player of ``null_features`` that is not one of the run's (a feature or a group)."""
    for player in players:
        if player not in prepared.player_names:
            raise CohortError(
                f"null_features names {player!r}, which is not a feature of this run; its features are"
                f" {', '.join(repr(name) for name in prepared.player_names)}"
            )


def _members(session: Session, player: str) -> tuple[int, ...]:
    """The features (indices) of `player`: a group's members, or the feature itself."""
    prepared = session.prepared
    check_players(prepared, [player])
    if prepared.groups is None:
        return (prepared.feature_names.index(player),)
    return prepared.groups.members[prepared.groups.names.index(player)]
