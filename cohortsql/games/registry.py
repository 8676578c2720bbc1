"""Every game of cohorts by name: what ``game=`` (`cohortsql.game_shapley`, ``df.cohort.game``, the
``game`` command) may call for, as ``NAME`` or ``NAME:PARAMETER`` (``k-anonymity:3``). A new game is its
module and one line here; each engine, path, method and surface then serves it."""

from __future__ import annotations

from cohortsql.errors import CohortError
from cohortsql.games.anonymity import KAnonymityGame
from cohortsql.games.base import Game
from cohortsql.games.uniqueness import UniquenessGame
from cohortsql.games.variance import CohortVarianceGame

GAMES: dict[str, type[Game]] = {
    UniquenessGame.name: UniquenessGame,
    KAnonymityGame.name: KAnonymityGame,
    CohortVarianceGame.name: CohortVarianceGame,
}
"""The games by their names."""


def game_of(game: str | Game) -> Game:
    """The game `game` names (``NAME`` or ``NAME:PARAMETER``), or `game` itself when it is one."""
    if isinstance(game, Game):
        return game
    if not isinstance(game, str):
        raise CohortError(f"game must be one of {', '.join(GAMES)} (or NAME:PARAMETER), got {game!r}")
    name, colon, parameter = game.partition(":")
    kind = GAMES.get(name.strip())
    if kind is None:
        raise CohortError(f"unknown game {name.strip()!r}: the games are {', '.join(GAMES)}")
    return kind.named(parameter if colon else None)
