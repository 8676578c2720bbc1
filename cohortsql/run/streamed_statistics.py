"""The statistics of a wide table's plain features counted in this process from its streamed columns,
for an engine whose rows stream here at memory speed (DuckDB): a plain feature needs only counts of
its values (`COUNTED_HERE`) beside its whole-table parameters: an `exact` one of integers, booleans,
text, dates... its missing values and its number of distinct values; a window of given width over
floats (``abs:0.1``) its missing, NaN and infinite values. One statement of thousands of such aggregates
costs DuckDB more to parse and bind than the pass over the data (0.15-0.2 s at 1,024 `exact` features
whatever the rows, where this pass took 0.06-0.08 s at 1,000 to 20,000 rows; 1.9 s for 1,024 ``abs``
windows over floats at 1,000 rows). The columns are read once, a batch at a time; each one's missing,
NaN and infinite values are counted and its distinct values kept while they are few (`DISTINCT_KEPT`:
an exact count, where the engine's aggregate estimates), else estimated by the engine's own aggregate
in a query of those columns alone. The parameters stay in the statistics statement (a window's width
is a constant there).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from cohortsql import queries
from cohortsql._typing import Row
from cohortsql.engines.base import Engine, fetch_record
from cohortsql.request.features import Feature

STREAMED_FROM_FEATURES = 64
"""A call counts its plain features here when it has at least this many of them (and its engine streams
rows): below it, their aggregates cost the statistics statement little."""

DISTINCT_KEPT = 4_096
"""A column's distinct values are kept for an exact count while they are at most this many; a column with
more is estimated by the engine (``approx_count_distinct``)."""

KEPT_BYTES = 64 * 2**20
"""The distinct values kept for all the columns hold at most this many bytes (a column's share of it:
long text reaches it before `DISTINCT_KEPT` values do); a column beyond its share is estimated too."""

BATCH_ROWS = 8_192
"""Rows per batch the columns stream in."""

COUNTED_HERE = queries.statistics.COUNTED_STATISTICS
"""The statistics counted here: missing values, distinct values, NaN and infinite values."""


def plain_features(engine: Engine, features: Sequence[Feature]) -> tuple[Feature, ...]:
    """The features whose statistics this module counts for this call: those that need, beside their
    parameters, only the counts of `COUNTED_HERE`, when the engine streams rows and there are enough of
    them."""
    if not engine.streams_rows:
        return ()
    plain = tuple(feature for feature in features if counted(feature, engine) <= COUNTED_HERE)
    return plain if len(plain) >= STREAMED_FROM_FEATURES else ()


def counted(feature: Feature, engine: Engine) -> frozenset[str]:
    """The statistics `feature` needs other than its whole-table parameters."""
    needed = queries.statistics.feature_statistics(feature, engine.dialect.quote(feature.name), engine.dialect)
    return frozenset(name for name in needed if not name.startswith("parameter:"))


def streamed_statistics(
    engine: Engine, relation: str, features: Sequence[Feature], in_memory: pa.Table | None = None
) -> Row:
    """Each feature's counts of `COUNTED_HERE` that it needs (`counted`): ``nulls``, ``nan``, ``infinite``
    and ``levels`` (its distinct values other than NULL), under the aliases of the statistics row
    (`queries.statistics.statistic_alias`). `in_memory`: the relation's rows themselves
    (`cohortsql.engines.inputs.Input.in_memory`), read here rather than through the engine."""
    needs = [counted(feature, engine) for feature in features]
    counts = [dict.fromkeys(need - {"levels"}, 0) for need in needs]
    seen: list[list[pa.Array]] = [[] for _ in features]
    sizes, held = [0] * len(features), [0] * len(features)
    share = KEPT_BYTES // len(features)
    distinct = ["levels" in need for need in needs]
    many: set[int] = set()
    for batch in _batches(engine, relation, [feature.name for feature in features], in_memory):
        for position, column in enumerate(batch.columns):
            _count_values(column, counts[position])
            if position in many or not distinct[position]:
                continue
            try:
                values = pc.unique(column)
                seen[position].append(values)
                sizes[position] += len(values)
                held[position] += values.nbytes
                if sizes[position] > DISTINCT_KEPT or held[position] > share:
                    merged = _merged(seen[position])
                    seen[position], sizes[position], held[position] = [merged], len(merged), merged.nbytes
            except pa.ArrowException:  # a type Arrow does not hash or concatenate: the engine estimates it
                sizes[position] = DISTINCT_KEPT + 2
            if sizes[position] > DISTINCT_KEPT + 1 or held[position] > share:  # (NULL is one of the values)
                many.add(position)
                seen[position] = []
    row: Row = {}
    for position, feature in enumerate(features):
        row |= {
            queries.statistics.statistic_alias(feature.index, name): count for name, count in counts[position].items()
        }
        if position in many or not distinct[position]:
            continue
        try:
            merged = _merged(seen[position])
        except pa.ArrowException:
            many.add(position)
            continue
        row[queries.statistics.statistic_alias(feature.index, "levels")] = len(merged) - merged.null_count
    if many:
        estimates = {
            queries.statistics.statistic_alias(features[position].index, "levels"): engine.dialect.distinct_estimate(
                engine.dialect.quote(features[position].name)
            )
            for position in sorted(many)
        }
        row |= fetch_record(
            engine,
            queries.statistics.table_statistics(relation, estimates, engine.dialect),
            context="estimating the features' distinct values",
        )
    return row


def _count_values(column: pa.Array, counts: dict[str, int]) -> None:
    """Add a batch of a column's missing values, and its NaN and infinite ones where asked (`counts`' keys),
    to `counts`: NaN as the engine's ``is_nan`` counts it, infinite values positive or negative."""
    counts["nulls"] += column.null_count
    for name, test in (("nan", pc.is_nan), ("infinite", pc.is_inf)):
        if name in counts:
            counts[name] += pc.sum(pc.cast(test(column), pa.int64())).as_py() or 0


def _batches(engine: Engine, relation: str, names: list[str], in_memory: pa.Table | None) -> Iterator[pa.RecordBatch]:
    """The columns `names` of every row, `BATCH_ROWS` at a time."""
    if in_memory is not None:
        yield from in_memory.select(names).to_batches(max_chunksize=BATCH_ROWS)
        return
    select = queries.statistics.feature_columns(relation, names, engine.dialect)
    yield from engine.arrow_batches(select, rows=BATCH_ROWS, context="counting the features' values")


def _merged(parts: list[pa.Array]) -> pa.Array:
    """The distinct values of the parts together."""
    if not parts:
        return pa.array([], pa.null())
    return parts[0] if len(parts) == 1 else pc.unique(pa.concat_arrays(parts))
