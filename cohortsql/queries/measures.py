"""What the histogram and the cells sum over a cohort (see `cohortsql.request.measures`): each subject's
weight under every weighting (case weights, Bayesian-bootstrap draws from an md5 hash) and its
weighted explained values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from cohortsql.dialects import Dialect
from cohortsql.queries.common import SUBJECT_ALIAS, ordinals
from cohortsql.queries.templates import template
from cohortsql.request.features import ResolvedFeature
from cohortsql.request.measures import Measures

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


MeasureSource = Literal["subjects", "weighted", "collapsed"]
"""Where the sums of the measures come from: the subjects' own columns (weights computed), the
weighted subjects (their weights stored, see `weighted_subjects`), or collapsed subjects (every sum stored)."""


def row_measures(measures: Measures, *, stored_weights: bool, alias: str = "") -> dict[str, str]:
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


def drawn(subjects: str, measures: Measures, dialect: Dialect) -> str:
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
    computed = row_measures(measures, stored_weights=False)
    listed = ", ".join(f"{computed[f'__cohort_{name}']} AS __cohort_{name}" for name in measures.weight_names)
    return template("weighted_subjects").format(measures=listed, subjects=drawn(subjects, measures, dialect))


def collapsed_subjects(subjects: str, features: Sequence[ResolvedFeature], measures: Measures, dialect: Dialect) -> str:
    """SELECT identical predictor rows collapsed into one with the sums of their measures."""
    columns = ", ".join(dialect.quote(feature.column) for feature in features)
    sums = ", ".join(f"sum({sql}) AS {name}" for name, sql in row_measures(measures, stored_weights=False).items())
    return template("collapsed_subjects").format(
        columns=columns, sums=sums, subjects=drawn(subjects, measures, dialect), ordinals=ordinals(len(features))
    )


def target_weight(measures: Measures) -> str:
    """The select list of a target's own weight ``__cohort_w0`` (its case weight, or 1); its
    replicates' weights multiply it by the draws of `target_draws`."""
    weight = "__cohort_weight" if measures.weighted else "CAST(1 AS DOUBLE)"
    return f"{weight} AS __cohort_{measures.weight_name(0)}"


def target_draws(targets: str, groups: str, measures: Measures, dialect: Dialect) -> str:
    """SELECT position, draw_group, e0 .. e3: the bootstrap draws of the targets of relation `targets`
    (numbered 0.. in ``__cohort_id`` order, the order they are read in) for every hash group of
    relation `groups` (``__cohort_group``), in long form (see ``sql/target_draws.sql``)."""
    draws = ",\n    ".join(
        f"{draw_from_hash('__cohort_hash', part, dialect)} AS e{part}" for part in range(DRAWS_PER_HASH)
    )
    return template("target_draws").format(
        draws=draws, hash=draw_hash("g.__cohort_group", measures.seed, dialect), targets=targets, groups=groups
    )


def replicate_measures(measures: Measures, dialect: Dialect, alias: str = "s.") -> dict[str, str]:
    """What a row of subject `alias` (with ``__cohort_group`` g and ``__cohort_hash``, the md5 of g and
    its id) adds to each sum under a group of four replicates, by name: ``own_w`` and ``own_s<k>``, the
    data's own weighting (in group 0 only), and ``w<r>``, ``s<k>_<r>``, replicate b = 4g + 1 + r."""
    weight = f"{alias}__cohort_weight" if measures.weighted else "CAST(1 AS DOUBLE)"
    own = f"CASE WHEN {alias}__cohort_group = 0 THEN {weight} ELSE CAST(0 AS DOUBLE) END"
    columns = {"own_w": own}
    columns.update({f"own_s{k}": f"{own} * {alias}__cohort_y{k}" for k in range(measures.outcomes)})
    for part in range(DRAWS_PER_HASH):
        replicate = f"{weight} * {draw_from_hash(f'{alias}__cohort_hash', part, dialect)}"
        columns[f"w{part}"] = replicate
        columns.update({f"s{k}_{part}": f"{replicate} * {alias}__cohort_y{k}" for k in range(measures.outcomes)})
    return columns


def replicate_subjects(
    subjects: str,
    features: Sequence[ResolvedFeature],
    measures: Measures,
    groups: str,
    dialect: Dialect,
    *,
    collapsed: bool,
) -> str:
    """SELECT the subjects under every hash group of four replicates (relation `groups`): one row per
    subject and group, or, `collapsed`, per distinct predictor row and group (see
    ``sql/replicate_subjects.sql``); the sums of `replicate_measures` as ``__cohort_<name>``."""
    measured = replicate_measures(measures, dialect)
    if collapsed:
        columns = ", ".join(f"s.{dialect.quote(feature.column)}" for feature in features)
        listed = [f"sum({sql}) AS __cohort_{name}" for name, sql in measured.items()]
        grouping = f"GROUP BY {ordinals(len(features) + 1)}"
    else:
        columns, listed, grouping = "s.*", [f"{sql} AS __cohort_{name}" for name, sql in measured.items()], ""
    return template("replicate_subjects").format(
        columns=columns,
        measures=",\n    ".join(listed),
        hash=draw_hash("g.__cohort_group", measures.seed, dialect),
        subjects=subjects,
        groups=groups,
        grouping=grouping,
    )


def replicate_sums(measures: Measures, dialect: Dialect, alias: str = f"{SUBJECT_ALIAS}.") -> str:
    """The sums over rows of `replicate_subjects` of each of their measures, under its own name."""
    names = replicate_measures(measures, dialect)
    return ",\n    ".join(f"sum({alias}__cohort_{name}) AS {name}" for name in names)


def replicate_totals(relation: str, measures: Measures, dialect: Dialect) -> str:
    """SELECT draw_group and the sums of `replicate_sums` over every row of `relation` (rows of
    `replicate_subjects`) in that group: the totals of every weighting."""
    sums = replicate_sums(measures, dialect, alias="")
    return f"SELECT __cohort_draw_group AS draw_group, {sums} FROM {relation} GROUP BY __cohort_draw_group"


def measure_values(measures: Measures, source: MeasureSource) -> dict[str, str | None]:
    """What each subject row of relation `SUBJECT_ALIAS` (of kind `source`) adds to each of the
    histogram's sums, by the sum's name: None where it adds one (W_0 counts rows: without weights or
    replicates each row is one subject, and count(*) keeps DuckDB's perfect-hash aggregate cheap)."""
    alias = f"{SUBJECT_ALIAS}."
    computed = row_measures(measures, stored_weights=source == "weighted", alias=alias)
    values: dict[str, str | None] = {}
    for name in [*measures.weight_names, *measures.sum_names]:
        if name == measures.weight_name(0) and source != "collapsed" and measures.counted:
            values[name] = None
        elif source == "collapsed":
            values[name] = f"{alias}__cohort_{name}"
        else:
            values[name] = computed[f"__cohort_{name}"]
    return values


def measure_sums(measures: Measures, source: MeasureSource) -> str:
    """The histogram's (and the cells') sums of the subjects' measures (`measure_values`)."""
    return ",\n    ".join(
        f"CAST(count(*) AS DOUBLE) AS {name}" if value is None else f"sum({value}) AS {name}"
        for name, value in measure_values(measures, source).items()
    )


def measure_totals(subjects: str, measures: Measures, source: MeasureSource) -> str:
    """SELECT W_b and S_bk over every subject (see ``sql/measure_totals.sql``)."""
    return template("measure_totals").format(sums=measure_sums(measures, source), subjects=subjects)
