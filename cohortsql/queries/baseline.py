"""The SQL of baseline Shapley: the mean baseline point, and the subject rows and bitsets that decide
whether a hybrid point is realistic (paper, Appendix 4).
"""

from __future__ import annotations

from collections.abc import Sequence

from cohortsql.dialects import Dialect
from cohortsql.queries.histogram import similarity_test
from cohortsql.queries.statistics import literal_parameters
from cohortsql.queries.subjects import prepared_value
from cohortsql.queries.templates import template
from cohortsql.request.features import ResolvedFeature

MEAN_BASELINE_VALUES = ("float", "integer", "decimal")
"""Column kinds whose mean baseline is their mean; every other predictor takes its most frequent value."""


def baseline_point(source: str, features: Sequence[ResolvedFeature], dialect: Dialect) -> str:
    """SELECT the mean baseline over relation `source`: one column per feature under its own name (the
    mean, or the most frequent value, ties to the smallest) and the same point as the similarity tests
    compare it, under each feature's prepared column name."""
    means, values, prepared = [], [], []
    for feature in features:
        name = dialect.quote(feature.name)
        if feature.values in MEAN_BASELINE_VALUES:
            means.append(f"avg(CAST({prepared_value(feature, dialect)} AS DOUBLE)) AS {name}")
            values.append(name)
            prepared.append(f"{name} AS {dialect.quote(feature.column)}")
        else:
            mode = template("most_frequent").format(column=name, source=source)
            values.append(f"({mode}) AS {name}")
            prepared.append(f"{prepared_value(feature, dialect)} AS {dialect.quote(feature.column)}")
    return template("baseline_point").format(
        means="".join(f",\n        {mean}" for mean in means),
        source=source,
        values=",\n        ".join(values),
        prepared=", ".join(prepared),
    )


def subject_rows(subjects: str, features: Sequence[ResolvedFeature], dialect: Dialect, *, distinct: bool) -> str:
    """SELECT the (`distinct`) rows of the subjects' prepared predictors, numbered (see ``sql/subject_rows.sql``)."""
    columns = ", ".join(dialect.quote(feature.column) for feature in features)
    return template("subject_rows").format(
        columns=columns,
        numbers=dialect.stable_row_number(columns),
        distinct="DISTINCT " if distinct else "",
        subjects=subjects,
    )


def similar_words(points: str, subject_rows: str, feature: ResolvedFeature, dialect: Dialect, *, word_bits: int) -> str:
    """SELECT the bitset words of the subject rows similar to each point value on `feature`
    (see ``sql/similar_words.sql``)."""
    test = similarity_test(feature, literal_parameters(feature, dialect), dialect)
    return template("similar_words").format(points=points, subject_rows=subject_rows, test=test, word_bits=word_bits)
