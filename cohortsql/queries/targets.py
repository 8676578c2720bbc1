"""Choosing and reading target rows: every row, a predicate's, a seeded random sample, or by id."""

from __future__ import annotations

import math
from collections.abc import Sequence

from cohortsql.dialects import Dialect
from cohortsql.queries.measures import target_weight
from cohortsql.queries.templates import template
from cohortsql.request.measures import Measures


def target_rows(subjects: str, condition: str, measures: Measures, at_most: int | None = None) -> str:
    """The subject rows that satisfy `condition` (every column and their weights), in id order; `at_most`
    bounds how many can (see `top_rows`)."""
    return template("targets").format(
        subjects=subjects, condition=condition, weights=target_weight(measures), limit=top_rows(at_most)
    )


def top_rows(at_most: int | None) -> str:
    """A LIMIT clause for an ordered read of rows chosen by id, `at_most` of them (ids are unique):
    a sort with a limit is a top-N, which Spark runs in one job where a whole sort samples the rows in a
    job of its own, then shuffles them (100 ids of 1,000,000 rows on local[2]: 0.2 s against 0.4-0.5 s)."""
    return "" if at_most is None else f"\nLIMIT {int(at_most)}"


def numbered_targets(targets: str) -> str:
    """The target rows of query `targets`, each numbered by its own id (``__cohort_batch``, as the
    histogram reads a batch of targets): for a relation of every target at once."""
    return f"SELECT *, __cohort_id AS __cohort_batch FROM ({targets}) AS chosen"


def row_count(relation: str, condition: str = "TRUE") -> str:
    """SELECT n, the number of rows of `relation` where `condition` holds."""
    return f"SELECT count(*) AS n FROM {relation} WHERE {condition}"


def predicate_type(relation: str, predicate: str) -> str:
    """SELECT the caller's `predicate` over `relation`'s columns without reading a row: its type."""
    return f"SELECT ({predicate}) AS __cohort_predicate FROM {relation} LIMIT 0"


def target_condition(target_predicate: bool, membership: str | None) -> str:
    """Which subjects are targets: all, those of the caller's predicate, and those of an id `membership` test."""
    conditions = ["__cohort_target"] if target_predicate else []
    if membership is not None:
        conditions.append(membership)
    return " AND ".join(conditions) or "TRUE"


def id_membership(
    column: str,
    ids: Sequence[object] | None,
    table: str | None,
    dialect: Dialect,
    bounds: tuple[int, int] | None = None,
) -> str:
    """`column` IN the given `ids` (as literals), or IN the ``id`` column of relation `table`; with the
    `bounds` of integer ids (their least and greatest), also BETWEEN them: a range by which a scan skips
    blocks (Spark's cache and Parquet's row groups by their min and max, DuckDB's zone maps), which an
    IN list does not give Spark: a call's read of 100 ids of 1,000,000 cached rows (local[2], medians of
    10 alternated) took 0.286 s, 0.262 s with it (the rest is the job's own cost)."""
    if ids is not None:
        listed = f"({', '.join(dialect.literal(value) for value in ids)})"
    else:
        listed = f"(SELECT id FROM {table})"
    if bounds is None:
        return f"{column} IN {listed}"
    low, high = (dialect.literal(bound) for bound in bounds)
    return f"{column} BETWEEN {low} AND {high} AND {column} IN {listed}"


def sampled_targets(subjects: str, condition: str, size: int, seed: int, measures: Measures, dialect: Dialect) -> str:
    """`size` targets drawn at random among the rows satisfying `condition`, identically on every engine."""
    return template("sampled_targets").format(
        weights=target_weight(measures),
        subjects=subjects,
        condition=condition,
        size=int(size),
        seed=dialect.string(f"{int(seed)}:"),
        text=dialect.text_type,
    )


def kept_on_hash(fraction: float, seed: int, id: str, dialect: Dialect) -> str:
    """The condition that keeps about `fraction` of the rows, each on its own hash with `seed` (no sort:
    bounded memory on any table), identically on every engine: the first 32 bits of md5('<seed>:row:<id>')
    below `fraction` of 2^32, `id` the SQL of the row's id; every row when `fraction` is 1 or more. The
    bits are compared as text: the hash's 32 lower-case hexadecimal digits against the threshold's 8
    (digits sort as their values, and a hash that begins with the threshold sorts after it, being
    longer). Spark read them as a number through conv() in 0.3-0.4 s more of a scan of 1,000,000
    cached rows; DuckDB takes 0.19 s for 2,000,000 rows against 0.17 s with its md5_number (0.21 s
    with a substr of the first 8 digits)."""
    threshold = math.ceil(fraction * 2.0**32)
    if threshold >= 2**32:
        return "TRUE"
    key = f"{dialect.string(f'{int(seed)}:row:')} || CAST({id} AS {dialect.text_type})"
    return f"md5({key}) < {dialect.string(f'{threshold:08x}')}"


def sampled_data(source: str, columns: Sequence[str], id: str, membership: str, dialect: Dialect) -> str:
    """The rows of `source` (the given columns, as they are) passing `membership` (`kept_on_hash`), in no
    order (see ``sql/sampled_data.sql``)."""
    return template("sampled_data").format(
        columns=", ".join(dialect.quote(column) for column in columns), source=source, id=id, membership=membership
    )


def target_data(
    source: str, columns: Sequence[str], id: str, membership: str, dialect: Dialect, at_most: int | None = None
) -> str:
    """The rows of `source` (the given columns, as they are) passing the id `membership` test, in id order;
    `at_most` bounds how many can (see `top_rows`)."""
    return template("target_data").format(
        columns=", ".join(dialect.quote(column) for column in columns),
        source=source,
        id=id,
        membership=membership,
        limit=top_rows(at_most),
    )
