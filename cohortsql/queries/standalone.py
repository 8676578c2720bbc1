"""The self-contained query `cohortsql sql` prints: the library's own named steps (statistics,
subjects, weighted or collapsed subjects, targets, then the mask histogram or the cells, and for the
``values`` and ``effects`` variants the superset sums and Shapley weights of `cohortsql.queries.values`),
rendered as one ``WITH`` to run where the data live, and a last SELECT that names the result's columns.

Where the library runs each step as a relation of its own and reads the whole-table statistics
into Python first, this query reads them from its ``statistics`` step: the explained value is
centred on the (weighted) mean by a scalar subquery, and the similarity tests' parameters (window
widths, bin edges) are columns of every target row. The histogram and cells variants return two games
of one weighting (`STANDALONE_MEASURES`): y - mean and its square, whose sums give
`cohortsql.assemble` the variance; the values and effects variants finish the computation themselves.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

from cohortsql.dialects import Dialect
from cohortsql.queries import values as value_steps
from cohortsql.queries.cells import equivalence_cells
from cohortsql.queries.histogram import MASK_WORD_BITS, mask_histogram
from cohortsql.queries.integrated import HistogramInputs, integrated_histogram, player_name
from cohortsql.queries.measures import collapsed_subjects, weighted_subjects
from cohortsql.queries.statistics import (
    bad_value,
    parameter_aggregates,
    positive_weights,
    statistic_alias,
    statistics_parameters,
    table_statistics,
)
from cohortsql.queries.steps import Step, with_query
from cohortsql.queries.subjects import subjects
from cohortsql.request.features import ResolvedFeature
from cohortsql.request.measures import Measures
from cohortsql.request.similarity import KnownQuantiles, SqlPredicate

STANDALONE_MEASURES = Measures(outcomes=2)
"""Outcome 0 is y - mean (the result's ``sum_y``), outcome 1 its square (``sum_y2``); no weights."""

MEAN = "__cohort_mean"
"""The statistics step's column holding the (weighted) mean of the explained column."""


HISTOGRAM_HEADER = """\
-- cohortsql's heavy step as one self-contained query, to run where the data live.
-- Whole-table statistics (the mean, window widths from ranges or quantiles, bin edges) are computed
-- by the query itself, in the CTE `{statistics}`; the other CTEs are the steps cohortsql runs itself.
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
-- Whole-table statistics (the mean, bin edges) are computed by the query itself, in the CTE `{statistics}`.
-- Result: the subjects grouped by their equivalence keys k0, k1, ... (one per predictor, in this
-- order: {feature_list}), with the number of subjects, the sum of y - mean and of (y - mean)^2 and the
-- whole-table mean. Every target is a row of its own (its id in `target`, its prediction in
-- `prediction`); other subjects are collapsed into one row per cell (`target` NULL).
-- The cohort of target t on a set u of predictors is every subject whose keys on u equal t's.
-- `cohortsql assemble` turns this result into cohort Shapley values.
{position_note}"""
"""What the cells query computes."""

VALUES_HEADER = """\
-- cohortsql's cohort Shapley values as one self-contained query: the engine computes everything.
-- Whole-table statistics (the {mean}, window widths from ranges or quantiles, bin edges) are computed by the
-- query itself, in the CTE `{statistics}`. For every target, `histogram` holds one row per similarity mask
-- (bit j set when a subject is similar to the target on predictor j, in this order: {feature_list});
-- the `lattice_*` passes sum it over every mask containing each set u of predictors (the cohort
-- C_{{t,u}}), `games` divides (the cohort's mean minus the overall mean), and `terms` and `shapley` apply
-- the Shapley weights w(s) = s! (d - s - 1)! / d!, written as a table. Mase, Owen & Seiler,
-- "Explaining black box decisions by Shapley cohort refinement".
-- Result: {result}
{position_note}"""
"""What the values and effects queries compute."""

INTEGRATED_HEADER = """\
-- What integrated gradient cohort Shapley reads (method="integrated"), as one self-contained query.
-- Whole-table statistics (the mean, window widths, bin edges) are computed by the query itself, in the
-- CTE `{statistics}`. Result: one row per (target, k), k the number of features on which a subject is not
-- similar to the target: the number of such subjects (w0) and their sum of y - mean (s0_0), and the same
-- over those not similar on feature j (w0_p<j>, s0_0_p<j>), features in this order: {feature_list}.
-- Hama, Mase & Owen, "Model free variable importance for high dimensional data": with C_k = w0, Y_k =
-- s0_0 and q = 1 - a, nu(q) = sum_k Y_k q^k / sum_k C_k q^k and IGCS_j = integral over [0, 1] of
-- d nu / d z_j, whose numerator and denominator derivatives are -sum_k s0_0_p<j> q^(k-1), -sum_k w0_p<j> q^(k-1).
{position_note}"""
"""What the integrated variant computes."""

FUNCTION_HEADER = """\
-- cohortsql's cohort Shapley values, computed by the engine: whole-table statistics (the {mean},
-- window widths, bin edges) in the CTE `{statistics}`; for every target, `histogram` holds one row per
-- similarity mask (bit j set when a subject is similar to the target on predictor j, in this order:
-- {feature_list}), and cohortsql's scalar function finishes each target's histogram.
{position_note}"""
"""What the query behind the DuckDB table function ``cohort_shapley`` computes."""

VALUES_RESULT = (
    "one row per target and feature: id, feature, shapley (adding up over the features to the\n"
    "-- target's cohort mean minus the overall mean) and shapley_squared (the same for its square)."
)
EFFECTS_RESULT = (
    "one row per feature, largest first: feature, shapley_effect (the Shapley values of the variance\n"
    "-- game v_var(u), the targets' mean of squared cohort values), share = shapley_effect / variance,\n"
    "-- and variance, the targets' mean of (y - mean)^2."
)


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
    weight: str | None = None,
    collapsed: bool = False,
    known: KnownQuantiles | None = None,
    function: str = "",
) -> str:
    """One query computing its own statistics and then the mask histogram (``histogram``, or
    ``collapsed`` when identical subjects are merged first), the equivalence cells (``cells``), or the
    values themselves (``values``: every target's; ``effects``: the variance game's; ``function``:
    every target's, each histogram finished by the DuckDB scalar function named `function`), whose
    histogram merges identical subjects when `collapsed`.

    `target_predicate` is the caller's predicate (it sets ``__cohort_target``); `condition` says which
    subjects are targets, over the subjects' columns. With a `weight` column, rows of weight 0 (or
    less, or NULL) are left out and every sum and mean is weighted. Quantiles in `known` (by
    expression and probability) enter as literals, for warehouses without an exact quantile aggregate."""
    names = [feature.name for feature in resolved]
    finished = variant in ("values", "effects", "function")
    measures = Measures(outcomes=1, weighted=weight is not None) if finished else STANDALONE_MEASURES
    statistics = statistics_step_name(source)
    header = _header(variant, names, position_note, statistics, dialect, weighted=weight is not None)
    custom = any(isinstance(feature.kind, SqlPredicate) for feature in resolved)
    rows = source if weight is None else f"(\n{positive_weights(source, weight, dialect)}\n) AS positive"
    steps = [
        Step(statistics, table_statistics(rows, _aggregates(resolved, prediction, weight, dialect, known), dialect)),
        Step(
            "subjects",
            subjects(
                rows,
                resolved,
                _centred_values(prediction, weight, statistics, dialect, squares=not finished),
                id,
                target_predicate,
                custom and variant != "collapsed",
                dialect,
            ),
        ),
    ]
    if variant == "cells":
        steps += _cell_steps(resolved, condition, statistics, dialect)
        keys = [f"k{feature.index}" for feature in resolved]
        result = _result(
            "c", ["target", "prediction", *keys], "st", f"cells AS c\nCROSS JOIN {statistics} AS st", names, dialect
        )
        return header + "\n" + with_query(steps, result)
    if variant == "integrated":
        steps += _histogram_steps(resolved, condition, INTEGRATED_MEASURES, statistics, dialect, collapsed=False)[:2]
        parameters = [statistics_parameters(feature, "t", dialect) for feature in resolved]
        players = [(index,) for index in range(len(resolved))]
        inputs = HistogramInputs("weighted", resolved, players, INTEGRATED_MEASURES, dialect, "weighted", parameters)
        histogram = integrated_histogram(inputs, "targets")
        steps.append(Step("dissimilar", histogram))
        columns = ["h.target", "t.__cohort_prediction AS prediction", "h.k"]
        columns += [f"h.{dialect.quote(name)}" for name in _integrated_columns(len(resolved))]
        columns.append(f"{dialect.string(json.dumps(list(names)))} AS features")
        result = (
            "SELECT\n    "
            + ",\n    ".join(columns)
            + "\nFROM dissimilar AS h\nJOIN targets AS t ON h.target = t.__cohort_batch"
        )
        return header + "\n" + with_query(steps, result)
    steps += _histogram_steps(
        resolved, condition, measures, statistics, dialect, collapsed=variant == "collapsed" or collapsed
    )
    if variant == "function":
        return (
            header + "\n" + with_query(steps, value_steps.finished_by_function("histogram", names, function, dialect))
        )
    if finished:
        return header + "\n" + with_query(*_value_steps(steps, names, variant, weight, dialect))
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


INTEGRATED_MEASURES = Measures(outcomes=1)
"""The integrated variant's sums: the subjects (w0) and their sums of y - mean (s0_0), unweighted."""


def _integrated_columns(players: int) -> list[str]:
    names = [INTEGRATED_MEASURES.weight_name(0), INTEGRATED_MEASURES.sum_name(0, 0)]
    return [*names, *(player_name(name, player) for name in names for player in range(players))]


def statistics_step_name(source: str) -> str:
    """The name of the statistics step: ``statistics``, unless the data's table expression names
    something so (a warehouse table called ``statistics``), which a CTE of that name would hide from the
    step after it that reads the data; then ``__cohort_statistics`` (numbered further if need be). Only
    this step comes before one that reads the data, so no other name can hide it."""
    name, number = "statistics", 0
    while re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", source, flags=re.IGNORECASE):
        number += 1
        name = "__cohort_statistics" if number == 1 else f"__cohort_statistics{number}"
    return name


def _header(
    variant: str, names: Sequence[str], position_note: str, statistics: str, dialect: Dialect, *, weighted: bool
) -> str:
    feature_list = ", ".join(map(dialect.quote_in_comment, names))
    mean = "weighted mean" if weighted else "mean"
    if variant == "function":
        return FUNCTION_HEADER.format(
            mean=mean, feature_list=feature_list, position_note=position_note, statistics=statistics
        )
    if variant in ("values", "effects"):
        return VALUES_HEADER.format(
            mean=mean,
            feature_list=feature_list,
            result=EFFECTS_RESULT if variant == "effects" else VALUES_RESULT,
            position_note=position_note,
            statistics=statistics,
        )
    if variant == "integrated":
        return INTEGRATED_HEADER.format(feature_list=feature_list, position_note=position_note, statistics=statistics)
    return (CELLS_HEADER if variant == "cells" else HISTOGRAM_HEADER).format(
        feature_list=feature_list, position_note=position_note, statistics=statistics
    )


def _aggregates(
    resolved: Sequence[ResolvedFeature],
    prediction: str,
    weight: str | None,
    dialect: Dialect,
    known: KnownQuantiles | None,
) -> dict[str, str]:
    """The statistics step: the (weighted) mean, and every feature's whole-table parameters. The mean
    stops the query where the library would refuse the data (`_refusals`), so no value is computed
    from them."""
    value = f"CAST({dialect.quote(prediction)} AS DOUBLE)"
    if weight is None:
        mean = f"avg({value})"
    else:
        weights = f"CAST({dialect.quote(weight)} AS DOUBLE)"
        mean = f"sum({weights} * {value}) / sum({weights})"
    return {
        MEAN: f"coalesce({', '.join(_refusals(resolved, prediction, dialect))}, {mean})",
        **{
            statistic_alias(feature.index, name): sql
            for feature in resolved
            for name, sql in parameter_aggregates(feature.kind, feature, dialect, known or {}).items()
        },
    }


def _refusals(resolved: Sequence[ResolvedFeature], prediction: str, dialect: Dialect) -> list[str]:
    """Aggregates that stop the query (`Dialect.failure`) on what the library refuses in the data: a
    NULL, NaN or infinite explained value, an infinite value of a feature compared by a window or bins."""
    value = dialect.quote(prediction)
    refusals = [
        dialect.failure(
            f"sum(CASE WHEN {bad_value(value, dialect)} THEN 1 ELSE 0 END) > 0",
            f"cohortsql: prediction column {prediction!r} has NULL, NaN or infinite values; drop or fill them",
        )
    ]
    for feature in resolved:
        if feature.kind.numeric and feature.values == "float":
            column = f"CAST({dialect.quote(feature.name)} AS DOUBLE)"
            refusals.append(
                dialect.failure(
                    f"sum(CASE WHEN abs({column}) = CAST('Infinity' AS DOUBLE) THEN 1 ELSE 0 END) > 0",
                    f"cohortsql: feature {feature.name!r} has infinite values; similarity {feature.kind} needs"
                    " finite numbers (replace them, or use 'exact')",
                )
            )
    return refusals


def _centred_values(
    prediction: str, weight: str | None, statistics: str, dialect: Dialect, *, squares: bool
) -> dict[str, str]:
    """The subjects' prediction, y - mean and (with `squares`) its square, and their case weight."""
    value = f"CAST({dialect.quote(prediction)} AS DOUBLE)"
    centred = f"({value} - (SELECT {dialect.quote(MEAN)} FROM {statistics}))"
    values = {"__cohort_prediction": value, "__cohort_y0": centred}
    if squares:
        values["__cohort_y1"] = f"{centred} * {centred}"
    if weight is not None:
        values["__cohort_weight"] = f"CAST({dialect.quote(weight)} AS DOUBLE)"
    return values


def _histogram_steps(
    resolved: Sequence[ResolvedFeature],
    condition: str,
    measures: Measures,
    statistics: str,
    dialect: Dialect,
    *,
    collapsed: bool,
) -> list[Step]:
    """The pairwise path's steps: the subjects with their measures (collapsed or not), the targets
    (numbered by their id, carrying the statistics), and the mask histogram."""
    weighted = (
        collapsed_subjects("subjects", resolved, measures, dialect)
        if collapsed
        else weighted_subjects("subjects", measures, dialect)
    )
    targets = (
        f"SELECT s.*, s.__cohort_id AS __cohort_batch, st.*\nFROM subjects AS s\nCROSS JOIN {statistics} AS st\n"
        f"WHERE {condition}"
    )
    parameters = [statistics_parameters(feature, "t", dialect) for feature in resolved]
    histogram = mask_histogram(
        "weighted", "targets", resolved, measures, dialect, collapsed=collapsed, parameters=parameters
    )
    return [Step("weighted", weighted), Step("targets", targets), Step("histogram", histogram)]


def _value_steps(
    steps: list[Step], names: Sequence[str], variant: str, weight: str | None, dialect: Dialect
) -> tuple[list[Step], str]:
    """After the histogram: the superset sums, the cohort values and their Shapley values; the
    variance game first for ``effects``. Returns every step and the result's SELECT."""
    steps = [*steps, *value_steps.game_steps("histogram", len(names))]
    if variant == "values":
        steps += value_steps.shapley_steps("games", names, value_steps.VALUES, dialect)
        return steps, "SELECT target AS id, feature, shapley, shapley_squared\nFROM shapley\nORDER BY target, position"
    target_weight = "CAST(1 AS DOUBLE)" if weight is None else "t.__cohort_weight"
    steps.append(Step("variance_game", value_steps.variance_game("games", "targets", target_weight)))
    steps += value_steps.shapley_steps("variance_game", names, {"shapley_effect": "g.v"}, dialect)
    variance = (
        f"SELECT sum({target_weight} * t.__cohort_y0 * t.__cohort_y0) / sum({target_weight}) AS variance\n"
        "    FROM targets AS t"
    )
    result = (
        "SELECT e.feature, e.shapley_effect, e.shapley_effect / v.variance AS share, v.variance\n"
        f"FROM shapley AS e\nCROSS JOIN (\n    {variance}\n) AS v\nORDER BY e.shapley_effect DESC, e.position"
    )
    return steps, result


def _cell_steps(resolved: Sequence[ResolvedFeature], condition: str, statistics: str, dialect: Dialect) -> list[Step]:
    """The grouping-sets path's steps: every subject marked with its id and prediction when it is a
    target (so targets stay rows of their own), then the cells of the equivalence keys."""
    keyed = (
        f"SELECT s.*, CASE WHEN {condition} THEN s.__cohort_id END AS target,\n"
        f"    CASE WHEN {condition} THEN s.__cohort_prediction END AS prediction, st.*\n"
        f"FROM subjects AS s\nCROSS JOIN {statistics} AS st"
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
