"""The self-contained query `cohortsql sql` prints: the library's own named steps (statistics,
subjects, weighted or collapsed subjects, targets, then the mask histogram or the cells), rendered as
one ``WITH`` to run where the data live, and a last SELECT that names the result's columns.

Where the library runs each step as a relation of its own and reads the whole-table statistics
into Python first, this query reads them from its ``statistics`` step: the explained value is
centred on the mean by a scalar subquery, and the similarity tests' parameters (window widths, bin
edges) are columns of every target row. Its result is two games of one weighting
(`STANDALONE_MEASURES`): y - mean and its square, whose sums give `cohortsql.assemble` the variance.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import NamedTuple

from cohortsql.queries.cells import equivalence_cells
from cohortsql.queries.histogram import MASK_WORD_BITS, mask_histogram
from cohortsql.queries.measures import collapsed_subjects, weighted_subjects
from cohortsql.queries.statistics import parameter_aggregates, statistic_alias, statistics_parameters, table_statistics
from cohortsql.queries.subjects import subjects
from cohortsql.spec.features import ResolvedFeature
from cohortsql.spec.measures import Measures
from cohortsql.spec.similarity import SqlPredicate
from cohortsql.sql.dialects import Dialect

STANDALONE_MEASURES = Measures(outcomes=2)
"""Outcome 0 is y - mean (the result's ``sum_y``), outcome 1 its square (``sum_y2``); no weights."""

MEAN = "__cohort_mean"
"""The statistics step's column holding the mean of the explained column."""


HISTOGRAM_HEADER = """\
-- cohortsql's heavy step as one self-contained query, to run where the data live.
-- Whole-table statistics (the mean, window widths from ranges or quantiles, bin edges) are computed
-- by the query itself, in the CTE `statistics`; the other CTEs are the steps cohortsql runs itself.
-- Result: one row per (target, similarity mask) with the number of subjects, the sum of y - mean and
-- of (y - mean)^2 over them, the target's own prediction and the whole-table mean. Bit j of the mask
-- (word w holds predictors 63w .. 63w + 62) is set when the subject is similar to the target on
-- predictor j, in this order: {feature_list}.
-- The cohort of a set u of predictors is every subject whose mask contains u.
-- `cohortsql assemble` turns this result into cohort Shapley values.
{position_note}"""
"""What the histogram query computes, for the person who runs it."""

CELLS_HEADER = """\
-- cohortsql's no-join step for equivalence similarities (exact, bins) as one self-contained query.
-- Whole-table statistics (the mean, bin edges) are computed by the query itself, in the CTE `statistics`.
-- Result: the subjects grouped by their equivalence keys k0, k1, ... (one per predictor, in this
-- order: {feature_list}), with the number of subjects, the sum of y - mean and of (y - mean)^2 and the
-- whole-table mean. Every target is a row of its own (its id in `target`, its prediction in
-- `prediction`); other subjects are collapsed into one row per cell (`target` NULL).
-- The cohort of target t on a set u of predictors is every subject whose keys on u equal t's.
-- `cohortsql assemble` turns this result into cohort Shapley values.
{position_note}"""
"""What the cells query computes."""


class Step(NamedTuple):
    """A named SELECT: the library creates it as a relation, the self-contained query as a CTE."""

    name: str
    select: str


def with_query(steps: Sequence[Step], result: str) -> str:
    """The steps as one statement: ``WITH a AS (...), b AS (...) <result>``, each step reading those before it."""
    ctes = ",\n".join(f"{step.name} AS (\n{step.select}\n)" for step in steps)
    return f"WITH {ctes}\n{result}"


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
    names = [feature.name for feature in resolved]
    header = (CELLS_HEADER if variant == "cells" else HISTOGRAM_HEADER).format(
        feature_list=", ".join(names), position_note=position_note
    )
    custom = any(isinstance(feature.kind, SqlPredicate) for feature in resolved)
    steps = [
        Step("statistics", table_statistics(source, _aggregates(resolved, prediction, dialect), dialect)),
        Step(
            "subjects",
            subjects(
                source,
                resolved,
                _centred_values(prediction, dialect),
                id,
                target_predicate,
                custom and variant == "histogram",
                dialect,
            ),
        ),
    ]
    if variant == "cells":
        steps += _cell_steps(resolved, condition, dialect)
        keys = [f"k{feature.index}" for feature in resolved]
        result = _result(
            "c", ["target", "prediction", *keys], "st", "cells AS c\nCROSS JOIN statistics AS st", names, dialect
        )
    else:
        steps += _histogram_steps(resolved, condition, dialect, collapsed=variant == "collapsed")
        masks = [f"mask{index}" for index in range(math.ceil(len(resolved) / MASK_WORD_BITS))]
        result = _result(
            "h",
            ["target", "t.__cohort_prediction AS prediction", *masks],
            "t",
            "histogram AS h\nJOIN targets AS t ON h.target = t.__cohort_batch",
            names,
            dialect,
        )
    return header + "\n" + with_query(steps, result)


def _aggregates(resolved: Sequence[ResolvedFeature], prediction: str, dialect: Dialect) -> dict[str, str]:
    """The statistics step: the mean, and every feature's whole-table parameters."""
    return {
        MEAN: f"avg(CAST({dialect.quote(prediction)} AS DOUBLE))",
        **{
            statistic_alias(feature.index, name): sql
            for feature in resolved
            for name, sql in parameter_aggregates(
                feature.kind, feature.values, dialect.quote(feature.name), dialect
            ).items()
        },
    }


def _centred_values(prediction: str, dialect: Dialect) -> dict[str, str]:
    """The subjects' prediction, y - mean and its square (`STANDALONE_MEASURES`)."""
    value = f"CAST({dialect.quote(prediction)} AS DOUBLE)"
    centred = f"({value} - (SELECT {dialect.quote(MEAN)} FROM statistics))"
    return {"__cohort_prediction": value, "__cohort_y0": centred, "__cohort_y1": f"{centred} * {centred}"}


def _histogram_steps(
    resolved: Sequence[ResolvedFeature], condition: str, dialect: Dialect, *, collapsed: bool
) -> list[Step]:
    """The pairwise path's steps: the subjects with their measures (collapsed or not), the targets
    (numbered by their id, carrying the statistics), and the mask histogram."""
    measures = STANDALONE_MEASURES
    weighted = (
        collapsed_subjects("subjects", resolved, measures, dialect)
        if collapsed
        else weighted_subjects("subjects", measures, dialect)
    )
    targets = (
        "SELECT s.*, s.__cohort_id AS __cohort_batch, st.*\nFROM subjects AS s\nCROSS JOIN statistics AS st\n"
        f"WHERE {condition}"
    )
    parameters = [statistics_parameters(feature, "t", dialect) for feature in resolved]
    histogram = mask_histogram(
        "weighted", "targets", resolved, measures, dialect, collapsed=collapsed, parameters=parameters
    )
    return [Step("weighted", weighted), Step("targets", targets), Step("histogram", histogram)]


def _cell_steps(resolved: Sequence[ResolvedFeature], condition: str, dialect: Dialect) -> list[Step]:
    """The grouping-sets path's steps: every subject marked with its id and prediction when it is a
    target (so targets stay rows of their own), then the cells of the equivalence keys."""
    keyed = (
        f"SELECT s.*, CASE WHEN {condition} THEN s.__cohort_id END AS target,\n"
        f"    CASE WHEN {condition} THEN s.__cohort_prediction END AS prediction, st.*\n"
        "FROM subjects AS s\nCROSS JOIN statistics AS st"
    )
    parameters = [statistics_parameters(feature, "s", dialect) for feature in resolved]
    cells = equivalence_cells(
        "keyed", resolved, STANDALONE_MEASURES, dialect, parameters=parameters, carried=("target", "prediction")
    )
    return [Step("keyed", keyed), Step("cells", cells)]


def _result(
    alias: str, leading: Sequence[str], statistics: str, source: str, features: Sequence[str], dialect: Dialect
) -> str:
    """The result's columns as `cohortsql.assemble` reads them: the `leading` ones (target,
    prediction, masks or keys; of relation `alias` unless qualified), the sums, the mean (of the
    relation `statistics` that holds it), and the `features` in the query's order (a JSON list, so
    that assemble can refuse another order)."""
    measures = STANDALONE_MEASURES
    columns = [column if "." in column else f"{alias}.{column}" for column in leading] + [
        f"CAST({alias}.{measures.weight_name(0)} AS BIGINT) AS subjects",
        f"{alias}.{measures.sum_name(0, 0)} AS sum_y",
        f"{alias}.{measures.sum_name(1, 0)} AS sum_y2",
        f"{statistics}.{dialect.quote(MEAN)} AS mean",
        f"{dialect.string(json.dumps(list(features)))} AS features",
    ]
    return "SELECT\n    " + ",\n    ".join(columns) + f"\nFROM {source}"
