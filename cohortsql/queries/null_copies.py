"""The subjects with permuted copies of some predictors: the null reference's columns (see
``sql/permuted_copies.sql``). A copy keeps its predictor's values, and so its marginal distribution
and every whole-table parameter of its kind, but not their rows."""

from __future__ import annotations

from collections.abc import Sequence

from cohortsql.dialects import Dialect
from cohortsql.queries.templates import template
from cohortsql.request.features import ResolvedFeature


def permuted_copies(
    subjects: str, features: Sequence[ResolvedFeature], copies: int, seed: int, dialect: Dialect
) -> str:
    """SELECT every subject row with `copies` permuted copies of each of `features` (columns
    ``ResolvedFeature.copied(b).column`` for b = 1 .. `copies`), drawn with `seed`."""
    numbers = range(1, copies + 1)
    q = dialect.quote
    return template("permuted_copies").format(
        subjects=subjects,
        donor_columns=", ".join(f"donor.{q(feature.column)}" for feature in features),
        seed=dialect.string(f"{int(seed)}:null:"),
        text=dialect.text_type,
        copy_numbers=", ".join(f"({number})" for number in numbers),
        copy_columns=", ".join(
            f"copy{number}.{q(feature.column)} AS {q(feature.copied(number).column)}"
            for number in numbers
            for feature in features
        ),
        copy_joins="\n".join(
            f"LEFT JOIN drawn AS copy{number}"
            f" ON copy{number}.__cohort_copy = {number} AND copy{number}.__cohort_position = own.__cohort_position"
            for number in numbers
        ),
    )
