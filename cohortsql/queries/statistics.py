"""Whole-table statistics, computed once per call: the number of subjects, moments of each explained
column, checks on it, the ids and the weights, and the parameters data-dependent similarity kinds
need (window widths from ranges or quantiles, bin edges), in one pass; quantiles by a sort under a
memory limit. Deltas are computed over the whole table, never per target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cohortsql.dialects import Dialect
from cohortsql.queries.common import select_list
from cohortsql.queries.templates import template
from cohortsql.request.features import DEFAULT_WINDOW, NUMERIC_KINDS, ColumnKind, Feature, ResolvedFeature
from cohortsql.request.similarity import MICROS_PER_DAY, NO_QUANTILES, KnownQuantiles, Similarity


def bad_value(y: str, dialect: Dialect) -> str:
    """True for a NULL, NaN or infinite value of the explained column `y` (SQL)."""
    return f"NOT coalesce({dialect.is_finite(f'CAST({y} AS DOUBLE)')}, FALSE)"


def pilot(source: str, prediction: str, dialect: Dialect, *, exact: bool = False, largest: bool = True) -> str:
    """SELECT any one finite value of the explained column (see ``sql/pilot.sql``); an `exact` one
    (an integer column's) in the column's own type, not as DOUBLE. `largest`: beside it, the largest
    finite |y| (`largest_finite`) over every row, a second scan (on Spark a job of its own, 0.3 s of
    1,000,000 cached rows)."""
    value = dialect.quote(prediction)
    every_row = f"(SELECT {largest_finite(prediction, dialect)} FROM {source} AS every_row)"
    return template("pilot").format(
        source=source,
        value=value if exact else f"CAST({value} AS DOUBLE)",
        largest=f",\n    {every_row} AS largest" if largest else "",
        finite=dialect.is_finite(f"CAST({value} AS DOUBLE)"),
    )


def largest_finite(prediction: str, dialect: Dialect) -> str:
    """The aggregate of the explained column's largest finite |y| over the rows (NULL without one)."""
    value = f"CAST({dialect.quote(prediction)} AS DOUBLE)"
    return f"max(CASE WHEN {dialect.is_finite(value)} THEN abs({value}) END)"


def centred(prediction: str, pilot_value: float | int, dialect: Dialect) -> str:
    """The SQL of y - pilot as DOUBLE. An integer pilot (of an integer column) is subtracted exactly,
    in DECIMAL(38, 0), before the difference becomes a DOUBLE: y near 2^60 keeps its last digits."""
    value = dialect.quote(prediction)
    if isinstance(pilot_value, int):
        return f"CAST(CAST({value} AS DECIMAL(38, 0)) - {pilot_value} AS DOUBLE)"
    return f"CAST({value} AS DOUBLE) - {dialect.number(pilot_value)}"


def powered(value: str, power: int) -> str:
    """The SQL of `value` (a DOUBLE) to a whole `power` >= 1, as a product (every dialect has it)."""
    return value if power == 1 else " * ".join([f"({value})"] * power)


def largest_magnitude(value: str) -> str:
    """The aggregate of the largest |value| over the rows (`value`: the SQL of a DOUBLE)."""
    return f"max(abs({value}))"


def order_statistics(source: str, value: str, probabilities: Sequence[float], dialect: Dialect) -> str:
    """SELECT the ranks, values and count that linear-interpolated quantiles at `probabilities` need."""
    ranks = []
    for probability in probabilities:
        low = f"CAST(floor((n - 1) * {dialect.number(probability)}) AS BIGINT)"
        ranks.append(f"order_index = {low} OR order_index = {low} + 1")
    return template("order_statistics").format(value=value, source=source, ranks=" OR ".join(ranks))


def weighted_order_statistics(
    source: str, value: str, weight: str, probabilities: Sequence[float], dialect: Dialect
) -> str:
    """SELECT the rows holding the positions that quantiles at `probabilities` need when each row
    stands for `weight` repetitions (see ``sql/weighted_order_statistics.sql``)."""
    positions = []
    for probability in probabilities:
        low = f"floor((total - 1) * {dialect.number(probability)})"
        positions.append(f"(upto - weight <= {low} + 1 AND upto > {low})")
    return template("weighted_order_statistics").format(
        value=value, weight=dialect.quote(weight), source=source, positions=" OR ".join(positions)
    )


def statistic_alias(feature_index: int, name: str) -> str:
    """Column name, in the statistics row, of statistic `name` of feature number `feature_index`."""
    return f"{feature_index}:{name}"


COUNTED_STATISTICS = frozenset({"nulls", "levels", "nan", "infinite"})
"""A feature's statistics that are counts of its values (`feature_statistics`), which an engine whose rows
stream here may count outside SQL (`cohortsql.run.streamed_statistics`)."""


def statistics_aggregates(
    features: Sequence[Feature],
    outcomes: Sequence[str],
    id: str,
    centred_values: Sequence[str],
    weight: str | None,
    dialect: Dialect,
    *,
    check_ids: bool,
    duplicates_in_place: bool,
    distinct_rows: bool,
    known: KnownQuantiles = NO_QUANTILES,
    counted_apart: frozenset[int] = frozenset(),
) -> dict[str, str]:
    """The whole-table aggregates by name: n, moments of each y_k - pilot_k (`centred_values`, the SQL of
    each; see `centred`), checks, and each feature's needs.

    `id` is the SQL of each row's id (the id column, or the row position); `check_ids` counts missing
    ids and, when `duplicates_in_place`, repeated ones (an id column must identify rows; otherwise
    `duplicate_ids` counts them in a query of their own). With a `weight` column, the moments are its
    weighted sums (`weighted_moments` turns them into the mean and variance). The features numbered in
    `counted_apart` have their counts (`COUNTED_STATISTICS`) counted elsewhere
    (`cohortsql.run.streamed_statistics`): only their parameters are aggregated here."""
    aggregates = {"subjects": "count(*)"}
    weights = None if weight is None else f"CAST({dialect.quote(weight)} AS DOUBLE)"
    if weights is not None:
        aggregates["total_weight"] = f"sum({weights})"
    for index, (outcome, value) in enumerate(zip(outcomes, centred_values)):
        y = dialect.quote(outcome)
        bad_y = bad_value(y, dialect)
        centred = f"CASE WHEN {bad_y} THEN NULL ELSE {value} END"
        if weights is None:
            aggregates[f"mean:{index}"] = f"avg({centred})"
            aggregates[f"variance:{index}"] = f"var_pop({centred})"
        else:
            aggregates[f"weighted_sum:{index}"] = f"sum({weights} * {centred})"
            aggregates[f"weighted_squares:{index}"] = f"sum({weights} * {centred} * {centred})"
        aggregates[f"bad_predictions:{index}"] = f"count_if({bad_y})"
        aggregates[f"first_bad_prediction:{index}"] = f"min(CASE WHEN {bad_y} THEN {id} END)"
    if check_ids:
        aggregates["missing_ids"] = f"count_if({id} IS NULL)"
        if duplicates_in_place:
            aggregates["duplicate_ids"] = f"count({id}) - count(DISTINCT {id})"
    if distinct_rows:
        aggregates["distinct_rows"] = dialect.distinct_rows_estimate(
            [dialect.quote(feature.name) for feature in features]
        )
    for feature in features:
        column = dialect.quote(feature.name)
        needed = feature_statistics(feature, column, dialect, known)
        if feature.index in counted_apart:
            needed = {name: sql for name, sql in needed.items() if name not in COUNTED_STATISTICS}
        elif needed.keys() & NONFINITE_PARTS:
            needed = {name: sql for name, sql in needed.items() if name not in NONFINITE_PARTS}
            needed[NONFINITE] = f"count_if(NOT {dialect.is_finite(f'CAST({column} AS DOUBLE)')})"
        for name, sql in needed.items():
            aggregates[statistic_alias(feature.index, name)] = sql
    return aggregates


NONFINITE = "nonfinite"
"""A float feature's NaN and infinite values, counted together by the statistics pass
(`statistics_aggregates`): where there are none (most tables), its ``nan`` and ``infinite`` are 0 without
another aggregate; where there are, `nonfinite_parts` counts them apart in a query of their own. Spark
read 1,000,000 cached rows x 12 float columns in 0.63 s with two counts a column (missing; NaN or
infinite) against 0.84 s with three (missing, NaN, infinite), local[2], medians of 7 alternated."""

NONFINITE_PARTS = frozenset({"nan", "infinite"})
"""The statistics `NONFINITE` counts together."""


def nonfinite_parts(feature: Feature, dialect: Dialect) -> dict[str, str]:
    """The aggregates of `feature`'s ``nan`` and ``infinite`` (those of `NONFINITE_PARTS` it needs)."""
    needed = feature_statistics(feature, dialect.quote(feature.name), dialect)
    return {name: sql for name, sql in needed.items() if name in NONFINITE_PARTS}


def has_rows(source: str) -> str:
    """SELECT whether `source` has a row (1) or none (0), reading at most one."""
    return f"SELECT count(*) AS rows FROM (SELECT 1 FROM {source} LIMIT 1) AS first_row"


def duplicate_ids(source: str, id: str, dialect: Dialect, features: Sequence[Feature] = ()) -> str:
    """SELECT how many rows repeat another row's id, by grouping on the id, and with `features` the
    estimate of distinct rows (`Dialect.distinct_rows_estimate`) over one row per id: the same count
    when the ids are unique, and when they are not the call stops. Under a memory limit a grouped
    aggregate spills to disk, where a one-row ``count(DISTINCT id)`` may fail: on 4,000,000 distinct ids
    under memory_limit='40MB' (DuckDB 2.0.1), the distinct count failed in 5 of 8 runs beside the
    statistics query's other aggregates and the grouping in none. On Spark the estimate (a
    HyperLogLog, which Spark cannot compile with other aggregates) costs less here than among the
    statistics' aggregates: 0.82 s against 1.11 s for both queries on 1,000,000 rows, local[2]; Spark
    reads fixed-width ids of smaller tables into this process, and its executors count those of larger
    ones, instead (`ids_and_row_hashes`, `cohortsql.engines.spark_ids`)."""
    rows, row_hash = dialect.quote("rows"), dialect.quote("row_hash")
    distinct = f", {dialect.distinct_estimate(row_hash)} AS {dialect.quote('distinct_rows')}" if features else ""
    columns = [dialect.quote(feature.name) for feature in features]
    hashes = f", min({dialect.row_hash(columns)}) AS {row_hash}" if features else ""
    return (
        f"SELECT coalesce(sum({rows} - 1), 0) AS {dialect.quote('duplicate_ids')}{distinct}"
        f" FROM (SELECT count(*) AS {rows}{hashes} FROM {source} WHERE {id} IS NOT NULL GROUP BY {id}) AS by_id"
    )


def ids_and_row_hashes(source: str, id: str, dialect: Dialect, features: Sequence[Feature] = ()) -> str:
    """SELECT each row's id (rows without one left out) and, with `features`, a hash of its predictor
    values (`Dialect.row_hash`): what an engine that counts repeated ids and sketches the distinct
    rows outside SQL reads (`cohortsql.engines.spark_ids`)."""
    columns = [dialect.quote(feature.name) for feature in features]
    hashes = f", {dialect.row_hash(columns)} AS {dialect.quote('row_hash')}" if features else ""
    return f"SELECT {id} AS {dialect.quote('id')}{hashes} FROM {source} WHERE {id} IS NOT NULL"


WEIGHT_SCALE = 2.0**-1000
"""The weights' total is summed scaled by this power of two, so that no sum of finite weights overflows
(PostgreSQL stops an overflowing sum with an error; DuckDB gives infinity): the caller scales it back,
and a total beyond a DOUBLE reads as infinite everywhere."""


def weight_checks(source: str, weight: str, id: str, dialect: Dialect) -> str:
    """One row of checks on the case-weight column over every row (see ``sql/weight_checks.sql``)."""
    value = f"CAST({dialect.quote(weight)} AS DOUBLE)"
    bad = f"NOT coalesce({value} >= 0 AND {dialect.is_finite(value)}, FALSE)"
    scale = dialect.number(WEIGHT_SCALE)
    return template("weight_checks").format(bad=bad, id=id, weight=value, scale=scale, source=source)


def positive_weights(source: str, weight: str, dialect: Dialect) -> str:
    """SELECT the rows of positive case weight (see ``sql/positive_weights.sql``)."""
    return template("positive_weights").format(source=source, weight=dialect.quote(weight))


def table_statistics(source: str, aggregates: Mapping[str, str], dialect: Dialect) -> str:
    """One row of whole-table statistics (see ``sql/table_statistics.sql``)."""
    return template("table_statistics").format(source=source, aggregates=select_list(aggregates, dialect))


def feature_columns(source: str, names: Sequence[str], dialect: Dialect) -> str:
    """SELECT the columns `names` of `source` as they are."""
    return f"SELECT {', '.join(dialect.quote(name) for name in names)} FROM {source}"


def distinct_counts(source: str, columns: Mapping[str, str], dialect: Dialect) -> str:
    """SELECT the exact number of distinct values of each column (alias -> SQL of the column's values),
    for columns known to hold few of them; one column's by a grouping, which spills under a memory limit."""
    if len(columns) == 1:
        ((alias, value),) = columns.items()
        return f"SELECT count(v) AS {dialect.quote(alias)} FROM (SELECT {value} AS v FROM {source} GROUP BY 1) AS d"
    counts = {alias: f"count(DISTINCT {value})" for alias, value in columns.items()}
    return f"SELECT {select_list(counts, dialect)} FROM {source}"


def near_mean_counts(source: str, windows: Mapping[str, tuple[str, float]], dialect: Dialect) -> str:
    """SELECT, per alias, how many values of a column lie within `delta` of their mean (alias -> (SQL of
    the column's values as DOUBLE, shifted so that the cast keeps their differences; delta))."""
    counts = {}
    for alias, (value, delta) in windows.items():
        mean = f"(SELECT avg({value}) FROM {source})"
        counts[alias] = f"count_if(abs({value} - {mean}) <= {dialect.number(delta)})"
    return f"SELECT {select_list(counts, dialect)} FROM {source}"


def shifted_double(value: str, values: ColumnKind, minimum: object, dialect: Dialect) -> str:
    """A column's values as DOUBLE for measuring distances: integers less their minimum first, so that
    values near 2^60 keep their differences (a DOUBLE holds integers exactly only below 2^53)."""
    if values == "integer" and minimum is not None:
        return f"CAST({value} - {dialect.literal(minimum)} AS DOUBLE)"
    return f"CAST({value} AS DOUBLE)"


def literal_parameters(feature: ResolvedFeature, dialect: Dialect) -> dict[str, str]:
    """A feature's whole-table parameters as SQL literals."""
    return {name: dialect.parameter(value) for name, value in feature.parameters.items()}


def statistics_parameters(feature: ResolvedFeature, statistics: str, dialect: Dialect) -> dict[str, str]:
    """A feature's whole-table parameters as columns of the statistics row aliased `statistics`."""
    return {
        name: f"{statistics}.{dialect.quote(statistic_alias(feature.index, 'parameter:' + name))}"
        for name in feature.parameters
    }


def statistic_value(feature: Feature | ResolvedFeature, dialect: Dialect) -> str:
    """A column's values for whole-table parameters (ranges, quantiles, bins), in a type whose
    differences are exact: integers as DECIMAL(38, 0) (never a lossy DOUBLE: 40 distinct int64
    values near 2^60 would have one range), decimals as they are, floats with NaN read as NULL,
    dates as days and timestamps as microseconds. Parameters become DOUBLE only after the subtraction."""
    values, column = feature.values, dialect.quote(feature.name)
    if values == "date":
        return dialect.epoch_days(column)
    if values == "timestamp":
        return f"CAST({dialect.epoch_micros(column, time_zone=feature.time_zone)} AS DECIMAL(38, 0))"
    if values == "integer":
        return f"CAST({column} AS DECIMAL(38, 0))"
    if values == "float":
        return dialect.nan_as_null(column)
    return column


def parameter_aggregates(
    kind: Similarity, feature: Feature | ResolvedFeature, dialect: Dialect, known: KnownQuantiles = NO_QUANTILES
) -> dict[str, str]:
    """A kind's whole-table parameters as named aggregates over the feature's column."""
    value = statistic_value(feature, dialect)
    per_day = MICROS_PER_DAY if feature.values == "timestamp" else 1
    return {f"parameter:{name}": sql for name, sql in kind.parameters(value, dialect, known, per_day=per_day).items()}


def feature_statistics(
    feature: Feature, column: str, dialect: Dialect, known: KnownQuantiles = NO_QUANTILES
) -> dict[str, str]:
    """Named SQL aggregates over the data's `column` that resolving `feature` needs."""
    needed = {"nulls": f"count(*) - count({column})"}
    value = statistic_value(feature, dialect)
    if feature.values == "float":
        needed["nan"] = f"count_if({dialect.is_nan(column)})"
    if feature.values == "float" and feature.may_be_window:
        # NaN is not infinite on either engine: no need to read it as NULL first (30 ms on 2,000,000 x 12 floats)
        needed["infinite"] = f"count_if(abs(CAST({column} AS DOUBLE)) = CAST('Infinity' AS DOUBLE))"
    if feature.values == "integer" and feature.may_be_window:
        needed["min"] = f"min({column})"
        needed["max"] = f"max({column})"
    if feature.kind is None:
        if feature.values in ("integer", "float", "decimal"):
            # An estimate in fixed memory (an exact count of 2,000,000 distinct floats held a hash table
            # that does not spill); where it is small, `distinct_counts` counts exactly.
            needed["approx_distinct"] = dialect.distinct_estimate(value)
        if feature.values in NUMERIC_KINDS:
            needed.update(parameter_aggregates(DEFAULT_WINDOW, feature, dialect, known))
    else:
        needed.update(parameter_aggregates(feature.kind, feature, dialect, known))
    if not feature.may_be_window or feature.kind is None:
        needed["levels"] = dialect.distinct_estimate(column)
    return needed
