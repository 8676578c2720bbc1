"""k-anonymity Shapley: which predictors make a row re-identifiable.

A row is exposed on a set u of predictors when at most k rows (itself included) share its values on
u: its cohort C_{t,u} has |C_{t,u}| <= k, the failure of k-anonymity (Sweeney) for that row. The game
v_k(t, u) = 1[|C_{t,u}| <= k] - 1[n <= k] is 0 for u = {} and 1 for every set that exposes the
target (when the table itself has more than k rows); its Shapley values split the target's exposure
on all of its predictors, v_k(t, 1:d), among them: a predictor that alone exposes the row gets much
of it, one that never narrows the cohort gets none. From the cohort sizes alone.
"""

from __future__ import annotations

import numpy as np

from cohortsql.errors import CohortError
from cohortsql.games.base import Cohorts, Game

DEFAULT_K = 5
"""The k of ``k-anonymity`` named without one: at most five rows sharing a target's values expose it."""


class KAnonymityGame(Game):
    """v_k(t, u) = 1 when at most `k` rows share the target's values on u (and the table has more)."""

    name = "k-anonymity"
    powers = ()

    def __init__(self, k: int = DEFAULT_K) -> None:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise CohortError(f"k must be a whole number of rows >= 1, got {k!r}")
        self.k = int(k)

    def values(self, cohorts: Cohorts) -> np.ndarray:
        exposed = (cohorts.weight <= self.k).astype(np.float64)
        return exposed - exposed[..., :1]

    @classmethod
    def named(cls, parameter: str | None) -> KAnonymityGame:
        """``k-anonymity`` (k = `DEFAULT_K`) or ``k-anonymity:K``."""
        if parameter is None:
            return cls()
        if not parameter.strip().isdigit():
            raise CohortError(f"k-anonymity:K takes a whole number of rows K >= 1, got {parameter!r}")
        return cls(int(parameter))

    def __str__(self) -> str:
        return f"{self.name} (k = {self.k})"
