"""What a game is: a value v(u) for every set u of a target's players, computed from the sums of the
cohort C_{t,u} (docs/design.md §5). The engine's SQL step, the superset-sum transform, the drivers
that visit the lattice (exact, by the pairwise or grouping-sets path) and the readouts of a dense game
(Shapley values, interaction values, Owen values, anchored terms) are shared by every game; a game
only says which cohort sums it reads and what it makes of them. Pure numpy.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, NamedTuple

import numpy as np

from cohortsql.errors import CohortError
from cohortsql.results.uniqueness import GameResult


class Cohorts(NamedTuple):
    """The cohorts of a batch of targets for every set u of players (the last axis, 2^p long; u = {}
    is every subject, so index 0 holds the whole table's sums)."""

    weight: np.ndarray
    """W(C_{t,u}): the cohort's number of subjects, or its sum of case weights, (rows, 2^p)."""
    means: np.ndarray | None
    """The cohort's mean of each stored explained value less the whole table's, (rows, values, 2^p);
    None when the games read no explained column (`Game.powers` empty). The values are each explained
    column's powers in turn (`value`): y_k - pilot_k, (y_k - pilot_k)^2, ..."""
    overall: np.ndarray | None = None
    """The whole table's mean of each stored explained value, (rows, values): what `means` are centred by."""
    powers: tuple[int, ...] = (1,)
    """The powers of each explained column that the values hold, in their order."""

    @classmethod
    def of_sums(cls, sums: np.ndarray, powers: tuple[int, ...] = (1,)) -> Cohorts:
        """From the superset sums of a histogram's weight and of each stored explained value's (weighted)
        sum, (1 + values, rows, 2^p): each cohort's mean less the whole table's (the sums at u = {})."""
        weight = sums[0]
        if len(sums) == 1:
            return cls(weight, None)
        if np.any(weight[:, -1] <= 0):
            raise ValueError("a target is missing from its own cohort: similarity masks are not reflexive")
        overall = sums[1:, :, 0] / weight[:, 0]
        means = np.moveaxis(sums[1:] / weight - overall[..., None], 0, 1)
        means[..., 0] = 0.0
        return cls(weight, means, np.moveaxis(overall, 0, 1), powers)

    def value(self, outcome: int, power: int) -> tuple[np.ndarray, np.ndarray]:
        """The centred cohort means (rows, 2^p) and whole-table means (rows, 1) of (y_k - pilot_k)^power
        for explained column number `outcome`."""
        assert self.means is not None and self.overall is not None, "the game reads no explained column"
        index = outcome * len(self.powers) + self.powers.index(power)
        return self.means[:, index], self.overall[:, index, None]


class DenseBatch(NamedTuple):
    """A chunk of distinct targets' dense games: every set of players of one reduction of the players."""

    start: int
    """The first target's position among the distinct targets."""
    rows: int
    """How many targets."""
    reduction: int
    """Which of the driver's `reductions` the players are (0 without reductions: the run's players)."""
    cohorts: Cohorts
    """Each target's cohorts on every set of players."""
    values: list[np.ndarray]
    """One (rows, 2^players) array per game asked for."""
    weighting: int = 0
    """Which weighting the cohorts are of: 0 the data's own, b >= 1 bootstrap replicate b."""


class Game(ABC):
    """A cooperative game on each target's players whose value of a set u is a function of the cohort
    C_{t,u} alone. Subclasses say whether they read the explained column and give `values`."""

    name: ClassVar[str]
    """How results and settings name the game (``uniqueness``, ``k-anonymity``, ...)."""
    result: ClassVar[type[GameResult]] = GameResult
    """The result its values are given in (a game with tables of its own names a subclass)."""
    powers: ClassVar[tuple[int, ...]] = (1,)
    """Which powers of the explained column the game reads the cohorts' means of: (1,) for the mean,
    (1, 2) for the mean and the mean square, () for a game of cohort sizes alone. Every engine and
    path sums exactly those (`cohortsql.run.preparation.prepare`'s ``powers``)."""

    @abstractmethod
    def values(self, cohorts: Cohorts) -> np.ndarray:
        """v(u) of every row's game for every u, (rows, 2^p), with v({}) = 0."""

    @classmethod
    def named(cls, parameter: str | None) -> Game:
        """The game a name calls for, ``NAME`` or ``NAME:PARAMETER`` (`cohortsql.games.registry`): this one
        takes no parameter."""
        if parameter is not None:
            raise CohortError(f"the {cls.name} game takes no parameter, got {parameter!r}")
        return cls()

    def __str__(self) -> str:
        return self.name
