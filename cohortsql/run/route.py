"""A call's route: the method its values are computed by and the path its cohorts are found by, as
the planner resolved them (`cohortsql.run.strategy`), typed. Everything past the planner asks the
route what it allows (`exact`, `random`, `integrated`, `by_cells`) and never compares the names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ChosenMethod = Literal["exact", "permutation", "integrated"]
"""How the values are computed: every cohort of the lattice, random orders of the players, or the
integrated gradient along the diagonal of the softened cohorts (``auto`` resolved)."""

ChosenPath = Literal["pairwise", "grouping_sets", "integrated", "model"]
"""How the cohorts (or the games' points) are found: the join of targets with subjects into mask
histograms, the cells of a GROUP BY on equivalence kinds, the histogram by dissimilar players, or the
model's calls on hybrid points (baseline games)."""


@dataclass(frozen=True)
class Route:
    """A call's method and path, resolved once."""

    method: ChosenMethod
    path: ChosenPath

    @property
    def exact(self) -> bool:
        """Every set of players is valued: Shapley values exactly, and everything the whole game gives
        (interaction values, anchored terms, Owen values, bootstrap replicates of every game)."""
        return self.method == "exact"

    @property
    def random(self) -> bool:
        """The values are estimated from random orders of the players, with standard errors."""
        return self.method == "permutation"

    @property
    def integrated(self) -> bool:
        """The values are integrated gradient cohort Shapley (an approximation beyond multilinear games)."""
        return self.method == "integrated"

    @property
    def by_cells(self) -> bool:
        """The cohorts are cells of a GROUP BY (no join of targets with subjects): batches are sized by
        memory, not paced by time."""
        return self.path == "grouping_sets"

    def __str__(self) -> str:
        return f"{self.method} method, {self.path} path"


EXACT_PAIRWISE = Route("exact", "pairwise")
"""The exact driver of the pairwise path: what the second passes (interactions, anchored terms, Owen
values) and the games of cohort sizes on any kind take."""
