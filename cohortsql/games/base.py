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


class Cohorts(NamedTuple):
    """The cohorts of a batch of targets for every set u of players (the last axis, 2^p long; u = {}
    is every subject, so index 0 holds the whole table's sums)."""

    weight: np.ndarray
    """W(C_{t,u}): the cohort's number of subjects, or its sum of case weights, (rows, 2^p)."""
    means: np.ndarray | None
    """ybar_{t,u} - ybar for each explained column, (rows, outcomes, 2^p); None when the games read
    no explained column (`Game.reads_outcomes`)."""

    @classmethod
    def of_sums(cls, sums: np.ndarray) -> Cohorts:
        """From the superset sums of a histogram's weight and of each explained column's (weighted) sum,
        (1 + outcomes, rows, 2^p): each cohort's mean less the whole table's (the sums at u = {})."""
        weight = sums[0]
        if len(sums) == 1:
            return cls(weight, None)
        if np.any(weight[:, -1] <= 0):
            raise ValueError("a target is missing from its own cohort: similarity masks are not reflexive")
        means = np.moveaxis(sums[1:] / weight - sums[1:, :, :1] / weight[:, :1], 0, 1)
        means[..., 0] = 0.0
        return cls(weight, means)


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


class Game(ABC):
    """A cooperative game on each target's players whose value of a set u is a function of the cohort
    C_{t,u} alone. Subclasses say whether they read the explained column and give `values`."""

    name: ClassVar[str]
    """How results and settings name the game (``uniqueness``, ``k-anonymity``, ...)."""
    reads_outcomes: ClassVar[bool] = True
    """Whether the game needs the cohorts' means of an explained column, or their sizes only."""

    @abstractmethod
    def values(self, cohorts: Cohorts) -> np.ndarray:
        """v(u) of every row's game for every u, (rows, 2^p), with v({}) = 0."""

    def __str__(self) -> str:
        return self.name
