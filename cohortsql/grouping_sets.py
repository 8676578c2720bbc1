"""The grouping-sets path for equivalence similarities (exact, bins): no n^2 join (DESIGN §2).

SQL collapses the subjects into the cells of the finest partition; `cohortsql.lattice` then finds
every cohort of every subset from those cells. Local values for targets look up the target's cell
in every subset's partition.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from cohortsql import compile, lattice, shapley
from cohortsql.engine import DuckDBEngine
from cohortsql.prepare import Prepared


def _cells(engine: DuckDBEngine, prepared: Prepared) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """Create the cells table; return its name, key codes, sizes and centred sums."""
    cells = engine.temporary_name("cells")
    engine.create(
        "TABLE",
        cells,
        compile.equivalence_cells(prepared.subjects, cells, prepared.features, prepared.mean),
        context="grouping subjects into cells",
    )
    columns = engine.fetch_numpy(compile.cell_codes(cells, prepared.d), context="reading cells")
    codes = np.column_stack([columns[f"__cohort_c{index}"] for index in range(prepared.d)]).astype(np.int64)
    return cells, codes, columns["subjects"].astype(np.float64), columns["centered_sum"].astype(np.float64)


def variance_game(engine: DuckDBEngine, prepared: Prepared) -> np.ndarray:
    """v_var(u) over every subject for every subset u, shape (2^d,)."""
    _, codes, counts, centered = _cells(engine, prepared)
    return lattice.subset_cohorts(codes, counts, centered, np.empty(0, dtype=np.int64)).variance_game


def grouping_sets_batches(engine: DuckDBEngine, prepared: Prepared) -> Iterator[shapley.CohortShapley]:
    """Exact cohort Shapley values of the targets, one batch at a time (each batch walks the lattice)."""
    cells, codes, counts, centered = _cells(engine, prepared)
    batch_size = shapley.targets_per_batch(prepared.d, prepared.batch_bytes)
    for start in range(0, prepared.distinct_targets.num_rows, batch_size):
        batch = prepared.numbered_targets(start, batch_size)
        name = engine.temporary_name("targets")
        with engine.registered(name, batch):
            target_cells = engine.fetch_numpy(
                compile.target_cells(cells, name, prepared.features), context="finding the targets' cells"
            )["cell"]
        cohorts = lattice.subset_cohorts(codes, counts, centered, target_cells.astype(np.int64))
        weights = prepared.multiplicity[start : start + batch.num_rows]
        yield shapley.cohort_shapley_of_games(cohorts.sizes, cohorts.game, prepared.mean, weights)
