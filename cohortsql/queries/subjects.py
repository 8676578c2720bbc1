"""The subjects relation: every input row with its id, its explained values (minus a pilot value),
its case weight, whether it is a target, and each predictor as the similarity tests compare it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cohortsql.dialects import Dialect
from cohortsql.queries.templates import template
from cohortsql.request.features import ResolvedFeature


def prepared_value(feature: ResolvedFeature, dialect: Dialect) -> str:
    """The feature's column as the similarity tests compare it (see `cohortsql.request.features.Representation`)."""
    column = dialect.quote(feature.name)
    if feature.representation == "float":
        return dialect.nan_as_null(column)
    if feature.representation == "double":
        return f"CAST({column} AS DOUBLE)"
    if feature.representation == "bigint":
        return f"CAST({column} AS BIGINT)"
    if feature.representation == "decimal":
        return f"CAST({column} AS DECIMAL(38, 0))"
    if feature.representation == "days":
        return dialect.epoch_days(column)
    if feature.representation == "micros":
        return dialect.epoch_micros(column, time_zone=feature.time_zone)
    return column


def is_plain(feature: ResolvedFeature, dialect: Dialect) -> bool:
    """Whether the feature's prepared value is its data column as it is: integers, text, booleans as they
    are, and a cast to the column's own type (a DOUBLE column without NaN, a BIGINT one)."""
    return feature.of_its_own_type or prepared_value(feature, dialect) == dialect.quote(feature.name)


def subject_fields(
    features: Sequence[ResolvedFeature],
    id: str,
    target_predicate: str | None,
    keep_data_columns: bool,
    dialect: Dialect,
    *,
    plain_from_data: bool = False,
) -> dict[str, str]:
    """The template fields that define a subject row: id, target flag, prepared predictors.
    `plain_from_data` (with `keep_data_columns`): the predictors that are a data column as it is
    (`is_plain`) are not selected a second time; the reader copies them from the data's columns."""
    assert keep_data_columns or not plain_from_data
    selected = [feature for feature in features if not (plain_from_data and is_plain(feature, dialect))]
    return dict(
        id=id,
        is_target="TRUE" if target_predicate is None else f"coalesce(({target_predicate}), FALSE)",
        predictors="".join(
            f",\n    {prepared_value(feature, dialect)} AS {dialect.quote(feature.column)}" for feature in selected
        ),
        data_columns=",\n    *" if keep_data_columns else "",
    )


def explained_values(centred_values: Sequence[str], weight: str | None, dialect: Dialect) -> dict[str, str]:
    """Each explained column minus its pilot value as DOUBLE (``__cohort_y0``, ``__cohort_y1``, ...;
    `cohortsql.queries.statistics.centred`), and the case weight (``__cohort_weight``) when the rows
    are weighted."""
    values = {f"__cohort_y{index}": value for index, value in enumerate(centred_values)}
    if weight is not None:
        values["__cohort_weight"] = f"CAST({dialect.quote(weight)} AS DOUBLE)"
    return values


def subjects(
    source: str,
    features: Sequence[ResolvedFeature],
    values: Mapping[str, str],
    id: str,
    target_predicate: str | None,
    keep_data_columns: bool,
    dialect: Dialect,
    *,
    plain_from_data: bool = False,
) -> str:
    """SELECT the subjects from `source` (see ``sql/subjects.sql``) with the columns `values` (name ->
    SQL; `explained_values`); `id` is the SQL of each row's id. `plain_from_data`: see `subject_fields`."""
    return template("subjects").format(
        source=source,
        values="".join(f"{sql} AS {name},\n    " for name, sql in values.items()),
        **subject_fields(features, id, target_predicate, keep_data_columns, dialect, plain_from_data=plain_from_data),
    )
