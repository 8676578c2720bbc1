"""Which hybrid points are realistic: similar to at least one subject on every predictor (paper, Appendix 4).

The engine decides similarity, with the same kinds, whole-table parameters and SQL as cohort
Shapley: it numbers the subject rows (the distinct ones when many repeat; ``sql/subject_rows.sql``)
and, for each predictor, joins the distinct values the points take with them and packs the answer
into bitset words (``sql/similar_words.sql``): bit i of a value's bitset is set when subject row i
is similar to it. Only those words reach numpy, never the rows or the similar pairs. A hybrid point
is realistic when the AND of its d bitsets is not empty: d word operations per 63 subject rows per
point, whatever the kinds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from cohortsql import queries
from cohortsql.engines.base import Engine, fetch_record
from cohortsql.errors import CohortError
from cohortsql.request.features import ResolvedFeature

WORD_BITS = 63
"""Subject rows per bitset word: the bits a BIGINT holds without its sign, so that every engine builds
words with the same arithmetic (powers of two OR-ed together)."""
CHUNK_BYTES = 64 * 2**20
"""Bitset bytes ANDed at once when testing many points."""
MAX_BITSET_BYTES = 4 * 2**30
"""Largest total size of the bitsets (one bit per subject row per point value and predictor)."""


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
    engine: Engine,
    subjects: str,
    features: Sequence[ResolvedFeature],
    point_values: Sequence[pa.Array],
    *,
    distinct: bool,
) -> SubjectBitsets:
    """Similarity of every subject row to every point value, feature by feature: entry j of
    `point_values` holds feature j's distinct point values as the similarity tests compare them, in
    code order. With `distinct` (worth it when many rows repeat), identical rows count once."""
    dialect = engine.dialect
    created = engine.create(
        queries.baseline.subject_rows(subjects, features, dialect, distinct=distinct),
        "subject_rows",
        materialize=True,
        context="numbering the subject rows",
    )
    with engine.temporary(created) as rows:
        count = int(fetch_record(engine, queries.targets.row_count(rows), context="counting the subject rows")["n"])
        words = max(1, -(-count // WORD_BITS))
        values = sum(len(value) for value in point_values)
        if values * words * 8 > MAX_BITSET_BYTES:
            raise CohortError(
                f"testing realism against {count:,} subject rows for {values:,} point values would"
                f" need {values * words * 8 / 2**30:.1f} GiB of bitsets (at most {MAX_BITSET_BYTES / 2**30:.0f}):"
                " use fewer targets or baselines (baseline_sample=), or realistic=False"
            )
        return SubjectBitsets(
            [_feature_bitset(engine, rows, feature, value, words) for feature, value in zip(features, point_values)]
        )


def _feature_bitset(engine: Engine, rows: str, feature: ResolvedFeature, values: pa.Array, words: int) -> np.ndarray:
    """The (values, words) bitsets of one feature, from the engine's words with a bit set."""
    uploaded = engine.upload(
        pa.table({"__cohort_code": pa.array(np.arange(len(values), dtype=np.int64)), feature.column: values}),
        "point_values",
    )
    with engine.temporary(uploaded) as points:
        found = engine.fetch_arrow(
            queries.baseline.similar_words(points, rows, feature, engine.dialect, word_bits=WORD_BITS),
            context=f"testing which hybrid values of {feature.name!r} are realistic",
        )
    bitset = np.zeros((len(values), words), dtype=np.uint64)
    codes, word = (found.column(name).to_numpy() for name in ("__cohort_code", "__cohort_word"))
    bitset[codes, word] = found.column("__cohort_bits").to_numpy().astype(np.uint64)  # one row per (code, word)
    return bitset
