"""Cohort Shapley values computed by the engine from mask histograms: the superset-sum transform as
passes of SQL, each cohort's value, and the Shapley weighting as a join with a literal table of weights
(docs/design.md §2, "The values query"). Pure renderers: nothing here runs a query.

The histogram holds, per target t and similarity mask m, the weight W and the sum S of y - mean of the
subjects with that mask. The cohort C_{t,u} is every subject whose mask contains u, so its sums are
superset sums of the histogram: `superset_passes` computes them in passes over groups of
`BITS_PER_PASS` bits (each row adds its sums to the subsets it holds of the group, then a GROUP BY
merges them), which never holds more than 2^d rows per target. `cohort_games` divides, and
`shapley_steps` weights every set's value as in `cohortsql.numeric.shapley.shapley_values`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from cohortsql.dialects import Dialect
from cohortsql.queries.steps import Step, with_query
from cohortsql.queries.templates import template

BITS_PER_PASS = 5
"""Mask bits per pass of the superset-sum transform: fewer passes, each expanding a row into the
2^|G ∩ u| subsets it holds of its group G of bits. Measured on Boston (506 targets x 13 features,
DuckDB 2.0, 2 cores, median of 3, ``python benchmarks/bench_values_sql.py``): 1 bit a pass 1.96 s,
2 bits 1.61 s, 3 bits 1.48 s, 4 bits 1.45 s, 5 bits 1.39 s, 7 bits 1.59 s, every bit in one pass
(each mask expanded into all of its subsets) 2.06 s; the library's own path took 0.18 s in that run."""


def superset_passes(histogram: str, d: int) -> list[Step]:
    """Steps ``lattice_0`` .. ``lattice_P``: the histogram's rows (target, u, w, s) and then, after pass
    p over bits p*g .. p*g + g - 1, sums over masks that contain u on the bits passed. The last step
    holds every cohort's weight and sum. `histogram` has columns target, mask0, w0 and s0_0; g is
    `BITS_PER_PASS`, read when called (the benchmark varies it)."""
    bits_per_pass = BITS_PER_PASS
    steps = [Step("lattice_0", f"SELECT target, mask0 AS u, w0 AS w, s0_0 AS s\nFROM {histogram}")]
    for number, first in enumerate(range(0, d, bits_per_pass), start=1):
        bits = range(first, min(d, first + bits_per_pass))
        subsets = ", ".join(f"({sum(1 << bit for bit in chosen)})" for chosen in _subsets(bits))
        steps.append(
            Step(
                f"lattice_{number}",
                template("superset_pass").format(previous=steps[-1].name, subsets=subsets),
            )
        )
    return steps


def _subsets(bits: Sequence[int]) -> list[tuple[int, ...]]:
    return [chosen for size in range(len(bits) + 1) for chosen in itertools.combinations(bits, size)]


def cohort_games(lattice: str) -> str:
    """SELECT target, u, v: every cohort's value v(u) = S(u) / W(u) - S(0) / W(0) (0 for the empty set),
    so that sums of y centred on any constant (the library's pilot, the query's mean) give one game."""
    return template("cohort_games").format(lattice=lattice)


def game_steps(histogram: str, d: int) -> list[Step]:
    """`superset_passes` over relation `histogram`, then step ``games``: every cohort's value."""
    steps = superset_passes(histogram, d)
    return [*steps, Step("games", cohort_games(steps[-1].name))]


VALUES = {"shapley": "g.v", "shapley_squared": "g.v * g.v"}
"""The values of every target's game: its Shapley values, and those of its squared game."""


def values_query(histogram: str, features: Sequence[str], dialect: Dialect) -> str:
    """SELECT id, feature, shapley, shapley_squared for every target of relation `histogram` (columns
    target, mask0, w0, s0_0), computed wholly in SQL: for engines that run no Python beside the data."""
    steps = [*game_steps(histogram, len(features)), *shapley_steps("games", features, VALUES, dialect)]
    return with_query(steps, "SELECT target AS id, feature, shapley, shapley_squared\nFROM shapley")


def variance_game(games: str, targets: str, weight: str) -> str:
    """SELECT the variance game v_var(u), the targets' weighted mean of v_t(u)^2, as one game (target 0);
    `weight` is the SQL of a target's weight in relation `targets` (aliased ``t``)."""
    return template("variance_game").format(games=games, targets=targets, weight=weight)


def shapley_weights(d: int, dialect: Dialect) -> str:
    """The literal rows (|u|, inside, outside) of `shapley_terms`: inside = w(|u| - 1) + w(|u|) and
    outside = w(|u|), with w(s) = 1 / (d C(d - 1, s)) and w(-1) = w(d) = 0."""
    weight = [0.0] + [1.0 / (d * math.comb(d - 1, size)) for size in range(d)] + [0.0]  # weight[s + 1] = w(s)
    return ", ".join(
        f"({size}, {dialect.number(weight[size] + weight[size + 1])}, {dialect.number(weight[size + 1])})"
        for size in range(d + 1)
    )


def set_size(d: int) -> str:
    """SQL of |u|, the number of bits set in the column ``u`` (no engine-specific popcount)."""
    return " + ".join(f"CASE WHEN (u & {1 << bit}) <> 0 THEN 1 ELSE 0 END" for bit in range(d))


def shapley_steps(games: str, features: Sequence[str], values: dict[str, str], dialect: Dialect) -> list[Step]:
    """Steps ``terms`` and ``shapley``: the Shapley values of every game in relation `games` (target, u
    and a column per game value), for each of `values` (output column -> SQL of a game over the columns
    of `games`, e.g. ``v`` and ``v * v``). ``shapley`` has target, position, feature and the values."""
    d = len(features)
    terms = ",\n    ".join(
        f"({sql}) * k.inside AS inside_{name},\n    ({sql}) * k.outside AS outside_{name}"
        for name, sql in values.items()
    )
    rows = ", ".join(
        f"({position}, {1 << position}, {dialect.string(feature)})" for position, feature in enumerate(features)
    )
    return [
        Step(
            "terms",
            template("shapley_terms").format(
                terms=terms, size=set_size(d), games=games, weights=shapley_weights(d, dialect)
            ),
        ),
        Step(
            "shapley",
            template("shapley_sums").format(
                values=",\n    ".join(f"c.inside_{name} - o.outside_{name} AS {name}" for name in values),
                inside=", ".join(f"sum(m.inside_{name}) AS inside_{name}" for name in values),
                outside=", ".join(f"sum(outside_{name}) AS outside_{name}" for name in values),
                terms="terms",
                features=rows,
            ),
        ),
    ]


def finished_by_function(histogram: str, features: Sequence[str], function: str, dialect: Dialect) -> str:
    """SELECT id, feature, shapley, shapley_squared (DuckDB): each target's histogram (columns target,
    mask0, w0, s0_0) aggregated into lists for the scalar function `function` that
    `cohortsql.register` adds, its values unnested in feature order (see ``sql/function_values.sql``)."""
    names = "[" + ", ".join(dialect.string(feature) for feature in features) + "]"
    return template("function_values").format(function=function, features=names, histogram=histogram)
