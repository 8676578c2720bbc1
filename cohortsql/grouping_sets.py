"""The grouping-sets path for equivalence similarities (exact, bins): no n^2 join (DESIGN §2).

SQL collapses the subjects into the cells of the finest partition; `cohortsql.lattice` then finds
every cohort of every subset from those cells. Local values for targets look up the target's cell
(by its keys) in every subset's partition.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from cohortsql import compile, lattice, shapley
from cohortsql.engines.base import Engine
from cohortsql.pace import Pacer
from cohortsql.prepare import Prepared, TargetSet
from cohortsql.result import diagnostics


class Cells(NamedTuple):
    """The finest cells: their keys (for finding targets), key codes, sizes and sums of y - ybar."""

    keys: pl.DataFrame
    codes: np.ndarray
    counts: np.ndarray
    centered: np.ndarray

    @classmethod
    def from_frame(cls, frame: pl.DataFrame, key_columns: list[str]) -> Cells:
        """Cells from a frame of keys, ``subjects`` and ``centered_sum``; each key coded densely (NULL is code 0)."""
        keys = frame.select(key_columns)
        codes = [keys[column].rank("dense").fill_null(0).to_numpy().astype(np.int64) for column in key_columns]
        return cls(
            keys,
            np.column_stack(codes) if codes else np.zeros((frame.height, 0), dtype=np.int64),
            frame["subjects"].to_numpy().astype(np.float64),
            frame["centered_sum"].to_numpy().astype(np.float64),
        )

    def cells_of(self, target_keys: pl.DataFrame) -> np.ndarray:
        """The cell of each row of `target_keys` (same columns as `keys`; NULL matches NULL only)."""
        numbered = self.keys.with_row_index("__cohort_cell")
        found = target_keys.with_row_index("__cohort_target").join(
            numbered, on=self.keys.columns, how="left", nulls_equal=True, maintain_order="left"
        )
        cells = found.sort("__cohort_target")["__cohort_cell"]
        if cells.null_count():
            raise ValueError("a target is in no cell: the cells do not cover the targets")
        return cells.to_numpy().astype(np.int64)


def _key_columns(prepared: Prepared) -> list[str]:
    return [f"k{feature.index}" for feature in prepared.features]


def _cells(engine: Engine, prepared: Prepared) -> Cells:
    """Group the subjects into cells in SQL."""
    table = engine.fetch_arrow(
        compile.equivalence_cells(prepared.subjects, prepared.features, prepared.centred_mean, engine.dialect),
        context="grouping subjects into cells",
    )
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return Cells.from_frame(frame, _key_columns(prepared))


def variance_game(engine: Engine, prepared: Prepared) -> tuple[np.ndarray, dict[str, Any]]:
    """v_var(u) over every subject for every subset u, shape (2^d,), and the diagnostics of every subject's cohorts."""
    cells = _cells(engine, prepared)
    cohorts = lattice.subset_cohorts(cells.codes, cells.counts, cells.centered, np.empty(0, dtype=np.int64))
    features = tuple(feature.name for feature in prepared.features)
    checks = diagnostics(cells.counts, cohorts.feature_sizes, features, prepared.subject_count, weights=cells.counts)
    return cohorts.variance_game, checks


def _target_cells(engine: Engine, prepared: Prepared, cells: Cells, batch: str) -> np.ndarray:
    """The cell of every target of an uploaded batch."""
    table = engine.fetch_arrow(
        compile.target_keys(batch, prepared.features, engine.dialect), context="finding the targets' cells"
    )
    targets = pl.from_arrow(table)
    assert isinstance(targets, pl.DataFrame)
    return cells.cells_of(targets)


def values_of_cells(
    cells: Cells, target_cells: np.ndarray, centred_mean: float, weights: np.ndarray
) -> shapley.CohortShapley:
    """Exact values of targets in the given cells, walking the lattice of subsets over the cells."""
    cohorts = lattice.subset_cohorts(cells.codes, cells.counts, cells.centered, target_cells)
    return shapley.cohort_shapley_of_games(cohorts.sizes, cohorts.game, centred_mean, weights)


def grouping_sets_batches(
    engine: Engine, prepared: Prepared, targets: TargetSet, pacer: Pacer
) -> Iterator[shapley.CohortShapley]:
    """Exact cohort Shapley values of the targets, one batch at a time (each batch walks the lattice)."""
    cells = _cells(engine, prepared)
    for start, size in pacer.batches():
        batch = targets.numbered(start, size)
        uploaded = engine.upload(batch, "targets")
        try:
            target_cells = _target_cells(engine, prepared, cells, uploaded)
        finally:
            engine.drop(uploaded)
        weights = targets.multiplicity[start : start + batch.num_rows]
        yield values_of_cells(cells, target_cells, prepared.centred_mean, weights)
