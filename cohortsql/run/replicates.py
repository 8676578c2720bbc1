"""Bootstrap replicates in long form: one row per group of four replicates instead of a column per
replicate, so that no query grows with B (``sql/replicate_cells.sql``, ``sql/replicate_subjects.sql``,
``sql/target_draws.sql``), then one row per key with a column per weighting, as the games expect.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql import queries
from cohortsql.engines.base import Engine
from cohortsql.request.measures import Measures
from cohortsql.run.preparation import Prepared, WeightedSubjects, game_means

ENGINE_SUM_BYTES = 800_000
"""What the engine holds per sum of a histogram query while it runs: DuckDB 2.0 moves vectors of
2,048 rows through each step of a query on each thread, whatever the rows. Measured on 200 subjects
with 2,000 replicates under memory_limit=200MB: a column per replicate (4,002 sums) failed, queries of
1,000 sums peaked at 660 MB and of 250 sums at 430 MB."""

MOST_QUERY_SUMS = 16_000
"""The most sums a histogram query with a column per weighting holds, whatever the memory: DuckDB 2.0
stops the process (SIGFPE in its hash aggregate, ``RadixHTGlobalSinkState``) from about 16,384 DOUBLE
sums grouped by keys its perfect hash table does not take (a plain query of two keys under a 20 GB
limit: 16,382 sums ran, 16,384 crashed; interactions of 9,000 replicates crashed, of 8,000 ran)."""


def long_replicates(prepared: Prepared) -> bool:
    """Whether a histogram's subjects come in a row per group of four replicates instead of a column
    per weighting: when a column per weighting would hold more sums than the engine's memory allows one
    query (`ENGINE_SUM_BYTES` each), or than `MOST_QUERY_SUMS`. A row per group makes the join B / 4
    times longer, so it is kept for what does not fit otherwise."""
    measures = prepared.measures
    sums = measures.weightings * (1 + measures.outcomes)
    too_many = sums * ENGINE_SUM_BYTES > prepared.engine_bytes or sums > MOST_QUERY_SUMS
    return measures.replicates > 0 and too_many


def draw_group_count(measures: Measures) -> int:
    """How many groups of four replicates hold replicates 1 .. B."""
    return queries.measures.draw_group(measures.replicates)[0] + 1


def _upload_groups(engine: Engine, measures: Measures) -> str:
    """A relation numbering the groups of replicates, ``__cohort_group`` = 0 .. G - 1."""
    numbers = np.arange(draw_group_count(measures), dtype=np.int64)
    return engine.upload(pa.table({"__cohort_group": numbers}), "draw_groups")


@contextmanager
def draw_groups(engine: Engine, measures: Measures) -> Iterator[str]:
    """The relation of `_upload_groups`, for one use."""
    with engine.temporary(_upload_groups(engine, measures)) as groups:
        yield groups


def weigh_replicates(engine: Engine, prepared: Prepared) -> WeightedSubjects:
    """The histogram's input for many replicates: the subjects (collapsed when that pays) under every
    group of four replicates, a view (``sql/replicate_subjects.sql``: its draws are computed again in
    each batch, an md5 per subject and group, which costs less than the batch's join by the number of
    its targets); and the games' overall means."""
    measures = prepared.measures
    groups = _upload_groups(engine, measures)  # kept: the view reads it in every batch
    relation = engine.create(
        queries.measures.replicate_subjects(
            prepared.subjects, prepared.features, measures, groups, engine.dialect, collapsed=prepared.compressed
        ),
        "replicate_subjects",
        materialize=False,
        context="weighing the subjects",
    )
    frame = pl.from_arrow(
        engine.fetch_arrow(
            queries.measures.replicate_totals(relation, measures, engine.dialect),
            context="summing the bootstrap replicates",
        )
    )
    assert isinstance(frame, pl.DataFrame)
    _, totals = one_row_per_key(frame, [], measures)
    means, weights = game_means(measures, {name: float(total[0]) for name, total in totals.items()})
    return WeightedSubjects(relation, means, weights, draw_groups=True)


def one_row_per_key(
    frame: pl.DataFrame, keys: list[str], measures: Measures
) -> tuple[pl.DataFrame, dict[str, np.ndarray]]:
    """Rows of `keys` with one row per hash group of replicates (``draw_group``; the sums ``own_w``,
    ``own_s<k>``, ``w<r>``, ``s<k>_<r>`` of ``sql/replicate_cells.sql``) as one row per key: the
    distinct keys in order of first appearance, and the columns of every weighting (``w<b>``,
    ``s<k>_<b>``) for them."""
    distinct = frame.select(keys).unique(maintain_order=True).with_row_index("__cohort_key")
    numbered = frame.join(distinct, on=keys, how="left", nulls_equal=True, maintain_order="left") if keys else frame
    key = numbered["__cohort_key"].to_numpy().astype(np.int64) if keys else np.zeros(frame.height, dtype=np.int64)
    rows = distinct.height if keys else 1
    group = numbered["draw_group"].to_numpy().astype(np.int64)
    columns = {}
    for outcome in [None, *range(measures.outcomes)]:
        own, part = ("own_w", "w{part}") if outcome is None else (f"own_s{outcome}", f"s{outcome}_{{part}}")
        values = np.zeros((measures.weightings, rows))
        np.add.at(values[0], key, numbered[own].to_numpy())
        for index in range(queries.measures.DRAWS_PER_HASH):
            replicate = queries.measures.DRAWS_PER_HASH * group + index + 1
            kept = replicate <= measures.replicates
            values[replicate[kept], key[kept]] = numbered[part.format(part=index)].to_numpy()[kept]
        for weighting in range(measures.weightings):
            name = measures.weight_name(weighting) if outcome is None else measures.sum_name(outcome, weighting)
            columns[name] = values[weighting]
    return distinct.drop("__cohort_key"), columns
