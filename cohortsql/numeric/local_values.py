"""The one carrier of values from a driver to a result: the values of game rows (or targets) of one
kind, whichever method computed them (`LocalValues`). Pure numpy."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

ByRow = np.ndarray
"""An array with one entry per row (a game row, or a target once a result holds it): shape (rows,)."""
ByRowAndFeature = np.ndarray
"""An array with one entry per row and feature: shape (rows, d)."""


class LocalValues(NamedTuple):
    """Cohort Shapley values and their cohorts' statistics, with a leading axis of game rows (a row is
    one target's game for one outcome and weighting, `cohortsql.request.measures`) or, once a result
    takes them, of targets: exact (`cohortsql.numeric.shapley.CohortShapley`), estimated by
    permutations (`cohortsql.numeric.permutation.stack`, with standard errors) or integrated
    (`cohortsql.api.integrated.integrated_fields`). Sizes are sums of weights (counts unweighted)."""

    shapley: ByRowAndFeature
    """phi_j of v_CS(t, u) = ybar_{t,u} - ybar."""
    shapley_squared: ByRowAndFeature
    """phi_j of the squared game v_CS2(t, u) = (ybar_{t,u} - ybar)^2 (never phi_j^2)."""
    cohort_size: ByRow
    """|C_{t,1:d}|."""
    cohort_mean: ByRow
    """ybar_{t,1:d} (relative to the run's offset, the pilot value)."""
    path_order: ByRowAndFeature
    """Each row's features by decreasing |phi_j|."""
    path_size: ByRowAndFeature
    """|C_{t,u_k}| for u_k = the k + 1 most important features (the refinement path)."""
    path_mean: ByRowAndFeature
    """ybar_{t,u_k} along the refinement path."""
    feature_cohort_size: ByRowAndFeature
    """|C_{t,{j}}|: the subjects similar to the target on feature j alone."""
    shapley_se: ByRowAndFeature | None = None
    """The permutation method's standard errors (None: exact or integrated)."""
    shapley_squared_se: ByRowAndFeature | None = None
    permutations: ByRow | None = None
    interactions: np.ndarray | None = None
    """Interaction values the permutations estimated with the values, (rows, d, d)."""
    interactions_se: np.ndarray | None = None

    def map(self, function: Callable[[np.ndarray], np.ndarray]) -> LocalValues:
        """Each array through `function` (a selection of rows, a reshape); None stays None."""
        return LocalValues._make(None if array is None else function(array) for array in self)

    @classmethod
    def joined(cls, parts: Sequence[LocalValues]) -> LocalValues:
        """The rows of consecutive parts, in order."""
        return cls._make(None if arrays[0] is None else np.concatenate(arrays) for arrays in zip(*parts, strict=True))
