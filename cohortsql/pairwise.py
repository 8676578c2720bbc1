"""The pairwise path (any similarity kinds): SQL mask histograms, then the superset-sum transform.

DESIGN §2: for a batch of targets, DuckDB joins the targets with every subject, computes the d-bit
similarity mask and aggregates GROUP BY target, mask; numpy scatters each target's histogram into
2^d cells and superset-sums it into every cohort's size and sum. Batches bound the memory.
"""

from __future__ import annotations

from collections.abc import Iterator

from cohortsql import compile, shapley
from cohortsql.engine import DuckDBEngine
from cohortsql.prepare import Prepared
from cohortsql.similarity import SqlPredicate


def pairwise_batches(engine: DuckDBEngine, prepared: Prepared) -> Iterator[shapley.CohortShapley]:
    """Exact cohort Shapley values, one batch of targets at a time."""
    d = prepared.d
    batch_size = shapley.targets_per_batch(d)
    custom = [feature.name for feature in prepared.features if isinstance(feature.kind, SqlPredicate)]
    context = "computing similarity masks" + (f" (check the sql: similarity of {custom})" if custom else "")
    for start in range(0, prepared.target_table.num_rows, batch_size):
        batch = prepared.numbered_targets(start, batch_size)
        name = engine.temporary_name("targets")
        with engine.registered(name, batch):
            histogram = engine.fetch_numpy(
                compile.mask_histogram(prepared.weighted_subjects, name, prepared.features), context=context
            )
        counts, sums = shapley.scatter_histograms(
            histogram["target"], histogram["mask0"], histogram["subjects"], histogram["sum_y"], batch.num_rows, d
        )
        weights = prepared.multiplicity[start : start + batch.num_rows]
        yield shapley.cohort_shapley(counts, sums, prepared.mean, weights)
