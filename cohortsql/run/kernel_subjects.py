"""The subjects as the compiled integrated kernels read them (`cohortsql.numeric.dissimilar`), streamed
from an engine whose rows come to this process (DuckDB) and kept in memory after the first pass when
they fit the batch budget: a call's later passes over its targets (each batch's histogram, then its
refinement curves) read them from memory instead of asking the engine and encoding them again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from cohortsql import queries
from cohortsql.engines.base import Engine
from cohortsql.numeric import kernels, pair_masks
from cohortsql.numeric.pair_tests import PairTest
from cohortsql.run.pairwise import pair_tests
from cohortsql.run.preparation import Prepared, WeightedSubjects

SUBJECT_BATCH_ROWS = 8_192
"""Subjects per Arrow batch the kernel reads (`Engine.arrow_batches`): a few MB of features at d = 1,000."""

CODED_TARGET_BYTES = 64 * 2**20
"""Targets coded at once and kept (each feature a double, a 64-bit integer and a missing flag: 17 bytes):
3,800 targets at d = 1,024, so that a call's batches of targets are coded once, not once per pass."""


class KernelSubjects:
    """Every subject's features (`pair_masks.Columns`, compact) and measures (each of `measure_names`,
    a column of doubles), batch by batch. Text is coded against the values of every target of the call
    (`targets`), so that one coding serves each batch of them; the targets themselves are coded a chunk
    at a time (`CODED_TARGET_BYTES`), which the passes over a batch of them (its histogram, its
    refinement curves) share."""

    def __init__(
        self,
        engine: Engine,
        prepared: Prepared,
        weighted: WeightedSubjects,
        tests: Sequence[PairTest],
        targets: pa.Table,
    ) -> None:
        self.engine, self.tests, self.budget = engine, tests, prepared.batch_bytes
        self.columns = [feature.column for feature in prepared.features]
        self.measure_names = [*prepared.measures.weight_names, *prepared.measures.sum_names]
        self.vocabulary = [pair_masks.vocabulary(targets.column(name), test) for name, test in zip(self.columns, tests)]
        self.query = queries.histogram.pair_inputs(
            weighted.relation, prepared.features, prepared.measures, engine.dialect, collapsed=prepared.compressed
        )
        self.every_target = targets
        self.coded: tuple[int, pair_masks.Columns] | None = None
        """The first row of the targets coded last, and those coded from it."""
        self.kept: list[tuple[pair_masks.Columns, np.ndarray]] | None = None
        self.passes = 0
        """How many times the subjects were read from the engine."""

    def targets(self, first: int, count: int) -> pair_masks.Columns:
        """The `count` targets from row `first` of the call's targets, coded as the subjects are."""
        if self.coded is not None:
            start, coded = self.coded
            if start <= first and first + count <= start + coded.rows:
                return coded.between(first - start, first - start + count)
        chunk = self.every_target.slice(first, max(count, CODED_TARGET_BYTES // (17 * max(1, len(self.columns)))))
        coded = pair_masks.Columns.of([chunk.column(name) for name in self.columns], self.tests, self.vocabulary)
        self.coded = (first, coded)
        return coded.between(0, count)

    def batches(self, context: str) -> Iterator[tuple[pair_masks.Columns, np.ndarray]]:
        """(features, measures: (rows, measures)) of every subject, a batch at a time: from memory when a
        whole earlier pass fitted in the budget, else from the engine (`context` names the step in its errors)."""
        if self.kept is not None:
            yield from self.kept
            return
        self.passes += 1
        kept: list[tuple[pair_masks.Columns, np.ndarray]] | None = []
        size = 0
        for rows in self.engine.arrow_batches(self.query, rows=SUBJECT_BATCH_ROWS, context=context):
            features = pair_masks.Columns.of(
                [rows.column(name) for name in self.columns], self.tests, self.vocabulary, compact=True
            )
            measures = np.column_stack([rows.column(name).fill_null(0.0).to_numpy() for name in self.measure_names])
            if kept is not None:
                size += measures.nbytes + sum(array.nbytes for array in features.arrays)
                if size <= self.budget:
                    kept.append((features, measures))
                else:
                    kept = None
            yield features, measures
        self.kept = kept


def kernel_subjects(
    engine: Engine, prepared: Prepared, weighted: WeightedSubjects, targets: pa.Table
) -> KernelSubjects | None:
    """The subjects for the compiled kernels when this process should build the integrated histograms
    itself: an engine whose subjects stream here (DuckDB), the compiled kernel installed, every kind
    with a numeric twin (`cohortsql.run.pairwise.pair_tests`). Else None: the engine's SQL builds them.
    `targets`: every target of the call."""
    tests = pair_tests(prepared, masks=False) if engine.streams_rows and kernels.available() else None
    return None if tests is None else KernelSubjects(engine, prepared, weighted, tests, targets)
