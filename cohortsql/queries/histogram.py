"""Similarity tests and the mask histogram, the pairwise path's one step that touches every subject:
for a batch of targets, m = sum_j z_tj(x_sj) << j per subject, then GROUP BY target, mask.
"""

from __future__ import annotations

from collections.abc import Sequence

from cohortsql.dialects import Dialect
from cohortsql.queries.common import SUBJECT_ALIAS, TARGET_ALIAS, ordinals
from cohortsql.queries.measures import DRAWS_PER_HASH, measure_sums, measure_values, replicate_sums
from cohortsql.queries.statistics import literal_parameters
from cohortsql.queries.templates import template
from cohortsql.request.features import ResolvedFeature
from cohortsql.request.measures import Measures
from cohortsql.request.similarity import ParameterSql, SqlPredicate

MASK_WORD_BITS = 63
"""Similarity masks are split into BIGINT words of 63 bits (never negative), so any d fits, on any engine."""


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
    parameters: Sequence[ParameterSql] | None = None,
    draw_groups: bool = False,
) -> str:
    """GROUP BY target, mask words -> the sums of `measures` for every target in relation `targets`.

    `subjects` has the measure columns: collapsed identical subjects, or (not `collapsed`) every
    subject on its own; with `draw_groups`, one row per group of four bootstrap replicates (see
    ``sql/replicate_subjects.sql``), and the histogram is grouped by ``draw_group`` too. The
    features' whole-table `parameters` are literals unless given (the self-contained query reads
    them from its statistics)."""
    if parameters is None:
        parameters = [literal_parameters(feature, dialect) for feature in features]
    words = mask_words(features, parameters, dialect)
    masks = aliased_masks(words)
    if draw_groups:
        masks += f",\n    {SUBJECT_ALIAS}.__cohort_draw_group AS draw_group"
        sums = replicate_sums(measures, dialect)
    else:
        sums = measure_sums(measures, "collapsed" if collapsed else "weighted")
    return template("mask_histogram").format(
        masks=masks,
        sums=sums,
        subjects=subjects,
        targets=targets,
        ordinals=ordinals(len(words) + 1 + draw_groups),
    )


def pair_inputs(
    subjects: str, features: Sequence[ResolvedFeature], measures: Measures, dialect: Dialect, *, collapsed: bool
) -> str:
    """The subjects as an engine reads them to build the mask histogram outside SQL (see
    ``sql/pair_inputs.sql``): the feature columns, then one DOUBLE per sum that the row adds to it."""
    values = measure_values(measures, "collapsed" if collapsed else "weighted")
    return template("pair_inputs").format(
        columns=",\n    ".join(f"{SUBJECT_ALIAS}.{dialect.quote(feature.column)}" for feature in features),
        measures=",\n    ".join(
            f"CAST({'1' if value is None else value} AS DOUBLE) AS {dialect.quote(name)}"
            for name, value in values.items()
        ),
        subjects=subjects,
    )


def histogram_sums(measures: Measures, *, draw_groups: bool) -> int:
    """How many sums a row of `mask_histogram` carries."""
    if draw_groups:
        return (1 + measures.outcomes) * (1 + DRAWS_PER_HASH)
    return measures.weightings + measures.games


def aliased_masks(words: Sequence[str]) -> str:
    return ",\n    ".join(f"{word} AS mask{index}" for index, word in enumerate(words))
