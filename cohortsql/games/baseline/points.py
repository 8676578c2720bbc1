"""The targets and baselines of baseline Shapley as integer codes, and the hybrid rows the model reads.

Each feature's distinct values among the targets and baselines are numbered (in order of first
appearance); a point is the row of its d codes. Every hybrid point z_b(u) takes each feature's value
from the target or the baseline, so its codes index the same value lists: the model reads a hybrid
row as the values behind its codes (`model_frame`), the realism test as their prepared forms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql.request.features import ResolvedFeature


@dataclass(frozen=True)
class Points:
    """Targets and baselines as per-feature value codes."""

    names: tuple[str, ...]
    """The features, in order."""
    raw_values: tuple[pl.Series, ...]
    """Feature j's distinct values as the data hold them (what the model reads), in code order."""
    prepared_values: tuple[pa.Array, ...]
    """The same values as the similarity tests compare them (see `cohortsql.request.features.Representation`)."""
    target_codes: np.ndarray
    """(targets, d) codes of the targets."""
    baseline_codes: np.ndarray
    """(baselines, d) codes of the baselines."""

    def model_frame(self, codes: np.ndarray) -> pl.DataFrame:
        """The rows with the given (points, d) codes, one column per feature under its own name."""
        return pl.DataFrame(
            [
                values.gather(codes[:, j]).alias(name)
                for j, (name, values) in enumerate(zip(self.names, self.raw_values))
            ]
        )


def encode_points(
    features: Sequence[ResolvedFeature],
    targets: tuple[pl.DataFrame, pa.Table],
    baselines: tuple[pl.DataFrame, pa.Table],
) -> Points:
    """Number each feature's distinct values among the targets and the baselines.

    Each argument pairs the rows as the data hold them (columns under the features' names) with the
    same rows as the similarity tests compare them (under the features' prepared column names)."""
    raw = pl.concat(
        [frame.select(feature.name for feature in features) for frame in (targets[0], baselines[0])],
        how="vertical_relaxed",
    )
    prepared = pl.concat(
        [_frame(table.select([feature.column for feature in features])) for table in (targets[1], baselines[1])],
        how="vertical_relaxed",
    )
    codes, raw_values, prepared_values = [], [], []
    for feature in features:
        column = raw.select(feature.name).with_row_index("__cohort_row")
        firsts = column.group_by(feature.name, maintain_order=True).agg(pl.col("__cohort_row").first())
        code = column.join(
            firsts.select(feature.name).with_row_index("__cohort_code"),
            on=feature.name,
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )["__cohort_code"]
        codes.append(code.to_numpy().astype(np.int64))
        raw_values.append(firsts[feature.name])
        prepared_values.append(prepared[feature.column].gather(firsts["__cohort_row"]).to_arrow())
    matrix = np.column_stack(codes) if codes else np.zeros((raw.height, 0), dtype=np.int64)
    count = targets[0].height
    return Points(
        names=tuple(feature.name for feature in features),
        raw_values=tuple(raw_values),
        prepared_values=tuple(prepared_values),
        target_codes=matrix[:count],
        baseline_codes=matrix[count:],
    )


def _frame(table: pa.Table) -> pl.DataFrame:
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame
