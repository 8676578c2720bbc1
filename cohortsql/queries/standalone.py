"""The self-contained query `cohortsql sql` prints: the same steps as the library's, statistics
included, in one statement to run where the data live.
"""

from __future__ import annotations

from collections.abc import Sequence

from cohortsql.queries.cells import key_columns
from cohortsql.queries.common import SUBJECT_ALIAS, ordinals, select_list
from cohortsql.queries.histogram import aliased_masks, mask_words
from cohortsql.queries.statistics import parameter_aggregates, statistic_alias, statistics_parameters
from cohortsql.queries.subjects import subject_fields
from cohortsql.spec.features import ResolvedFeature
from cohortsql.spec.similarity import SqlPredicate
from cohortsql.sql.dialects import Dialect
from cohortsql.sql.text import template


def standalone(
    source: str,
    resolved: Sequence[ResolvedFeature],
    prediction: str,
    id: str,
    target_predicate: str | None,
    condition: str,
    dialect: Dialect,
    *,
    variant: str,
    position_note: str,
) -> str:
    """One query computing its own statistics and then the mask histogram (``histogram``, or
    ``collapsed`` when identical subjects are merged first) or the equivalence cells (``cells``).

    `target_predicate` is the caller's predicate (it sets ``__cohort_target``); `condition` says which
    subjects are targets, over the subjects' columns."""
    aggregates = {
        "mean": f"avg(CAST({dialect.quote(prediction)} AS DOUBLE))",
        **{
            statistic_alias(feature.index, name): sql
            for feature in resolved
            for name, sql in parameter_aggregates(
                feature.kind, feature.values, dialect.quote(feature.name), dialect
            ).items()
        },
    }
    custom = any(isinstance(feature.kind, SqlPredicate) for feature in resolved)
    fields = dict(
        feature_list=", ".join(feature.name for feature in resolved),
        position_note=position_note,
        aggregates=select_list(aggregates, dialect),
        source=source,
        condition=condition,
        prediction=dialect.quote(prediction),
        **subject_fields(resolved, id, target_predicate, custom and variant == "histogram", dialect),
    )
    if variant == "cells":
        return template("standalone_cells", keep_comments=True).format(
            keys=key_columns(resolved, SUBJECT_ALIAS, dialect, statistics="st"),
            ordinals=ordinals(len(resolved) + 2) + f", {len(resolved) + 6}",
            **fields,
        )
    parameters = [statistics_parameters(feature, "st", dialect) for feature in resolved]
    words = mask_words(resolved, parameters, dialect)
    group_by = ordinals(len(words) + 2) + f", {len(words) + 6}"
    return template("standalone_histogram", keep_comments=True).format(
        masks=aliased_masks(words),
        weighted=_standalone_weighted(resolved, dialect, collapse=variant == "collapsed"),
        ordinals=group_by,
        **fields,
    )


def _standalone_weighted(features: Sequence[ResolvedFeature], dialect: Dialect, *, collapse: bool) -> str:
    sums = "sum(__cohort_y) AS __cohort_sum, sum(__cohort_y * __cohort_y) AS __cohort_sum2"
    if not collapse:
        return "SELECT *, 1 AS __cohort_count, __cohort_y AS __cohort_sum, __cohort_y * __cohort_y AS __cohort_sum2\nFROM subjects"
    columns = ", ".join(dialect.quote(feature.column) for feature in features)
    return f"SELECT {columns}, count(*) AS __cohort_count, {sums}\nFROM subjects\nGROUP BY {ordinals(len(features))}"
