"""From the caller's arguments and the data's schema to a checked list of features.

`plan_features` validates names, kinds and column types (Arrow types, whatever the engine) before
any data is read; `feature_statistics` names the whole-table aggregates each feature needs; and
`resolve_feature` turns their values into the final similarity kind of each feature (filling in
defaults), its parameters and how its values are represented in SQL.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import pyarrow as pa

from cohortsql._typing import EVERY_OTHER, Row
from cohortsql.errors import CohortError, warn
from cohortsql.request.similarity import (
    AbsoluteWindow,
    Exact,
    QuantileWindow,
    RangeWindow,
    Similarity,
    SimilarityArgument,
    SqlPredicate,
)
from cohortsql.request.similarity_text import as_similarity

DEFAULT_WINDOW = RangeWindow(0.1)
"""Kind of a numeric, date or timestamp feature given without one (numbers: when they have more than
`LOW_CARDINALITY` distinct values, unless `LONG_TAILED_WINDOW` applies)."""

LONG_TAILED_WINDOW = QuantileWindow(0.1)
"""Kind of a numeric feature given without one whose `DEFAULT_WINDOW` would keep more than
`NEAR_MEAN_SHARE` of its values around its mean: a long tail stretches its range, so a share of the
range is wide where the data are dense (a lognormal income driving a score got 1.3% of the effects
under range:0.1 and 12.9% under quantile:0.1, the paper's choice for Boston)."""

NEAR_MEAN_SHARE = 0.8
"""Above this share of a numeric feature's values within `DEFAULT_WINDOW` of its mean, its default is
`LONG_TAILED_WINDOW` (measured on 200,000 draws: uniform 20%, normal 62%, lognormal 99%)."""

LOW_CARDINALITY = 10
"""A numeric feature given without a kind and with at most this many distinct values is `exact`."""

MANY_LEVELS = 50
"""An `exact` feature with more levels than this (or than `MANY_LEVELS_SHARE` of the rows) gets a warning."""

MANY_LEVELS_SHARE = 0.05

ID_LIKE_SHARE = 0.95
"""An `exact` feature with (about) this share of rows distinct is treated as an id-like column."""

RESERVED_PREFIX = "__cohort_"


ColumnKind = Literal["integer", "float", "decimal", "boolean", "text", "date", "timestamp"]

Representation = Literal["native", "float", "double", "bigint", "decimal", "days", "micros"]
"""How a feature's values appear in the subjects relation: as they are; floats as DOUBLE with NaN read
as NULL (``float``), or as DOUBLE alone when the data hold no NaN (``double``: nothing to replace,
which spares an expression per subject and batch); integers widened to BIGINT (or DECIMAL(38, 0)
when their range could overflow BIGINT in a subtraction); dates as days and timestamps as microseconds
since 1970-01-01 (integers: differences exact)."""

OWN_TYPES = frozenset({("double", "double"), ("bigint", "int64")})
"""(representation, Arrow type) of a column that its representation casts to its own type."""

NUMERIC_KINDS: tuple[ColumnKind, ...] = ("integer", "float", "decimal", "date", "timestamp")
_SAFE_BIGINT = 2**62
"""Integers within (-2^62, 2^62) subtract without overflowing BIGINT."""


_ARROW_KINDS: tuple[tuple[Callable[[pa.DataType], bool], ColumnKind], ...] = (
    (pa.types.is_boolean, "boolean"),
    (pa.types.is_integer, "integer"),
    (pa.types.is_floating, "float"),
    (pa.types.is_decimal, "decimal"),
    (pa.types.is_date, "date"),
    (pa.types.is_timestamp, "timestamp"),
    (pa.types.is_string, "text"),
    (pa.types.is_large_string, "text"),
    (pa.types.is_string_view, "text"),
)
"""Each Arrow type test and the kind of values it finds."""


def column_kind(dtype: pa.DataType) -> ColumnKind | None:
    """The kind of values an Arrow type holds, or None for types cohortsql cannot compare."""
    if pa.types.is_dictionary(dtype):
        return column_kind(dtype.value_type)
    return next((kind for test, kind in _ARROW_KINDS if test(dtype)), None)


def is_numeric(dtype: pa.DataType) -> bool:
    """Whether an Arrow type holds numbers (BOOLEAN does not) that can be explained or averaged."""
    return column_kind(dtype) in ("integer", "float", "decimal")


@dataclass(frozen=True)
class Feature:
    """One predictor as the caller asked for it: its column, its kind of values and its similarity (None: default)."""

    name: str
    index: int
    values: ColumnKind
    dtype: str
    kind: Similarity | None

    @property
    def column(self) -> str:
        """Its column in the subjects relation (the data's own columns stay as they are)."""
        return f"{RESERVED_PREFIX}f{self.index}"

    @property
    def time_zone(self) -> bool:
        """Whether its values are timestamps with a time zone (instants)."""
        return self.values == "timestamp" and ", tz=" in self.dtype

    @property
    def may_be_window(self) -> bool:
        """Whether a numeric kind may apply: given as one, or a default for numbers, dates and timestamps."""
        return self.kind.numeric if self.kind is not None else self.values in NUMERIC_KINDS


@dataclass(frozen=True)
class ResolvedFeature:
    """A feature with its final kind, its whole-table parameters and its SQL representation."""

    name: str
    index: int
    values: ColumnKind
    kind: Similarity
    representation: Representation
    parameters: Row = field(default_factory=dict)
    """Whole-table parameters: numbers (DOUBLE), or an edge in the column's own type (int, Decimal)."""
    has_missing: bool = False
    levels: int | None = None
    """Distinct non-missing values (estimated), when known."""
    reason: str | None = None
    """Why the feature got its kind when the caller gave none (None when the caller chose it)."""
    time_zone: bool = False
    """Whether its values are timestamps with a time zone (instants)."""
    of_its_own_type: bool = False
    """Whether its column already has the type of its representation (``double`` of a DOUBLE column,
    ``bigint`` of a BIGINT one): its subject column is then the data column as it is."""
    copy: int = 0
    """0 for the feature itself; b >= 1 for its b-th permuted copy (the null reference), which reads the
    same kind and parameters from a column of its own."""

    @property
    def column(self) -> str:
        return f"{RESERVED_PREFIX}f{self.index}" + (f"_copy{self.copy}" if self.copy else "")

    def copied(self, copy: int) -> ResolvedFeature:
        """This feature's `copy`-th permuted copy: the same name, kind, parameters and representation."""
        return replace(self, copy=copy)


def _refuse_case_twins(names: Sequence[str]) -> None:
    """Refuse columns whose names differ only in case: DuckDB and Spark resolve names without regard to
    case, so a query reads one for the other (the effect of ``a`` came out as that of ``A``) and the
    target rows come back with one name twice."""
    seen: dict[str, str] = {}
    for name in names:
        twin = seen.setdefault(name.lower(), name)
        if twin != name:
            raise CohortError(
                f"columns {twin!r} and {name!r} differ only in case, which SQL engines do not tell apart:"
                " rename one (or leave one out of the data)"
            )


def plan_features(
    schema: pa.Schema,
    similarity: SimilarityArgument,
    outcomes: Sequence[str],
    id: str | None,
    weight: str | None = None,
) -> tuple[Feature, ...]:
    """Check the columns the caller named against the data's schema: the explained columns
    (`outcomes`), the id and case-weight columns, and the features."""
    _refuse_case_twins(schema.names)
    columns = {name: schema.field(name).type for name in schema.names}
    for prediction in outcomes:
        require_column(columns, prediction, "prediction")
        prediction_type = columns[prediction]
        if not is_numeric(prediction_type) and not pa.types.is_boolean(prediction_type):
            raise CohortError(
                f"prediction column {prediction!r} holds {described_type(prediction_type)}; it must be numeric"
            )
    repeated = sorted({name for name in outcomes if list(outcomes).count(name) > 1})
    if repeated:
        raise CohortError(f"prediction column {repeated[0]!r} is listed twice")
    if weight is not None:
        require_column(columns, weight, "weight")
        if not is_numeric(columns[weight]):
            raise CohortError(
                f"weight column {weight!r} holds {described_type(columns[weight])}; weights must be numbers"
            )
        if weight in outcomes or weight == id:
            role = "the id column" if weight == id else "explained (a prediction)"
            raise CohortError(f"weight column {weight!r} is {role}; weigh the rows with a column of its own")
    if id is not None:
        require_column(columns, id, "id")
        if column_kind(columns[id]) is None or column_kind(columns[id]) == "float":
            raise CohortError(
                f"id column {id!r} holds {described_type(columns[id])}; ids must be integers, text, decimals, dates"
                " or timestamps"
            )
    for name in columns:
        if name.startswith(RESERVED_PREFIX):
            raise CohortError(f"column {name!r}: names starting with {RESERVED_PREFIX!r} are reserved; rename it")

    others = [name for name in schema.names if name not in {*outcomes, id, weight}]
    requested = _requested(similarity, others)
    features: list[Feature] = []
    listed: set[str] = set()
    for name, kind in requested:
        if not isinstance(name, str):
            raise CohortError(f"feature names must be column names (text), got {name!r}")
        require_column(columns, name, "feature")
        if name in listed:
            raise CohortError(f"feature {name!r} is listed twice")
        listed.add(name)
        if name in outcomes:
            raise CohortError(f"feature {name!r} is the column being explained; a prediction cannot explain itself")
        if name == weight:
            raise CohortError(f"feature {name!r} is the weight column; weights weigh rows and explain nothing")
        if name == id:
            raise CohortError(
                f"feature {name!r} is the id column; ids identify rows and explain nothing (drop it from the features)"
            )
        values = column_kind(columns[name])
        if values is None:
            raise CohortError(
                f"feature {name!r} holds {described_type(columns[name])}, which cohortsql cannot compare;"
                " use a column of numbers, text, booleans, dates or timestamps"
            )
        features.append(Feature(name, len(features), values, str(columns[name]), _feature_kind(name, kind, values)))
    return tuple(features)


def _requested(similarity: SimilarityArgument, others: Sequence[str]) -> list[tuple[Any, Similarity | str | None]]:
    """(feature, kind) pairs of the caller's `similarity`; ``"all"`` and the key ``"*"`` stand for the
    columns in `others` (every column but the explained ones, the id and the weight) not named."""
    if similarity == "all":
        similarity = {EVERY_OTHER: None}
    if isinstance(similarity, str) or similarity is None:
        raise CohortError(
            "similarity must be a mapping like {'age': 'range:0.1'}, a list of feature names or 'all',"
            f" got {similarity!r}"
        )
    if isinstance(similarity, Mapping):
        requested = list(similarity.items())
    elif isinstance(similarity, Sequence):
        requested = [(name, None) for name in similarity]
    else:
        raise CohortError(f"similarity must be a mapping or a list of feature names, got {type(similarity).__name__}")
    named = {name for name, _ in requested if name != EVERY_OTHER}
    expanded = []
    for name, kind in requested:
        if name == EVERY_OTHER:
            rest = [(other, kind) for other in others if other not in named and not other.startswith(RESERVED_PREFIX)]
            if not rest:
                raise CohortError("similarity '*' (every other column) adds no columns: the data has none left")
            expanded += rest
        else:
            expanded.append((name, kind))
    if not expanded:
        raise CohortError("similarity names no features; give at least one predictor column")
    return expanded


def _feature_kind(name: str, kind: Similarity | str | None, values: ColumnKind) -> Similarity | None:
    if kind is None:
        return None
    try:
        parsed = as_similarity(kind)
    except CohortError as error:
        raise CohortError(f"feature {name!r}: {error}") from None
    if parsed.numeric and values not in NUMERIC_KINDS:
        raise CohortError(
            f"feature {name!r} holds {values} values, but similarity {parsed} needs numbers, dates or"
            " timestamps; use 'exact' or a sql: predicate"
        )
    if isinstance(parsed, AbsoluteWindow) and parsed.unit is not None and values not in ("date", "timestamp"):
        raise CohortError(f"feature {name!r}: the duration in {parsed} needs a date or timestamp column")
    return parsed


def described_type(dtype: pa.DataType) -> str:
    """An Arrow type in words, e.g. 'text values' or 'values of type list<item: int64>'."""
    kind = column_kind(dtype)
    return f"{kind} values" if kind is not None else f"values of type {dtype}"


COLUMNS_LISTED = 20
"""At most this many of the data's columns are listed when a name is not one of them (a 2,000-column
table printed every name: a 31 KB message)."""


def require_column(columns: Mapping[str, pa.DataType], name: object, role: str) -> None:
    """A `CohortError` naming the `role` column when `name` is not one of `columns`: the closest names
    first ("did you mean"), else the first `COLUMNS_LISTED` of them and how many more."""
    if isinstance(name, str) and name in columns:
        return
    names = list(columns)
    close = difflib.get_close_matches(str(name), names, n=3) if isinstance(name, str) else []
    if close:
        raise CohortError(
            f"{role} column {name!r} is not in the data; did you mean {' or '.join(map(repr, close))}?"
            f" ({len(names):,} columns)"
        )
    shown = ", ".join(map(repr, names[:COLUMNS_LISTED]))
    more = f" and {len(names) - COLUMNS_LISTED:,} more" if len(names) > COLUMNS_LISTED else ""
    raise CohortError(f"{role} column {name!r} is not in the data; its columns are: {shown}{more}")


def default_kind(feature: Feature, statistics: Row) -> tuple[Similarity, str]:
    """The kind of a feature given without one, and why, from `feature_statistics` (with ``distinct``,
    and ``near_mean_share`` for numbers with many values): `exact` for text, booleans and numbers with at
    most `LOW_CARDINALITY` values; `LONG_TAILED_WINDOW` for numbers with most values near their mean;
    `DEFAULT_WINDOW` for other numbers, dates and timestamps."""
    numbers = feature.values in ("integer", "float", "decimal")
    if feature.values in ("date", "timestamp"):
        return DEFAULT_WINDOW, f"{feature.values}s"
    if not numbers:
        return Exact(), f"{feature.values} values"
    distinct = statistics["distinct"]
    if distinct <= LOW_CARDINALITY:
        return Exact(), f"{distinct} distinct values"
    share = statistics.get("near_mean_share")
    if share is not None and share > NEAR_MEAN_SHARE:
        return LONG_TAILED_WINDOW, f"long-tailed: {DEFAULT_WINDOW} would keep {share:.0%} of its values around the mean"
    kept = "" if share is None else f", keeping {share:.0%} of its values around the mean"
    return DEFAULT_WINDOW, f"{distinct:,} distinct values{kept}"


def resolve_feature(feature: Feature, statistics: Row, rows: int) -> ResolvedFeature:
    """The feature's final kind and representation, given the values of `feature_statistics` (for a
    feature without a kind, those of its `default_kind`'s parameters)."""
    kind, reason = (feature.kind, None) if feature.kind is not None else default_kind(feature, statistics)
    if kind.numeric and statistics.get("infinite"):
        count = int(statistics["infinite"])
        given = f"similarity {kind}" if feature.kind is not None else f"its default similarity {kind} ({reason})"
        raise CohortError(
            f"feature {feature.name!r} has {count} infinite value{'' if count == 1 else 's'}; {given} needs finite"
            " numbers (replace them, or give it 'exact')"
        )
    levels = statistics.get("distinct", statistics.get("levels"))
    if isinstance(kind, Exact):
        _warn_about_levels(feature, levels, rows)
    parameters = {
        name.removeprefix("parameter:"): value for name, value in statistics.items() if name.startswith("parameter:")
    }
    overflowing = [name for name, value in parameters.items() if isinstance(value, float) and math.isinf(value)]
    if kind.numeric and overflowing:
        raise CohortError(
            f"feature {feature.name!r}: similarity {kind} makes a {overflowing[0]} beyond the largest number"
            " (a DOUBLE overflows): choose a smaller parameter, or rescale the column"
        )
    representation = _representation(feature, kind, statistics)
    return ResolvedFeature(
        name=feature.name,
        index=feature.index,
        values=feature.values,
        kind=kind,
        representation=representation,
        parameters=parameters if kind.numeric else {},
        has_missing=bool(statistics["nulls"] or statistics.get("nan")),
        levels=None if levels is None else int(levels),
        reason=reason,
        time_zone=feature.time_zone,
        of_its_own_type=(representation, feature.dtype) in OWN_TYPES,
    )


def portable(feature: ResolvedFeature) -> ResolvedFeature:
    """The feature as SQL printed for later runs reads it: NaN read as NULL and missing values similar
    to missing ones even when this data holds neither (``double`` and `has_missing` are facts about
    this data only)."""
    representation = "float" if feature.representation == "double" else feature.representation
    own = feature.of_its_own_type and representation == feature.representation
    return replace(feature, representation=representation, has_missing=True, of_its_own_type=own)


def _representation(feature: Feature, kind: Similarity, statistics: Row) -> Representation:
    if feature.values == "float":
        return "float" if statistics["nan"] else "double"
    if not kind.numeric or isinstance(kind, SqlPredicate):
        return "native"
    if feature.values == "date":
        return "days"
    if feature.values == "timestamp":
        return "micros"
    if feature.values == "integer":
        low, high = statistics.get("min"), statistics.get("max")
        fits = low is None or high is None or (-_SAFE_BIGINT < int(low) and int(high) < _SAFE_BIGINT)
        return "bigint" if fits else "decimal"
    return "native"


def _warn_about_levels(feature: Feature, levels: int | None, rows: int) -> None:
    """Warn about an `exact` feature whose cohorts will be tiny (levels are estimated: allow for that),
    with advice that fits its values: a window or bins for numbers, a coarser key for text."""
    if levels is None or levels <= LOW_CARDINALITY:
        return
    name = feature.name
    if feature.values in NUMERIC_KINDS:
        advice = "give it a window (range:0.1) or bins (bins:10)"
    elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        advice = f"compare a coarser key of it with a sql: kind, e.g. sql:left(s.{name}, 3) = left(t.{name}, 3)"
    else:
        advice = "compare a coarser key of it with a sql: kind"
    if levels >= ID_LIKE_SHARE * rows:
        warn(
            f"feature {name!r} has a different value on every row (like an id) and is compared with 'exact':"
            f" every cohort on it is one row; {advice}, or drop it"
        )
    elif levels > MANY_LEVELS or levels > MANY_LEVELS_SHARE * rows:
        warn(
            f"feature {name!r} has about {levels:,} distinct values and is compared with 'exact': its cohorts"
            f" are small; "
            + (f"if its values are ordered, {advice}" if feature.values in NUMERIC_KINDS else f"{advice}, or drop it")
        )
