"""How an audit groups the targets by a protected attribute (`Grouping`): by its levels, or a numeric
attribute with many values by quantile groups of the targets or given edges, each labelled with its
range; the cohort keys that level a column's values as the engines compare them."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from cohortsql.errors import CohortError
from cohortsql.results.cohort import CohortShapleyResult

QUANTILE_GROUPS = 4
"""A numeric protected attribute with more distinct values among the targets than this is read in
this many quantile groups of the targets (quartiles), each labelled with its range."""

LABEL_DIGITS = 4
"""Significant digits of a quantile group's edges in its label, unless more are needed to tell
neighbouring edges apart (incomes of 1,000,000 to 1,000,099 need seven)."""


@dataclass(frozen=True)
class Grouping:
    """Each target's group of one protected attribute: its level, its label, and how they were made."""

    levels: list[str | None]
    """The groups' levels, in order (levels sorted by value, or quantile groups from low to high), as
    text; None for the group of missing values (NULL, and NaN, which every cohort treats as NULL)."""
    labels: list[str]
    """The same groups for people: text levels quoted (``'null'`` is text, ``missing`` is NULL),
    numbers as numbers, quantile groups as their ranges."""
    number: np.ndarray
    """Each target's group (an index into `levels`)."""
    grouping: str
    """``level`` (each value its own group), ``quantile group`` (numbers in ranges of the targets'
    quantiles) or ``bins`` (numbers in ranges between the caller's edges, ``protected_bins``)."""
    edges: np.ndarray | None = None
    """The ranges' edges of a ``quantile group`` (the targets' least value, the inner quantiles, the
    greatest) or of ``bins`` (the caller's); None for ``level``."""
    bins: np.ndarray | None = None
    """With ``bins``: the caller's bins the targets fall in (0: under the first edge), one per group
    of a value."""

    def assign(self, values: pl.Series) -> np.ndarray:
        """The group of each of `values` (the attribute's values in any rows, compared as the cohorts
        compare them), by the same rules as the targets'; -1 for a value of no target's group (a level
        no target has, a bin no target falls in, a missing value when no target misses it)."""
        keys = cohort_keys(values)
        missing = keys.is_null().to_numpy()
        missing_group = len(self.levels) - 1 if self.levels and self.levels[-1] is None else -1
        if self.edges is None:
            lookup = {level: index for index, level in enumerate(self.levels) if level is not None}
            number = np.array([lookup.get(_level_text(value), -1) for value in keys.to_list()], dtype=np.int64)
        else:
            numbers = keys.cast(pl.Float64).fill_null(np.nan).to_numpy()
            if self.bins is None:  # quantile groups: values beyond the targets' range in the first and last
                number = np.searchsorted(self.edges[1:-1], numbers, side="right").astype(np.int64)
            else:
                drawn = np.searchsorted(self.edges, numbers, side="right")
                found = np.searchsorted(self.bins, drawn).clip(max=len(self.bins) - 1)
                number = np.where(self.bins[found] == drawn, found, -1).astype(np.int64)
        number[missing] = missing_group
        return number


def cohort_keys(values: pl.Series) -> pl.Series:
    """`values` as the cohorts compare them: NaN is missing (NULL), and -0.0 is 0.0 (``exact`` finds
    them equal); infinities are values. Text, including the text ``'null'``, stays text."""
    if values.dtype.is_float():
        values = values.fill_nan(None) + 0.0  # adding 0.0 turns -0.0 into 0.0
    return values


def grouping(
    values: pl.Series, groups: int | tuple[float, ...] = QUANTILE_GROUPS, counts: np.ndarray | None = None
) -> Grouping:
    """The targets' groups of a protected attribute, from its values as the cohorts compare them
    (`cohort_keys`): each value its own group (missing values together), or, for numbers with more
    than `groups` distinct values, `groups` quantile groups of the targets (infinities in the first and
    last); `groups` given as edges, the ranges between them (`_binned`). With `counts`, each value
    stands for that many rows (the quantiles are the rows')."""
    keys = cohort_keys(values)
    numeric = keys.dtype.is_numeric() and keys.dtype != pl.Boolean
    missing = keys.is_null().to_numpy()
    if isinstance(groups, tuple):
        if not numeric:
            raise CohortError(
                f"protected_bins gives edges for {values.name!r}, which holds {keys.dtype} values, not numbers"
            )
        made = _binned(keys, np.asarray(groups, dtype=np.float64), missing)
    elif numeric and keys.drop_nulls().n_unique() > groups:
        numbers = keys.cast(pl.Float64).fill_null(np.nan).to_numpy()
        present = numbers[~missing]
        rows = present if counts is None else np.repeat(present, counts[~missing])
        finite = rows[np.isfinite(rows)]
        inner = np.unique(np.quantile(finite, np.linspace(0, 1, groups + 1))[1:-1]) if finite.size else np.zeros(0)
        edges = np.concatenate(
            [[present.min()], inner[(inner > present.min()) & (inner < present.max())], [present.max()]]
        )
        texts = _edge_texts(edges)
        labels = [
            f"[{low}, {high}{']' if index == len(edges) - 2 else ')'}"
            for index, (low, high) in enumerate(zip(texts[:-1], texts[1:]))
        ]
        made = Grouping(list(labels), labels, np.zeros(0, dtype=np.int64), "quantile group", edges)
    else:
        present_levels = keys.drop_nulls().unique().sort().to_list()
        levels: list[str | None] = [_level_text(level) for level in present_levels]
        text = keys.dtype in (pl.String, pl.Categorical, pl.Enum)
        labels = [repr(level) if text else str(level) for level in levels]
        made = Grouping(levels, labels, np.zeros(0, dtype=np.int64), "level")
    if missing.any():
        made = replace(made, levels=[*made.levels, None], labels=[*made.labels, "missing"])
    return replace(made, number=made.assign(values))


def targets_grouping(result: CohortShapleyResult, name: str, groups: int | tuple[float, ...]) -> Grouping:
    """The groups of attribute `name` among the run's targets that count in its averages (a sample's,
    not the ids included beside it), with every target's group (-1 for an included target whose value
    is in none of them)."""
    values = result.targets[name]
    made = grouping(values.filter(pl.Series(result.in_sample)), groups)
    return replace(made, number=made.assign(values))


def _binned(keys: pl.Series, edges: np.ndarray, missing: np.ndarray) -> Grouping:
    """The targets' groups between the caller's `edges` e_1 < ... < e_k: x < e_1, e_i <= x < e_i+1,
    x >= e_k (infinities in the first and last); groups no target falls in are left out (the group of
    missing values is added by `grouping`)."""
    numbers = keys.cast(pl.Float64).fill_null(np.nan).to_numpy()
    drawn = np.searchsorted(edges, numbers, side="right")
    texts = _edge_texts(edges)
    every = [f"< {texts[0]}"] + [f"[{low}, {high})" for low, high in zip(texts[:-1], texts[1:])] + [f">= {texts[-1]}"]
    present = np.unique(drawn[~missing])
    labels = [every[index] for index in present]
    return Grouping(list(labels), labels, np.zeros(0, dtype=np.int64), "bins", edges, present)


def _level_text(value: object) -> str:
    """A level's value as text: numbers in their shortest exact form, booleans as SQL writes them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value + 0.0) if isinstance(value, float) else str(value)  # -0.0 is 0.0, as the cohorts find


def _edge_texts(edges: np.ndarray) -> list[str]:
    """Quantile edges as text: whole numbers as integers, else `LABEL_DIGITS` significant digits, or as
    many more as tell every two neighbouring edges apart."""
    finite = edges[np.isfinite(edges)]
    if np.all(finite == np.round(finite)) and np.all(np.abs(finite) < 2**53):  # whole numbers: as integers
        return [str(int(edge)) if np.isfinite(edge) else str(edge) for edge in edges]
    for digits in range(LABEL_DIGITS, 18):
        texts = [f"{edge:.{digits}g}" for edge in edges]
        if len(set(texts)) == len(texts):
            return texts
    return [repr(float(edge)) for edge in edges]
