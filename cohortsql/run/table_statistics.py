"""The whole-table statistics of one call, read once from the statistics query's row: the number of
subjects, the (weighted) moments of each explained column, and each feature's own statistics, which
`cohortsql.run.feature_statistics` completes and `cohortsql.request.features.resolve_feature` reads."""

from __future__ import annotations

from dataclasses import dataclass

from cohortsql._typing import Row


@dataclass(frozen=True)
class TableStatistics:
    """The whole-table statistics of one call, parsed once from the statistics query's row."""

    subjects: int
    """n: rows of positive weight."""
    total_weight: float
    """Their total case weight (n when unweighted)."""
    distinct_rows: int | None
    """Distinct predictor rows (estimated; None when rows cannot be merged, under ``sql:`` kinds)."""
    centred_means: tuple[float, ...]
    """ybar_k - pilot_k of each explained column (weighted when the rows are)."""
    variances: tuple[float, ...]
    """The (weighted) population variance of each explained column."""
    features: tuple[Row, ...]
    """Each feature's own statistics by name (nulls, levels, the kind's parameters)."""

    @classmethod
    def parse(cls, row: Row, outcomes: int, features: int, *, weighted: bool) -> TableStatistics:
        """From the row of `cohortsql.queries.statistics.statistics_aggregates`' aliases."""
        means, variances = [], []
        for index in range(outcomes):
            if weighted:
                total = float(row["total_weight"])
                mean = float(row[f"weighted_sum:{index}"]) / total
                variance = max(0.0, float(row[f"weighted_squares:{index}"]) / total - mean * mean)
            else:
                mean, variance = float(row[f"mean:{index}"]), float(row[f"variance:{index}"])
            means.append(mean)
            variances.append(variance)
        per_feature: list[dict[str, object]] = [{} for _ in range(features)]
        for key, value in row.items():  # one pass: "<feature>:<statistic>" (a scan per feature is O(d^2))
            position, colon, name = key.partition(":")
            if colon and position.isdigit() and int(position) < features:
                per_feature[int(position)][name] = value
        return cls(
            subjects=int(row["subjects"]),
            total_weight=float(row["total_weight"] if weighted else row["subjects"]),
            distinct_rows=None if row.get("distinct_rows") is None else int(row["distinct_rows"]),
            centred_means=tuple(means),
            variances=tuple(variances),
            features=tuple(per_feature),
        )
