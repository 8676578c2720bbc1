"""Equivalence keys and the cells of equivalence similarities (exact, bins): the grouping-sets path,
where every cohort is a GROUP BY cell and no target is joined with subjects (docs/design.md §2).
"""

from __future__ import annotations

from collections.abc import Sequence

from cohortsql.dialects import Dialect
from cohortsql.queries.common import SUBJECT_ALIAS, TARGET_ALIAS, ordinals
from cohortsql.queries.measures import draw_hash, measure_sums, replicate_measures
from cohortsql.queries.statistics import literal_parameters
from cohortsql.queries.templates import template
from cohortsql.request.features import ResolvedFeature
from cohortsql.request.measures import Measures
from cohortsql.request.similarity import Bins, Exact, ParameterSql


def equivalence_key(feature: ResolvedFeature, alias: str, parameters: ParameterSql, dialect: Dialect) -> str:
    """SQL of the equivalence class of the feature's value in row `alias` (exact and bins only)."""
    kind = feature.kind
    if not isinstance(kind, (Exact, Bins)):
        raise TypeError(f"{kind} is not an equivalence")
    return kind.key(f"{alias}.{dialect.quote(feature.column)}", parameters)


def key_columns(
    features: Sequence[ResolvedFeature],
    alias: str,
    dialect: Dialect,
    parameters: Sequence[ParameterSql] | None = None,
) -> str:
    """The equivalence keys ``k<j>`` of row `alias`; the features' whole-table `parameters` (bin edges)
    are literals unless given."""
    if parameters is None:
        parameters = [literal_parameters(feature, dialect) for feature in features]
    return ",\n    ".join(
        f"{equivalence_key(feature, alias, values, dialect)} AS k{feature.index}"
        for feature, values in zip(features, parameters)
    )


def equivalence_cells(
    subjects: str,
    features: Sequence[ResolvedFeature],
    measures: Measures,
    dialect: Dialect,
    *,
    parameters: Sequence[ParameterSql] | None = None,
    carried: Sequence[str] = (),
) -> str:
    """SELECT the finest cells of equivalence similarities: keys k0.. and the sums of `measures` over the
    subjects (without bootstrap replicates; see `replicate_cells`), grouped also by the subjects'
    `carried` columns, which come first (the self-contained query keeps each target a row of its own)."""
    return template("equivalence_cells").format(
        carried="".join(f"{SUBJECT_ALIAS}.{column},\n    " for column in carried),
        keys=key_columns(features, SUBJECT_ALIAS, dialect, parameters),
        sums=measure_sums(measures, "subjects"),
        subjects=subjects,
        ordinals=ordinals(len(carried) + len(features)),
    )


def replicate_cells(
    subjects: str, features: Sequence[ResolvedFeature], measures: Measures, groups: str, dialect: Dialect
) -> str:
    """SELECT the finest cells under every bootstrap replicate, one row per cell and hash group (the
    ``__cohort_group`` column of relation `groups`): see ``sql/replicate_cells.sql``."""
    sums = [f"sum({sql}) AS {name}" for name, sql in replicate_measures(measures, dialect).items()]
    return template("replicate_cells").format(
        keys=key_columns(features, SUBJECT_ALIAS, dialect),
        sums=",\n    ".join(sums),
        hash=draw_hash("g.__cohort_group", measures.seed, dialect),
        subjects=subjects,
        groups=groups,
        ordinals=ordinals(len(features) + 1),
    )


def target_keys(targets: str, features: Sequence[ResolvedFeature], dialect: Dialect) -> str:
    """SELECT the equivalence keys k0.. of every target of a batch, in batch order."""
    return template("target_keys").format(keys=key_columns(features, TARGET_ALIAS, dialect), targets=targets)


def values_by_cell(targets: str, values: str, features: Sequence[ResolvedFeature], dialect: Dialect) -> str:
    """SELECT ``id, feature, shapley, shapley_squared`` of every target of relation `targets` from the
    relation `values` of each cell's values (its keys ``k<j>`` and those columns): see
    ``sql/values_by_cell.sql``."""
    matches = " AND ".join(f"t.k{feature.index} IS NOT DISTINCT FROM v.k{feature.index}" for feature in features)
    return template("values_by_cell").format(
        keys=key_columns(features, TARGET_ALIAS, dialect), targets=targets, values=values, matches=matches
    )
