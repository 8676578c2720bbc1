"""The cohort variance game: which predictors make the score of people like the target predictable.

v_V(t, u) = Var_{C_{t,u}}(y) - Var(y): the (weighted, population) variance of the explained column
among the subjects similar to the target on u, less its variance over every subject. It is 0 for
u = {}; a predictor whose cohorts hold subjects with like scores lowers it, so a negative value says
that knowing the target's value of that predictor makes its score more predictable. With the stored
values z = y - pilot and the cohorts' centred means m_1(u) = E_u z - E z and m_2(u) = E_u z^2 - E z^2,

    v_V(t, u) = m_2(u) - m_1(u)^2 - 2 E z m_1(u),

from the sums of w, w z and w z^2 over the cohort (`powers` = (1, 2)): no new query, kernel or driver.
"""

from __future__ import annotations

import numpy as np

from cohortsql.games.base import Cohorts, Game


class CohortVarianceGame(Game):
    """v_V(t, u) = Var_{C_{t,u}}(y) - Var(y) of explained column number `outcome`."""

    name = "cohort-variance"
    powers = (1, 2)

    def __init__(self, outcome: int = 0) -> None:
        self.outcome = outcome

    def values(self, cohorts: Cohorts) -> np.ndarray:
        first, mean = cohorts.value(self.outcome, 1)
        second, _ = cohorts.value(self.outcome, 2)
        return second - first * (first + 2.0 * mean)
