"""The grouping-sets path for equivalence similarities (exact, bins): no n^2 join (docs/design.md §2).

SQL collapses the subjects into the cells of the finest partition; `cohortsql.numeric.lattice` then finds
every cohort of every subset from those cells. Local values for targets look up the target's cell
(by its keys) in every subset's partition.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql import queries
from cohortsql.engines.base import Engine
from cohortsql.formats.tables import Diagnostics, diagnostics
from cohortsql.games.base import Cohorts, DenseBatch
from cohortsql.numeric import lattice, shapley
from cohortsql.request.measures import Measures
from cohortsql.run.pace import Pacer
from cohortsql.run.preparation import Prepared, game_means
from cohortsql.run.replicates import draw_groups, one_row_per_key
from cohortsql.run.session import GamePass
from cohortsql.run.targets import TargetSet


class Cells(NamedTuple):
    """The finest cells: their keys (for finding targets), key codes, weights and centred sums of y."""

    keys: pl.DataFrame
    codes: np.ndarray
    weights: np.ndarray
    """Each cell's weight under every weighting (its number of subjects when unweighted), (cells, weightings)."""
    centered: np.ndarray
    """Each cell's weighted sum of y - ybar in every game, (cells, games)."""

    @classmethod
    def from_frame(cls, frame: pl.DataFrame, key_columns: list[str], measures: Measures, means: np.ndarray) -> Cells:
        """Cells from a frame of keys and the measures' sums (see ``sql/equivalence_cells.sql``), centred
        on each game's overall mean `means`; each key coded densely (NULL is code 0)."""
        keys = frame.select(key_columns)
        codes = [_codes(keys[column]) for column in key_columns]
        weights = frame.select(measures.weight_names).to_numpy().astype(np.float64)
        sums = frame.select(measures.sum_names).to_numpy().astype(np.float64).reshape(frame.height, measures.games)
        return cls(
            keys,
            np.column_stack(codes) if codes else np.zeros((frame.height, 0), dtype=np.int64),
            weights,
            sums - weights[:, measures.weighting_of_game] * np.asarray(means, dtype=np.float64),
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

    def cohorts(self, measures: Measures, target_cells: np.ndarray) -> lattice.SubsetCohorts:
        """Every cohort of every subset for every game, and the requested targets' (`cohortsql.numeric.lattice`)."""
        return lattice.subset_cohorts(self.codes, self.weights, self.centered, measures.weighting_of_game, target_cells)


def _codes(key: pl.Series) -> np.ndarray:
    """Codes 1, 2, ... of a key's values in their order (NULL is 0). Integer keys without wide gaps (bin
    numbers, small counts) are offset from their minimum, which needs no sort; others (and unsigned
    64-bit keys, which may not fit a signed one) are ranked."""
    if key.dtype.is_integer() and key.dtype != pl.UInt64 and key.null_count() < len(key):
        low, high = int(key.min()), int(key.max())  # type: ignore[arg-type]
        if high - low < 2 * key.n_unique():
            return (key.cast(pl.Int64) - (low - 1)).fill_null(0).to_numpy()
    return key.rank("dense").fill_null(0).to_numpy().astype(np.int64)


def _key_columns(prepared: Prepared) -> list[str]:
    return [f"k{feature.index}" for feature in prepared.features]


def _cells(engine: Engine, prepared: Prepared) -> tuple[Cells, np.ndarray]:
    """Group the subjects into cells in SQL; the cells and every game's overall (centred) mean."""
    measures, dialect = prepared.measures, engine.dialect
    keys = _key_columns(prepared)
    if not measures.replicates:
        frame = _frame(engine, queries.cells.equivalence_cells(prepared.subjects, prepared.features, measures, dialect))
    else:
        with draw_groups(engine, measures) as groups:
            sql = queries.cells.replicate_cells(prepared.subjects, prepared.features, measures, groups, dialect)
            distinct, columns = one_row_per_key(_frame(engine, sql), keys, measures)
            frame = distinct.with_columns(pl.DataFrame(columns))
    totals = frame.select([*measures.weight_names, *measures.sum_names]).sum().row(0, named=True)
    means, _ = game_means(measures, totals)
    return Cells.from_frame(frame, keys, measures, means), means


def _frame(engine: Engine, sql: str) -> pl.DataFrame:
    frame = pl.from_arrow(engine.fetch_arrow(sql, context="grouping subjects into cells"))
    assert isinstance(frame, pl.DataFrame)
    return frame


def variance_game(engine: Engine, prepared: Prepared) -> tuple[np.ndarray, Diagnostics]:
    """v_var(u) over every subject for every subset u and game, shape (games, 2^d), and the
    diagnostics of every subject's cohorts."""
    cells, _ = _cells(engine, prepared)
    cohorts = cells.cohorts(prepared.measures, np.empty(0, dtype=np.int64))
    features = tuple(feature.name for feature in prepared.features)
    own = cells.weights[:, 0]
    checks = diagnostics(own, cohorts.feature_sizes, features, prepared.total_weight, weights=own)
    return cohorts.variance_game, checks


def _target_cells(engine: Engine, prepared: Prepared, cells: Cells, batch: str) -> np.ndarray:
    """The cell of every target of an uploaded batch."""
    table = engine.fetch_arrow(
        queries.cells.target_keys(batch, prepared.features, engine.dialect), context="finding the targets' cells"
    )
    targets = pl.from_arrow(table)
    assert isinstance(targets, pl.DataFrame)
    return cells.cells_of(targets)


def values_of_cells(
    cells: Cells, target_cells: np.ndarray, measures: Measures, means: np.ndarray, weights: np.ndarray
) -> shapley.CohortShapley:
    """Exact values of every game of targets in the given cells, walking the lattice of subsets over
    the cells; game rows as in `cohortsql.run.pairwise.exact_values`, `weights[t, g]` as there."""
    cohorts = cells.cohorts(measures, target_cells)
    games = measures.games
    sizes = cohorts.sizes[:, measures.weighting_of_game].reshape(-1, cohorts.sizes.shape[-1])
    return shapley.cohort_shapley_of_games(
        sizes,
        cohorts.game.reshape(-1, cohorts.game.shape[-1]),
        np.tile(np.asarray(means, dtype=np.float64), len(target_cells)),
        np.asarray(weights, dtype=np.float64).reshape(-1),
        games,
    )


def values_by_cell(engine: Engine, prepared: Prepared, cells_per_batch: int) -> pa.Table:
    """Every cell's exact values of the first outcome, one row per cell and feature: its keys ``k<j>``,
    ``feature``, ``shapley`` and ``shapley_squared``. Targets with the same keys have the same values,
    so these, joined to the targets (`cohortsql.queries.cells.values_by_cell`), are every target's,
    with nothing per target in this process. The lattice is walked for `cells_per_batch` cells at a
    time (its 2^d arrays per cell are what the memory budget bounds)."""
    measures = prepared.measures
    cells, means = _cells(engine, prepared)
    names = [feature.name for feature in prepared.features]
    parts = []
    for start in range(0, cells.keys.height, cells_per_batch):
        chosen = np.arange(start, min(start + cells_per_batch, cells.keys.height), dtype=np.int64)
        values = values_of_cells(cells, chosen, measures, means, np.ones((len(chosen), measures.games)))
        parts.append(
            cells.keys[np.repeat(chosen, prepared.d)].with_columns(
                feature=pl.Series(names * len(chosen), dtype=pl.String),
                shapley=values.per_row.shapley[:: measures.games].reshape(-1),  # game rows: per cell, every game
                shapley_squared=values.per_row.shapley_squared[:: measures.games].reshape(-1),
            )
        )
    return pl.concat(parts).to_arrow()


def _batches_of_cells(
    engine: Engine, prepared: Prepared, targets: TargetSet, pacer: Pacer
) -> Iterator[tuple[int, int, Cells, np.ndarray, np.ndarray]]:
    """(first target, number of targets, the cells, the targets' cells, the games' means) for each
    batch of distinct targets."""
    began = time.perf_counter()
    cells, means = _cells(engine, prepared)
    pacer.setup_seconds += time.perf_counter() - began
    for start, size in pacer.batches():
        batch = targets.numbered(start, size)
        with engine.temporary(engine.upload(batch, "targets")) as uploaded:
            target_cells = _target_cells(engine, prepared, cells, uploaded)
        yield start, batch.num_rows, cells, target_cells, means


def grouping_sets_batches(
    engine: Engine, prepared: Prepared, targets: TargetSet, pacer: Pacer
) -> Iterator[shapley.CohortShapley]:
    """Exact cohort Shapley values of every game of the targets, one batch at a time (each batch walks the lattice)."""
    measures = prepared.measures
    for start, rows, cells, target_cells, means in _batches_of_cells(engine, prepared, targets, pacer):
        weights = targets.multiplicity[start : start + rows][:, measures.weighting_of_game]
        yield values_of_cells(cells, target_cells, measures, means, weights)


def dense_games(run: GamePass, *, replicates: bool = False) -> Iterator[DenseBatch]:
    """The exact driver of the grouping-sets path for any `games`: each batch of targets' dense games,
    from the lattice of cells; with `replicates`, those of every bootstrap weighting in turn."""
    prepared, games = run.session.prepared, run.games
    measures = prepared.measures
    for start, rows, cells, target_cells, means in _batches_of_cells(
        run.session.engine, prepared, run.targets, run.pacer
    ):
        lattice = cells.cohorts(measures, target_cells)
        for weighting in range(measures.weightings if replicates else 1):
            own = [measures.game(outcome, weighting) for outcome in range(measures.outcomes)]
            overall = np.broadcast_to(means[own], (rows, len(own)))
            cohorts = Cohorts(lattice.sizes[:, weighting], lattice.game[:, own], overall, prepared.powers)
            yield DenseBatch(start, rows, 0, cohorts, [game.values(cohorts) for game in games], weighting)
