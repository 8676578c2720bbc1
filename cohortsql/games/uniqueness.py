"""Uniqueness Shapley (Seiler, Mase & Owen): v_U(t, u) = -log(|C_{t,u}| / n), the information (in nats)
that a target's values on u give about which row it is, from the cohort sizes alone."""

from __future__ import annotations

import numpy as np

from cohortsql.games.base import Cohorts, Game
from cohortsql.results.uniqueness import UniquenessResult


class UniquenessGame(Game):
    """v_U(t, u) = -log(|C_{t,u}| / n): 0 for u = {} (every subject), log(n) once the target is alone
    in its cohort; its Shapley values add up to -log(|C_{t,1:d}| / n). With case weights, sizes are
    sums of weights and n their total."""

    name = "uniqueness"
    result = UniquenessResult
    powers = ()

    def values(self, cohorts: Cohorts) -> np.ndarray:
        game = -np.log(cohorts.weight / cohorts.weight[..., :1])
        game[..., 0] = 0.0
        return game
