"""Uniqueness Shapley (Seiler, Mase & Owen) from the engine's mask histograms: v(u) = -log(|C_{t,u}| / n),
from the cohort sizes alone. Pure numpy.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from cohortsql.numeric import shapley
from cohortsql.spec.measures import Measures


def uniqueness_values(
    histogram: dict[str, np.ndarray], rows: int, d: int, measures: Measures, totals: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Uniqueness Shapley values of a batch of targets from their mask histogram: phi (rows, d),
    -log(|C_{t,1:d}| / n) (rows,) and |C_{t,1:d}| (rows,), under the data's own weighting."""
    target, mask, weight = histogram["target"], histogram["mask0"], histogram[measures.weight_name(0)]
    parts = []
    with threadpool_limits(limits=1, user_api="blas"):
        for start, stop, (counts,) in shapley.dense_chunks(target, mask, [weight.astype(np.float64)], rows, d):
            sizes = shapley.superset_sums(counts)
            phi, value = shapley.uniqueness_values(sizes, np.full(stop - start, totals[0]))
            parts.append((phi, value, sizes[:, -1]))
    phi, value, size = (np.concatenate(arrays) for arrays in zip(*parts))
    return phi, value, size
