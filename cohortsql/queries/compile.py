"""Pure functions from a checked specification to SQL text for a dialect (DESIGN §2 step 1). Nothing runs here.

Subjects are aliased ``s`` and targets ``t`` in every query, which is what ``sql:`` similarity
predicates refer to. Templates live in ``sql/``; this module fills them in. Whole-table parameters
of similarity kinds enter as literals (`literal_parameters`) when cohortsql computed them first, or
as columns of a statistics CTE (`statistics_parameters`) in the standalone queries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from cohortsql.sql.dialects import Dialect
from cohortsql.spec.measures import Measures
from cohortsql.spec.features import Feature, ResolvedFeature, feature_statistics, parameter_aggregates
from cohortsql.spec.similarity import Bins, Exact, ParameterSql, SqlPredicate
from cohortsql.sql.text import template

SUBJECT_ALIAS = "s"
TARGET_ALIAS = "t"

MASK_WORD_BITS = 63
"""Similarity masks are split into BIGINT words of 63 bits (never negative), so any d fits, on any engine."""

_BAD_Y = "NOT coalesce(abs(CAST({y} AS DOUBLE)) < CAST('Infinity' AS DOUBLE), FALSE)"
"""True for a NULL, NaN or infinite value of the explained column."""


def _ordinals(count: int) -> str:
    return ", ".join(str(position) for position in range(1, count + 1))


def pilot(source: str, prediction: str, dialect: Dialect) -> str:
    """SELECT any one finite value of the explained column (see ``sql/pilot.sql``)."""
    return template("pilot").format(source=source, prediction=dialect.quote(prediction))


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


def statistics_aggregates(
    features: Sequence[Feature],
    outcomes: Sequence[str],
    id: str,
    pilots: Sequence[str],
    weight: str | None,
    dialect: Dialect,
    *,
    check_ids: bool,
    distinct_rows: bool,
) -> dict[str, str]:
    """The whole-table aggregates by name: n, moments of each y_k - pilot_k, checks, and each feature's needs.

    `id` is the SQL of each row's id (the id column, or the row position); `check_ids` counts missing
    and distinct ids (an id column must identify rows). With a `weight` column, the moments are its
    weighted sums (`weighted_moments` turns them into the mean and variance)."""
    aggregates = {"subjects": "count(*)"}
    weights = None if weight is None else f"CAST({dialect.quote(weight)} AS DOUBLE)"
    if weights is not None:
        aggregates["total_weight"] = f"sum({weights})"
    for index, (outcome, pilot_value) in enumerate(zip(outcomes, pilots)):
        y = dialect.quote(outcome)
        bad_y = _BAD_Y.format(y=y)
        centred = f"CASE WHEN {bad_y} THEN NULL ELSE CAST({y} AS DOUBLE) - {pilot_value} END"
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
        aggregates["distinct_ids"] = f"count(DISTINCT {id})"
    if distinct_rows:
        columns = ", ".join(dialect.quote(feature.name) for feature in features)
        aggregates["distinct_rows"] = f"approx_count_distinct(hash({columns}))"
    for feature in features:
        for name, sql in feature_statistics(feature, dialect.quote(feature.name), dialect).items():
            aggregates[statistic_alias(feature.index, name)] = sql
    return aggregates


def weight_checks(source: str, weight: str, id: str, dialect: Dialect) -> str:
    """One row of checks on the case-weight column over every row (see ``sql/weight_checks.sql``)."""
    value = f"CAST({dialect.quote(weight)} AS DOUBLE)"
    bad = f"NOT coalesce({value} >= 0 AND {value} < CAST('Infinity' AS DOUBLE), FALSE)"
    return template("weight_checks").format(bad=bad, id=id, weight=value, source=source)


def positive_weights(source: str, weight: str, dialect: Dialect) -> str:
    """SELECT the rows of positive case weight (see ``sql/positive_weights.sql``)."""
    return template("positive_weights").format(source=source, weight=dialect.quote(weight))


def table_statistics(source: str, aggregates: Mapping[str, str], dialect: Dialect) -> str:
    """One row of whole-table statistics (see ``sql/table_statistics.sql``)."""
    return template("table_statistics").format(source=source, aggregates=_select_list(aggregates, dialect))


def _select_list(aggregates: Mapping[str, str], dialect: Dialect) -> str:
    return ",\n    ".join(f"{sql} AS {dialect.quote(alias)}" for alias, sql in aggregates.items())


def literal_parameters(feature: ResolvedFeature, dialect: Dialect) -> dict[str, str]:
    """A feature's whole-table parameters as SQL literals."""
    return {name: dialect.parameter(value) for name, value in feature.parameters.items()}


def statistics_parameters(feature: ResolvedFeature, statistics: str, dialect: Dialect) -> dict[str, str]:
    """A feature's whole-table parameters as columns of the statistics row aliased `statistics`."""
    return {
        name: f"{statistics}.{dialect.quote(statistic_alias(feature.index, 'parameter:' + name))}"
        for name in feature.parameters
    }


def prepared_value(feature: ResolvedFeature, dialect: Dialect) -> str:
    """The feature's column as the similarity tests compare it (see `cohortsql.spec.features.Representation`)."""
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
        return dialect.epoch_days(column, "timestamp" if feature.values == "timestamp" else "date")
    return column


def _subject_fields(
    features: Sequence[ResolvedFeature],
    id: str,
    target_predicate: str | None,
    keep_data_columns: bool,
    dialect: Dialect,
) -> dict[str, str]:
    """The template fields that define a subject row: id, target flag, prepared predictors."""
    return dict(
        id=id,
        is_target="TRUE" if target_predicate is None else f"coalesce(({target_predicate}), FALSE)",
        predictors=",\n    ".join(
            f"{prepared_value(feature, dialect)} AS {dialect.quote(feature.column)}" for feature in features
        ),
        data_columns=",\n    *" if keep_data_columns else "",
    )


def subjects(
    source: str,
    features: Sequence[ResolvedFeature],
    outcomes: Sequence[str],
    pilots: Sequence[str],
    weight: str | None,
    id: str,
    target_predicate: str | None,
    keep_data_columns: bool,
    dialect: Dialect,
) -> str:
    """SELECT the subjects from `source` (see ``sql/subjects.sql``); `id` is the SQL of each row's id."""
    values = [
        f"CAST({dialect.quote(outcome)} AS DOUBLE) - {pilot_value} AS __cohort_y{index}"
        for index, (outcome, pilot_value) in enumerate(zip(outcomes, pilots))
    ]
    if weight is not None:
        values.append(f"CAST({dialect.quote(weight)} AS DOUBLE) AS __cohort_weight")
    return template("subjects").format(
        source=source,
        values="".join(f"{value},\n    " for value in values),
        **_subject_fields(features, id, target_predicate, keep_data_columns, dialect),
    )


DRAWS_PER_HASH = 4
"""An md5 hash holds four 32-bit numbers: replicates 4g + 1 .. 4g + 4 share the hash of group g."""


def draw_group(replicate: int) -> tuple[int, int]:
    """The hash group g and part r of replicate b >= 1: b = 4g + r + 1."""
    return divmod(replicate - 1, DRAWS_PER_HASH)


def draw_hash(group: int | str, seed: int, dialect: Dialect) -> str:
    """SQL of md5('<seed>:<group>:<id>') for subject ``__cohort_id``: `group` a number, or the SQL of an
    integer column holding it (the same text either way)."""
    text = dialect.text_type
    if isinstance(group, int):
        key = dialect.string(f"{int(seed)}:{group}:")
    else:
        key = f"{dialect.string(f'{int(seed)}:')} || CAST({group} AS {text}) || ':'"
    return dialect.md5_hash(f"{key} || CAST(__cohort_id AS {text})")


def draw_from_hash(hash_sql: str, part: int, dialect: Dialect) -> str:
    """SQL of the Exp(1) draw -ln(U) from 32-bit part `part` of a hash, U = (part + 1/2) / 2^32."""
    return f"-ln(({dialect.md5_part(hash_sql, part)} + 0.5) / {dialect.number(2.0**32)})"


def replicate_draw(replicate: int, seed: int, dialect: Dialect) -> str:
    """SQL of subject ``__cohort_id``'s Exp(1) draw for bootstrap replicate `replicate` >= 1, hash
    included (see ``sql/replicate_draws.sql``)."""
    group, part = draw_group(replicate)
    return draw_from_hash(draw_hash(group, seed, dialect), part, dialect)


MeasureSource = Literal["subjects", "weighted", "collapsed"]
"""Where the sums of the measures come from: the subjects' own columns (weights computed), the
weighted subjects (their weights stored, see `weighted_subjects`), or collapsed subjects (every sum stored)."""


def _row_measures(measures: Measures, *, stored_weights: bool, alias: str = "") -> dict[str, str]:
    """What each subject row adds to each sum, by column name: its weight under every weighting (the
    stored ``__cohort_w<b>`` columns, or computed from the case weight and the draws ``__cohort_e<b>``)
    and that weight times each outcome. A weight that is 1 (no case weights, no replicate) is left out."""
    columns = {}
    for weighting in range(measures.weightings):
        name = measures.weight_name(weighting)
        factors = [f"{alias}__cohort_weight"] if measures.weighted else []
        if weighting:
            factors.append(f"{alias}__cohort_e{weighting}")
        if stored_weights and factors:
            factors = [f"{alias}__cohort_{name}"]
        weight = " * ".join(factors)
        columns[f"__cohort_{name}"] = weight or "CAST(1 AS DOUBLE)"
        for outcome in range(measures.outcomes):
            value = f"{alias}__cohort_y{outcome}"
            columns[f"__cohort_{measures.sum_name(outcome, weighting)}"] = f"{weight} * {value}" if weight else value
    return columns


def _drawn(subjects: str, measures: Measures, dialect: Dialect) -> str:
    """The subjects with their bootstrap draws ``__cohort_e1`` .. (the relation itself without replicates)."""
    if not measures.replicates:
        return subjects
    groups = draw_group(measures.replicates)[0] + 1
    hashes = ", ".join(f"{draw_hash(group, measures.seed, dialect)} AS __cohort_h{group}" for group in range(groups))
    draws = ", ".join(
        f"{draw_from_hash(f'__cohort_h{draw_group(replicate)[0]}', draw_group(replicate)[1], dialect)}"
        f" AS __cohort_e{replicate}"
        for replicate in range(1, measures.weightings)
    )
    return "(" + template("replicate_draws").format(draws=draws, hashes=hashes, subjects=subjects) + ") AS drawn"


def weighted_subjects(subjects: str, measures: Measures, dialect: Dialect) -> str:
    """SELECT every subject with its weight under every weighting (see ``sql/weighted_subjects.sql``);
    the histogram multiplies them by the outcomes as it sums (as fast as stored products, half the memory)."""
    computed = _row_measures(measures, stored_weights=False)
    listed = ", ".join(f"{computed[f'__cohort_{name}']} AS __cohort_{name}" for name in measures.weight_names)
    return template("weighted_subjects").format(measures=listed, subjects=_drawn(subjects, measures, dialect))


def collapsed_subjects(subjects: str, features: Sequence[ResolvedFeature], measures: Measures, dialect: Dialect) -> str:
    """SELECT identical predictor rows collapsed into one with the sums of their measures."""
    columns = ", ".join(dialect.quote(feature.column) for feature in features)
    sums = ", ".join(f"sum({sql}) AS {name}" for name, sql in _row_measures(measures, stored_weights=False).items())
    return template("collapsed_subjects").format(
        columns=columns, sums=sums, subjects=_drawn(subjects, measures, dialect), ordinals=_ordinals(len(features))
    )


def target_weights(measures: Measures, dialect: Dialect) -> str:
    """The select list of a target's weight under every weighting, ``__cohort_w0`` .. ``__cohort_w<B>``."""
    weights = []
    for weighting in range(measures.weightings):
        weight = "__cohort_weight" if measures.weighted else "CAST(1 AS DOUBLE)"
        if weighting:
            weight = f"{weight} * {replicate_draw(weighting, measures.seed, dialect)}"
        weights.append(f"{weight} AS __cohort_{measures.weight_name(weighting)}")
    return ", ".join(weights)


def measure_sums(measures: Measures, source: MeasureSource) -> str:
    """The histogram's (and the cells') sums of the subjects' measures, over relation `SUBJECT_ALIAS`
    of kind `source`. Without weights or replicates W_0 counts rows, with count(*) where each row is
    one subject (DuckDB's perfect-hash aggregate keeps that cheap)."""
    alias = f"{SUBJECT_ALIAS}."
    computed = _row_measures(measures, stored_weights=source == "weighted", alias=alias)
    sums = []
    for name in [*measures.weight_names, *measures.sum_names]:
        if name == measures.weight_name(0) and source != "collapsed" and measures.counted:
            sums.append(f"CAST(count(*) AS DOUBLE) AS {name}")
        elif source == "collapsed":
            sums.append(f"sum({alias}__cohort_{name}) AS {name}")
        else:
            sums.append(f"sum({computed[f'__cohort_{name}']}) AS {name}")
    return ",\n    ".join(sums)


def measure_totals(subjects: str, measures: Measures, source: MeasureSource) -> str:
    """SELECT W_b and S_bk over every subject (see ``sql/measure_totals.sql``)."""
    return template("measure_totals").format(sums=measure_sums(measures, source), subjects=subjects)


def target_rows(subjects: str, condition: str, measures: Measures, dialect: Dialect) -> str:
    """The subject rows that satisfy `condition` (every column and their weights), in id order."""
    return template("targets").format(subjects=subjects, condition=condition, weights=target_weights(measures, dialect))


def row_count(relation: str, condition: str = "TRUE") -> str:
    """SELECT n, the number of rows of `relation` where `condition` holds."""
    return f"SELECT count(*) AS n FROM {relation} WHERE {condition}"


def target_condition(target_predicate: bool, membership: str | None) -> str:
    """Which subjects are targets: all, those of the caller's predicate, and those of an id `membership` test."""
    conditions = ["__cohort_target"] if target_predicate else []
    if membership is not None:
        conditions.append(membership)
    return " AND ".join(conditions) or "TRUE"


def id_membership(column: str, ids: Sequence[object] | None, table: str | None, dialect: Dialect) -> str:
    """`column` IN the given `ids` (as literals), or IN the ``id`` column of relation `table`."""
    if ids is not None:
        return f"{column} IN ({', '.join(dialect.literal(value) for value in ids)})"
    return f"{column} IN (SELECT id FROM {table})"


def sampled_targets(subjects: str, condition: str, size: int, seed: int, measures: Measures, dialect: Dialect) -> str:
    """`size` targets drawn at random among the rows satisfying `condition`, identically on every engine."""
    return template("sampled_targets").format(
        weights=target_weights(measures, dialect),
        subjects=subjects,
        condition=condition,
        size=int(size),
        seed=dialect.string(f"{int(seed)}:"),
        text=dialect.text_type,
    )


def target_data(source: str, columns: Sequence[str], id: str, membership: str, dialect: Dialect) -> str:
    """The rows of `source` (the given columns, as they are) passing the id `membership` test, in id order."""
    return template("target_data").format(
        columns=", ".join(dialect.quote(column) for column in columns), source=source, id=id, membership=membership
    )


def similarity_test(feature: ResolvedFeature, parameters: ParameterSql, dialect: Dialect) -> str:
    """SQL boolean z_tj(x_sj) for one feature, NULL-safe: NULL is similar to NULL only.

    Columns without missing values get the kind's bare predicate (3x faster in DuckDB than the
    guarded form, measured on 1e8 pairs). Custom ``sql:`` predicates always count subjects with the
    target's own value as similar, so a target is in all of its cohorts whatever the expression says.
    """
    subject = f"{SUBJECT_ALIAS}.{dialect.quote(feature.column)}"
    target = f"{TARGET_ALIAS}.{dialect.quote(feature.column)}"
    test = feature.kind.predicate(subject, target, parameters, dialect)
    if isinstance(feature.kind, SqlPredicate):
        return f"({subject} IS NOT DISTINCT FROM {target} OR coalesce({test}, FALSE))"
    if feature.has_missing:
        return f"coalesce({test}, {subject} IS NULL AND {target} IS NULL)"
    return test


def mask_words(features: Sequence[ResolvedFeature], parameters: Sequence[ParameterSql], dialect: Dialect) -> list[str]:
    """m = sum_j z_tj << j as sums of CASE expressions (faster in DuckDB than casts and shifts),
    one expression per word of `MASK_WORD_BITS` predictors: word w holds predictors 63w .. 63w + 62."""
    words = []
    for first in range(0, len(features), MASK_WORD_BITS):
        chunk = list(zip(features[first : first + MASK_WORD_BITS], parameters[first : first + MASK_WORD_BITS]))
        # The narrowest integer type that holds the word: DuckDB then knows the mask's range.
        kind = "SMALLINT" if len(chunk) <= 15 else "INTEGER" if len(chunk) <= 31 else "BIGINT"
        words.append(
            "\n        + ".join(
                f"CASE WHEN {similarity_test(feature, values, dialect)} THEN CAST({1 << bit} AS {kind})"
                f" ELSE CAST(0 AS {kind}) END"
                for bit, (feature, values) in enumerate(chunk)
            )
        )
    return words


def mask_histogram(
    subjects: str,
    targets: str,
    features: Sequence[ResolvedFeature],
    measures: Measures,
    dialect: Dialect,
    *,
    collapsed: bool,
) -> str:
    """GROUP BY target, mask words -> the sums of `measures` for every target in relation `targets`.

    `subjects` has the measure columns: collapsed identical subjects, or (not `collapsed`) every
    subject on its own."""
    parameters = [literal_parameters(feature, dialect) for feature in features]
    words = mask_words(features, parameters, dialect)
    return template("mask_histogram").format(
        masks=_aliased_masks(words),
        sums=measure_sums(measures, "collapsed" if collapsed else "weighted"),
        subjects=subjects,
        targets=targets,
        ordinals=_ordinals(len(words) + 1),
    )


def _aliased_masks(words: Sequence[str]) -> str:
    return ",\n    ".join(f"{word} AS mask{index}" for index, word in enumerate(words))


def equivalence_key(feature: ResolvedFeature, alias: str, parameters: ParameterSql, dialect: Dialect) -> str:
    """SQL of the equivalence class of the feature's value in row `alias` (exact and bins only)."""
    kind = feature.kind
    if not isinstance(kind, (Exact, Bins)):
        raise TypeError(f"{kind} is not an equivalence")
    return kind.key(f"{alias}.{dialect.quote(feature.column)}", parameters)


def _keys(features: Sequence[ResolvedFeature], alias: str, dialect: Dialect, statistics: str | None = None) -> str:
    return ",\n    ".join(
        f"{equivalence_key(feature, alias, _parameters(feature, dialect, statistics), dialect)} AS k{feature.index}"
        for feature in features
    )


def _parameters(feature: ResolvedFeature, dialect: Dialect, statistics: str | None) -> dict[str, str]:
    if statistics is None:
        return literal_parameters(feature, dialect)
    return statistics_parameters(feature, statistics, dialect)


def equivalence_cells(subjects: str, features: Sequence[ResolvedFeature], measures: Measures, dialect: Dialect) -> str:
    """SELECT the finest cells of equivalence similarities: keys k0.. and the sums of `measures` over the
    subjects (without bootstrap replicates; see `replicate_cells`)."""
    return template("equivalence_cells").format(
        keys=_keys(features, SUBJECT_ALIAS, dialect),
        sums=measure_sums(measures, "subjects"),
        subjects=subjects,
        ordinals=_ordinals(len(features)),
    )


def replicate_cells(
    subjects: str, features: Sequence[ResolvedFeature], measures: Measures, groups: str, dialect: Dialect
) -> str:
    """SELECT the finest cells under every bootstrap replicate, one row per cell and hash group (the
    ``__cohort_group`` column of relation `groups`): see ``sql/replicate_cells.sql``."""
    weight = "s.__cohort_weight" if measures.weighted else "CAST(1 AS DOUBLE)"
    own = f"CASE WHEN s.__cohort_group = 0 THEN {weight} ELSE CAST(0 AS DOUBLE) END"
    sums = [f"sum({own}) AS own_w"]
    sums += [f"sum({own} * s.__cohort_y{k}) AS own_s{k}" for k in range(measures.outcomes)]
    for part in range(DRAWS_PER_HASH):
        replicate = f"{weight} * {draw_from_hash('s.__cohort_hash', part, dialect)}"
        sums.append(f"sum({replicate}) AS w{part}")
        sums += [f"sum({replicate} * s.__cohort_y{k}) AS s{k}_{part}" for k in range(measures.outcomes)]
    return template("replicate_cells").format(
        keys=_keys(features, SUBJECT_ALIAS, dialect),
        sums=",\n    ".join(sums),
        hash=draw_hash("g.__cohort_group", measures.seed, dialect),
        subjects=subjects,
        groups=groups,
        ordinals=_ordinals(len(features) + 1),
    )


def target_keys(targets: str, features: Sequence[ResolvedFeature], dialect: Dialect) -> str:
    """SELECT the equivalence keys k0.. of every target of a batch, in batch order."""
    return template("target_keys").format(keys=_keys(features, TARGET_ALIAS, dialect), targets=targets)


# -- standalone queries: cohortsql's heavy step to run where the data live ---------------------


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
        aggregates=_select_list(aggregates, dialect),
        source=source,
        condition=condition,
        prediction=dialect.quote(prediction),
        **_subject_fields(resolved, id, target_predicate, custom and variant == "histogram", dialect),
    )
    if variant == "cells":
        return template("standalone_cells", keep_comments=True).format(
            keys=_keys(resolved, SUBJECT_ALIAS, dialect, statistics="st"),
            ordinals=_ordinals(len(resolved) + 2) + f", {len(resolved) + 6}",
            **fields,
        )
    parameters = [statistics_parameters(feature, "st", dialect) for feature in resolved]
    words = mask_words(resolved, parameters, dialect)
    ordinals = _ordinals(len(words) + 2) + f", {len(words) + 6}"
    return template("standalone_histogram", keep_comments=True).format(
        masks=_aliased_masks(words),
        weighted=_standalone_weighted(resolved, dialect, collapse=variant == "collapsed"),
        ordinals=ordinals,
        **fields,
    )


def _standalone_weighted(features: Sequence[ResolvedFeature], dialect: Dialect, *, collapse: bool) -> str:
    sums = "sum(__cohort_y) AS __cohort_sum, sum(__cohort_y * __cohort_y) AS __cohort_sum2"
    if not collapse:
        return "SELECT *, 1 AS __cohort_count, __cohort_y AS __cohort_sum, __cohort_y * __cohort_y AS __cohort_sum2\nFROM subjects"
    columns = ", ".join(dialect.quote(feature.column) for feature in features)
    return f"SELECT {columns}, count(*) AS __cohort_count, {sums}\nFROM subjects\nGROUP BY {_ordinals(len(features))}"


# -- baseline Shapley: the mean baseline and the realism of hybrid points ---------------------

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
