"""The one carrier of values from a driver to a result: every target's values of one explained column,
whichever method computed them (`LocalValues`). Pure numpy."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class LocalValues(NamedTuple):
    """Every target's cohort Shapley values of one explained column, and its cohorts' statistics:
    exact (`cohortsql.numeric.shapley.CohortShapley`), estimated by permutations
    (`cohortsql.numeric.permutation.stack`, with standard errors) or integrated
    (`cohortsql.api.integrated.integrated_fields`). Leading axis: the targets."""

    shapley: np.ndarray
    """phi_j of v_CS(t, u) = ybar_{t,u} - ybar, (targets, players)."""
    shapley_squared: np.ndarray
    """phi_j of the squared game v_CS(t, u)^2 (never phi_j^2), (targets, players)."""
    cohort_size: np.ndarray
    """|C_{t,1:d}| (a sum of weights when weighted), (targets,)."""
    cohort_mean: np.ndarray
    """ybar_{t,1:d} relative to the run's offset (the pilot value), (targets,)."""
    path_order: np.ndarray
    """Each target's players by decreasing |phi_j| (its refinement path), (targets, players)."""
    path_size: np.ndarray
    """Cohort sizes along the refinement path, (targets, players)."""
    path_mean: np.ndarray
    """Cohort means along the refinement path, relative to the offset, (targets, players)."""
    feature_cohort_size: np.ndarray
    """|C_{t,{j}}|, (targets, players)."""
    shapley_se: np.ndarray | None = None
    """Standard errors of `shapley` (permutation method), else None (exact)."""
    shapley_squared_se: np.ndarray | None = None
    permutations: np.ndarray | None = None
    """Random orders each target's estimate drew (permutation method)."""
    interactions: np.ndarray | None = None
    """Interaction values estimated with the values (permutation method), (targets, players, players)."""
    interactions_se: np.ndarray | None = None
