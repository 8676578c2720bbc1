"""From the caller's arguments and the data's schema to a checked list of features.

`plan_features` validates names, kinds and column types before any data is read; `resolve_features`
turns the whole-table statistics into the final similarity kind of each feature (filling in defaults).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cohortsql.errors import CohortError
from cohortsql.similarity import Exact, RangeWindow, Similarity, Statistics, as_similarity

DEFAULT_WINDOW = RangeWindow(0.1)
"""Kind of a numeric feature with more than `LOW_CARDINALITY` distinct values when none is given."""

LOW_CARDINALITY = 10
"""A numeric feature given without a kind and with at most this many distinct values is `exact`."""

RESERVED_PREFIX = "__cohort_"

_NUMERIC_TYPE = re.compile(
    r"^(U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)|FLOAT|DOUBLE|REAL|DECIMAL(\(\d+,\s*\d+\))?|NUMERIC.*)$"
)

SimilarityArgument = Mapping[str, Similarity | str] | Sequence[str]


def is_numeric_type(duckdb_type: str) -> bool:
    """Whether a DuckDB column type holds numbers that windows can compare (BOOLEAN does not)."""
    return bool(_NUMERIC_TYPE.match(duckdb_type.upper()))


@dataclass(frozen=True)
class Feature:
    """One predictor as the caller asked for it: its column, its type and its kind (None: chosen from data)."""

    name: str
    column_type: str
    kind: Similarity | None
    column: str
    """The prepared copy's column in the subjects table (the data's own columns stay as they are)."""

    @property
    def as_double(self) -> bool:
        """Whether the predictor is stored as DOUBLE (windows, bins and numeric defaults)."""
        if self.kind is None:
            return is_numeric_type(self.column_type)
        return self.kind.numeric


@dataclass(frozen=True)
class ResolvedFeature:
    """A feature with its final kind and the whole-table statistics its predicate needs."""

    name: str
    kind: Similarity
    column: str
    statistics: Statistics = field(default_factory=dict)
    has_missing: bool = False
    as_double: bool = False
    """Whether the prepared copy is DOUBLE (see `Feature.as_double`)."""


def plan_features(
    columns: Mapping[str, str],
    similarity: SimilarityArgument,
    prediction: str,
    id: str | None,
) -> tuple[Feature, ...]:
    """Check the columns the caller named against the data's schema (name -> DuckDB type)."""
    _require_column(columns, prediction, "prediction")
    if not is_numeric_type(columns[prediction]) and columns[prediction].upper() != "BOOLEAN":
        raise CohortError(f"prediction column {prediction!r} has type {columns[prediction]}; it must be numeric")
    if id is not None:
        _require_column(columns, id, "id")
    for name in columns:
        if name.startswith(RESERVED_PREFIX):
            raise CohortError(f"column {name!r}: names starting with {RESERVED_PREFIX!r} are reserved; rename it")

    if isinstance(similarity, str):
        raise CohortError(
            f"similarity must be a mapping like {{'age': 'range:0.1'}} or a list of feature names, got the text {similarity!r}"
        )
    if isinstance(similarity, Mapping):
        requested = list(similarity.items())
    else:
        requested = [(name, None) for name in similarity]
    if not requested:
        raise CohortError("similarity names no features; give at least one predictor column")

    features = []
    seen = set()
    for name, kind in requested:
        if not isinstance(name, str):
            raise CohortError(f"feature names must be column names (text), got {name!r}")
        _require_column(columns, name, "feature")
        if name in seen:
            raise CohortError(f"feature {name!r} is listed twice")
        seen.add(name)
        column = f"{RESERVED_PREFIX}f{len(features)}"
        features.append(Feature(name, columns[name], _feature_kind(name, kind, columns[name]), column))
    return tuple(features)


def _feature_kind(name: str, kind: Similarity | str | None, column_type: str) -> Similarity | None:
    if kind is None:
        return None
    try:
        parsed = as_similarity(kind)
    except CohortError as error:
        raise CohortError(f"feature {name!r}: {error}") from None
    if parsed.numeric and not is_numeric_type(column_type):
        raise CohortError(
            f"feature {name!r} has type {column_type}, but similarity {parsed} needs a numeric column;"
            " use 'exact' or a sql: predicate"
        )
    return parsed


def _require_column(columns: Mapping[str, str], name: object, role: str) -> None:
    if not isinstance(name, str) or name not in columns:
        available = ", ".join(columns)
        raise CohortError(f"{role} column {name!r} is not in the data; its columns are: {available}")


def statistics_needed(feature: Feature, column: str) -> dict[str, str]:
    """Named SQL aggregates over the prepared column `column` that resolving `feature` needs."""
    needed = {"missing": f"count(*) FILTER (WHERE {column} IS NULL)"}
    if feature.as_double:
        needed["infinite"] = f"count(*) FILTER (WHERE isinf({column}))"
    if feature.kind is None:
        if feature.as_double:
            needed["distinct"] = f"count(DISTINCT {column})"
            needed.update(DEFAULT_WINDOW.statistics(column))
    else:
        needed.update(feature.kind.statistics(column))
    return needed


def resolve_feature(feature: Feature, statistics: Statistics) -> ResolvedFeature:
    """The feature's final kind, given the whole-table values of `statistics_needed`."""
    kind = feature.kind
    if kind is None:
        numeric = feature.as_double and statistics["distinct"] > LOW_CARDINALITY
        kind = DEFAULT_WINDOW if numeric else Exact()
    if kind.numeric and statistics.get("infinite"):
        raise CohortError(
            f"feature {feature.name!r} has {statistics['infinite']} infinite values;"
            f" similarity {kind} needs finite numbers (replace them, or use 'exact')"
        )
    return ResolvedFeature(
        feature.name, kind, feature.column, dict(statistics), bool(statistics["missing"]), feature.as_double
    )
