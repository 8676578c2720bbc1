"""The integrated path's one step that touches every subject (``sql/integrated_histogram.sql``): for a
batch of targets, each subject's count k of players it is not similar on, and GROUP BY target, k with
every measure's sum, in total and per player (`cohortsql.numeric.integrated`); and the refinement
curves of an attribution's order (``sql/rank_histogram.sql``): GROUP BY target, the smallest (or
largest) rank of a player the subject is not similar on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from cohortsql.dialects import Dialect
from cohortsql.queries.histogram import similarity_test
from cohortsql.queries.measures import MeasureSource, measure_values
from cohortsql.queries.statistics import literal_parameters
from cohortsql.queries.templates import template
from cohortsql.request.features import ResolvedFeature
from cohortsql.request.measures import Measures
from cohortsql.request.similarity import ParameterSql


def player_name(name: str, player: int) -> str:
    """The histogram's column of sum `name` over the subjects not similar on `player`."""
    return f"{name}_p{player}"


def balanced_sum(terms: Sequence[str]) -> str:
    """terms[0] + terms[1] + ... as a balanced tree of additions: a chain of 2,000 would exceed an
    engine's expression depth (DuckDB's is 1,000)."""
    level = list(terms)
    while len(level) > 1:
        level = [f"({level[i]} + {level[i + 1]})" if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
    return level[0] if level else "0"


class HistogramInputs(NamedTuple):
    """What both histograms read besides the targets: the `subjects` relation (its measures from
    `source`), the features and the players they form, and the dialect. The tests' parameters are the
    features' literal ones unless given (`cohortsql.queries.standalone` reads them from a relation)."""

    subjects: str
    features: Sequence[ResolvedFeature]
    players: Sequence[Sequence[int]]
    measures: Measures
    dialect: Dialect
    source: MeasureSource
    parameters: Sequence[ParameterSql] | None = None

    def dissimilar_flags(self) -> list[str]:
        """n_j per player j: 0 when the subject is similar to the target on every feature of the player, else 1."""
        dialect = self.dialect
        parameters = self.parameters or [literal_parameters(feature, dialect) for feature in self.features]
        flags = []
        for members in self.players:
            test = " AND ".join(similarity_test(self.features[index], parameters[index], dialect) for index in members)
            flags.append(f"CASE WHEN {test} THEN CAST(0 AS SMALLINT) ELSE CAST(1 AS SMALLINT) END")
        return flags

    def listed_values(self, names: Sequence[str]) -> list[str]:
        """Each measure of `names` as a column of the subjects' rows (1 for an unweighted count)."""
        values = measure_values(self.measures, self.source)
        return [
            f"{'CAST(1 AS DOUBLE)' if values[name] is None else values[name]} AS {self.dialect.quote(name)}"
            for name in names
        ]


def integrated_histogram(inputs: HistogramInputs, targets: str) -> str:
    """GROUP BY target, k (dissimilar players) -> every measure's sum, in total and over the subjects
    not similar on each player, for every target of relation `targets`."""
    dialect, players = inputs.dialect, len(inputs.players)
    names = list(measure_values(inputs.measures, inputs.source))
    sums = []
    for name in names:
        quoted = dialect.quote(name)
        sums.append(f"sum({quoted}) AS {quoted}")
        sums += [
            f"sum(n{player} * {quoted}) AS {dialect.quote(player_name(name, player))}" for player in range(players)
        ]
    return template("integrated_histogram").format(
        k=balanced_sum([f"n{player}" for player in range(players)]),
        sums=",\n    ".join(sums),
        values=",\n        ".join(inputs.listed_values(names)),
        flags=",\n        ".join(f"{flag} AS n{player}" for player, flag in enumerate(inputs.dissimilar_flags())),
        subjects=inputs.subjects,
        targets=targets,
    )


def rank_column(player: int) -> str:
    """The targets' column holding player `player`'s rank in the target's order (1: first)."""
    return f"__cohort_r{player}"


def rank_histogram(inputs: HistogramInputs, targets: str, *, largest: bool) -> str:
    """GROUP BY target, the smallest (or `largest`) rank of a player the subject is not similar on ->
    the sums of the data's own weighting, for every target of relation `targets` (which carries each
    player's rank, `rank_column`); subjects similar on every player get rank d + 1 (or 0)."""
    measures, dialect, players = inputs.measures, inputs.dialect, len(inputs.players)
    none = 0 if largest else players + 1
    ranks = [
        f"CASE WHEN {flag} = 0 THEN {none} ELSE t.{rank_column(player)} END AS r{player}"
        for player, flag in enumerate(inputs.dissimilar_flags())
    ]
    names = [measures.weight_name(0), *(measures.sum_name(outcome, 0) for outcome in range(measures.outcomes))]
    combine = "greatest" if largest else "least"
    terms = [f"r{player}" for player in range(players)]
    return template("rank_histogram").format(
        rank=terms[0] if len(terms) == 1 else f"{combine}({', '.join(terms)})",
        sums=",\n    ".join(f"sum({dialect.quote(name)}) AS {dialect.quote(name)}" for name in names),
        values=",\n        ".join(inputs.listed_values(names)),
        ranks=",\n        ".join(ranks),
        subjects=inputs.subjects,
        targets=targets,
    )
