"""What the SQL step sums over every cohort: case weights, Bayesian-bootstrap replicates, outcomes.

Every cohort aggregate is a sum over the cohort's subjects, so weights, replicates and several
explained columns are only more sums in the same pass. With case weights w_i, weighting b
(0: the data's own weights; 1..B: bootstrap replicates with e_bi ~ Exp(1), Rubin's Bayesian
bootstrap) and outcome k (an explained column y_k),

    W_b(C) = sum_{i in C} w_i e_bi,   S_bk(C) = sum_{i in C} w_i e_bi y_ki,   e_0i = 1,

and the game of target t is v_bk(t, u) = S_bk(C_{t,u}) / W_b(C_{t,u}) - S_bk(all) / W_b(all): the
cohort's weighted mean of y_k minus the weighted mean over every subject. Each (b, k) is one game
over the same cohorts; this module names the columns and orders the games. Pure, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Measures:
    """The sums of a computation: which outcomes, whether weighted, how many replicates."""

    outcomes: int
    """K: how many explained columns (0 for uniqueness Shapley, which needs only the weights)."""
    weighted: bool = False
    """Whether a case-weight column weighs the subjects (otherwise w_i = 1)."""
    replicates: int = 0
    """B: Bayesian-bootstrap replicate weightings besides the data's own."""
    seed: int = 0
    """Seeds the replicate draws (the same on every engine)."""

    @property
    def weightings(self) -> int:
        """1 + B: the data's own weighting, then the replicates."""
        return 1 + self.replicates

    @property
    def games(self) -> int:
        """K (1 + B): one game per outcome and weighting, outcome-major (see `game`)."""
        return self.outcomes * self.weightings

    @property
    def counted(self) -> bool:
        """Whether W_0 is a plain count of subjects (no weights, no replicates)."""
        return not self.weighted and self.replicates == 0

    def game(self, outcome: int, weighting: int) -> int:
        """The position of game (k, b) in the game order."""
        return outcome * self.weightings + weighting

    def weight_name(self, weighting: int) -> str:
        """The histogram column holding W_b."""
        return f"w{weighting}"

    def sum_name(self, outcome: int, weighting: int) -> str:
        """The histogram column holding S_bk."""
        return f"s{outcome}_{weighting}"

    @property
    def weight_names(self) -> list[str]:
        return [self.weight_name(b) for b in range(self.weightings)]

    @property
    def sum_names(self) -> list[str]:
        """The S_bk columns in game order."""
        return [self.sum_name(k, b) for k in range(self.outcomes) for b in range(self.weightings)]

    @property
    def weighting_of_game(self) -> np.ndarray:
        """For each game, the weighting b whose W_b divides its sums."""
        return np.tile(np.arange(self.weightings), self.outcomes)
