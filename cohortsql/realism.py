"""Which hybrid points are realistic: similar to at least one subject on every predictor (paper, Appendix 4).

The engine decides similarity, with the same kinds, whole-table parameters and SQL as cohort
Shapley: for each predictor it joins the distinct values the points take with the distinct subject
rows (``sql/similar_pairs.sql``). numpy keeps the answer as one bitset per point value, bit i set
when subject row i is similar to it; a hybrid point is realistic when the AND of its d bitsets is
not empty. That is d word operations per 64 subject rows per point, whatever the kinds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from cohortsql import compile
from cohortsql.engines.base import Engine
from cohortsql.plan import ResolvedFeature

WORD_BITS = 64
CHUNK_BYTES = 64 * 2**20
"""Bitset bytes ANDed at once when testing many points."""


class SubjectBitsets:
    """For each feature j, a (values of j, words) uint64 array: bit i of row k is set when subject row
    i is similar to the feature's k-th point value."""

    def __init__(self, bitsets: Sequence[np.ndarray]) -> None:
        self.bitsets = list(bitsets)

    def realistic(self, codes: np.ndarray) -> np.ndarray:
        """For each point (a row of per-feature value codes, shape (points, d)), whether some subject
        row is similar to it on every feature."""
        words = self.bitsets[0].shape[1] if self.bitsets else 1
        result = np.empty(len(codes), dtype=bool)
        step = max(1, CHUNK_BYTES // (8 * words))
        for start in range(0, len(codes), step):
            chunk = codes[start : start + step]
            together = np.full((len(chunk), words), ~np.uint64(0))
            for feature, bitset in enumerate(self.bitsets):
                together &= bitset[chunk[:, feature]]
            result[start : start + step] = together.any(axis=1)
        return result


def subject_bitsets(
    engine: Engine, subjects: str, features: Sequence[ResolvedFeature], point_values: Sequence[pa.Array]
) -> SubjectBitsets:
    """Similarity of every distinct subject row to every point value, feature by feature: entry j of
    `point_values` holds feature j's distinct point values as the similarity tests compare them, in
    code order."""
    dialect = engine.dialect
    rows = engine.fetch_arrow(compile.subject_rows(subjects, features, dialect), context="reading the subject rows")
    count = rows.num_rows
    numbered = rows.append_column("__cohort_row", pa.array(np.arange(count, dtype=np.int64)))
    subject_table = engine.upload(numbered, "subject_rows")
    words = max(1, -(-count // WORD_BITS))
    bitsets = []
    try:
        for feature, values in zip(features, point_values):
            points = engine.upload(
                pa.table({"__cohort_code": pa.array(np.arange(len(values), dtype=np.int64)), feature.column: values}),
                "point_values",
            )
            try:
                pairs = engine.fetch_arrow(
                    compile.similar_pairs(points, subject_table, feature, dialect),
                    context=f"testing which hybrid values of {feature.name!r} are realistic",
                )
            finally:
                engine.drop(points)
            code = pairs.column("__cohort_code").to_numpy()
            row = pairs.column("__cohort_row").to_numpy()
            bitset = np.zeros((len(values), words), dtype=np.uint64)
            np.bitwise_or.at(
                bitset, (code, row // WORD_BITS), np.left_shift(np.uint64(1), (row % WORD_BITS).astype(np.uint64))
            )
            bitsets.append(bitset)
    finally:
        engine.drop(subject_table)
    return SubjectBitsets(bitsets)
