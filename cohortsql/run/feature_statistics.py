"""What a call learns about its features beyond the one statistics pass: exact counts of distinct
values where an estimate is small, how long-tailed defaulted numbers are (which decides between
`DEFAULT_WINDOW` and `LONG_TAILED_WINDOW`), and quantiles by a sort (which spills) under a memory limit
or with case weights. Each step fills in the per-feature statistics `resolve_feature` reads."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

from cohortsql import queries
from cohortsql._typing import Row
from cohortsql.engines.base import Engine, fetch_record
from cohortsql.numeric.quantiles import interpolated_quantile, weighted_quantile
from cohortsql.request.features import LONG_TAILED_WINDOW, LOW_CARDINALITY, Feature, default_kind
from cohortsql.request.similarity import QuantileWindow
from cohortsql.run.table_statistics import TableStatistics

Part = TypeVar("Part")


EXACT_DISTINCT_BELOW = 1_000
"""Features without a kind whose estimated number of distinct values is at most this are counted
exactly (a small hash table); above it the estimate's error (about 2%) cannot reach `LOW_CARDINALITY`,
so the choice between `exact` and a window is the same as an exact count's, on every engine."""


def count_nonfinite_values(
    engine: Engine, relation: str, features: Sequence[Feature], statistics: TableStatistics
) -> None:
    """Each float feature's ``nan`` and ``infinite`` (those it needs), which the statistics pass counted
    together (`cohortsql.queries.statistics.NONFINITE`): 0 where that count is, else counted apart in one
    query of the features that have such values."""
    apart: dict[str, str] = {}
    for feature in features:
        own = statistics.features[feature.index]
        if queries.statistics.NONFINITE not in own:
            continue
        parts = queries.statistics.nonfinite_parts(feature, engine.dialect)
        if int(own.pop(queries.statistics.NONFINITE) or 0):
            apart |= {queries.statistics.statistic_alias(feature.index, name): sql for name, sql in parts.items()}
        else:
            own |= dict.fromkeys(parts, 0)
    if not apart:
        return
    row = fetch_record(
        engine,
        queries.statistics.table_statistics(relation, apart, engine.dialect),
        context="counting NaN and infinite values",
    )
    for alias, value in row.items():
        position, _, name = alias.partition(":")
        statistics.features[int(position)][name] = value


def count_distinct_values(
    engine: Engine, relation: str, features: Sequence[Feature], statistics: TableStatistics
) -> None:
    """Each defaulted numeric feature's ``distinct``: exact where the estimate is small, else the estimate."""
    few = {}
    for feature in features:
        own = statistics.features[feature.index]
        if "approx_distinct" in own:
            own["distinct"] = int(own["approx_distinct"] or 0)
            if own["distinct"] <= EXACT_DISTINCT_BELOW:
                few[str(feature.index)] = queries.statistics.statistic_value(feature, engine.dialect)
    if few:
        # Under a memory limit, one grouping a feature (which spills): a DISTINCT aggregate per feature in
        # one query holds a hash table each (30 of them failed at memory_limit='100MB' on 100 rows).
        counts = _in_parts(
            engine,
            few,
            lambda part: queries.statistics.distinct_counts(relation, part, engine.dialect),
            "counting distinct values",
        )
        for feature in features:
            if str(feature.index) in few:
                statistics.features[feature.index]["distinct"] = int(counts[str(feature.index)])


def measure_tails(
    engine: Engine, relation: str, features: Sequence[Feature], statistics: TableStatistics, weight: str | None
) -> None:
    """For each defaulted numeric feature with many values, the share of its values within the default
    window of their mean (``near_mean_share``, unweighted), which decides between `DEFAULT_WINDOW` and
    `LONG_TAILED_WINDOW`; the features that get the latter have its parameters put in place of the
    default's (exact quantiles, as an explicit ``quantile:0.1`` gets)."""
    windows = {}
    for feature in features:
        own = statistics.features[feature.index]
        if "approx_distinct" in own and own["distinct"] > LOW_CARDINALITY and not own.get("infinite"):
            # (infinite values take no window: `resolve_feature` refuses them, naming the feature)
            value = queries.statistics.statistic_value(feature, engine.dialect)
            shifted = queries.statistics.shifted_double(value, feature.values, own.get("min"), engine.dialect)
            windows[str(feature.index)] = (shifted, float(own["parameter:delta"] or 0.0))
    if not windows:
        return
    counts = _in_parts(
        engine,
        windows,
        lambda part: queries.statistics.near_mean_counts(relation, part, engine.dialect),
        "measuring the features' tails",
    )
    long_tailed = []
    for feature in features:
        if str(feature.index) in windows:
            own = statistics.features[feature.index]
            present = statistics.subjects - int(own["nulls"]) - int(own.get("nan") or 0)
            own["near_mean_share"] = int(counts[str(feature.index)]) / max(present, 1)
            if default_kind(feature, own)[0] == LONG_TAILED_WINDOW:
                long_tailed.append(replace(feature, kind=LONG_TAILED_WINDOW))
    if not long_tailed:
        return
    known = known_quantiles(engine, relation, tuple(long_tailed), weight)
    # count(*) makes the query one row when every quantile is already known (sorted) and the
    # parameters are constants
    aggregates = {"rows": "count(*)"} | {
        queries.statistics.statistic_alias(feature.index, name): sql
        for feature in long_tailed
        for name, sql in queries.statistics.parameter_aggregates(
            LONG_TAILED_WINDOW, feature, engine.dialect, known
        ).items()
    }
    row = fetch_record(
        engine,
        queries.statistics.table_statistics(relation, aggregates, engine.dialect),
        context="computing quantiles of long-tailed features",
    )
    for feature in long_tailed:
        prefix = queries.statistics.statistic_alias(feature.index, "")
        statistics.features[feature.index].update(
            {alias.removeprefix(prefix): value for alias, value in row.items() if alias.startswith(prefix)}
        )


def _in_parts(
    engine: Engine, columns: Mapping[str, Part], query: Callable[[dict[str, Part]], str], context: str
) -> Row:
    """The one-row result of `query` over `columns` (alias -> what it needs): one query for all of them,
    or under a memory limit one query per column, so that no query holds a table per feature at once."""
    parts = [{alias: part} for alias, part in columns.items()] if engine.memory_budget is not None else [dict(columns)]
    row: Row = {}
    for part in parts:
        row |= fetch_record(engine, query(part), context=context)
    return row


def known_quantiles(
    engine: Engine, relation: str, features: tuple[Feature, ...], weight: str | None
) -> dict[tuple[str, float], float | None]:
    """The quantile windows' quantiles, computed ahead of the statistics query where its exact quantile
    aggregate will not do: under a memory limit (a sort spills, the aggregate holds every value) and
    with case weights (weighted positions). Otherwise none: the aggregate computes them in place."""
    if engine.memory_budget is None and weight is None:
        return {}
    return sorted_quantiles(engine, relation, features, weight)


def sorted_quantiles(
    engine: Engine, source: str, features: tuple[Feature, ...], weight: str | None
) -> dict[tuple[str, float], float | None]:
    """The quantiles that quantile windows need, from order statistics (a sort spills; an exact
    quantile aggregate holds every value in memory and fails under a small memory limit). With case
    weights, a weight counts as that many repetitions of the row."""
    known: dict[tuple[str, float], float | None] = {}
    for feature in features:
        if not isinstance(feature.kind, QuantileWindow):
            continue
        value = queries.statistics.statistic_value(feature, engine.dialect)
        probabilities = (feature.kind.p, 1 - feature.kind.p)
        rows = engine.fetch_arrow(
            queries.statistics.order_statistics(source, value, probabilities, engine.dialect)
            if weight is None
            else queries.statistics.weighted_order_statistics(source, value, weight, probabilities, engine.dialect),
            context=f"sorting feature {feature.name!r} for its quantiles",
        ).to_pylist()
        for probability in probabilities:
            known[(value, probability)] = (
                interpolated_quantile(rows, probability) if weight is None else weighted_quantile(rows, probability)
            )
    return known
