"""Features that are the explained column in disguise: a copy of the outcome (an observed value, a
rescaled or rounded score) or the label a probability was fitted to. Explaining a prediction by such a
column credits the column for being the answer, not a reason: with `similarity="all"` a table's label
column becomes a feature without anyone choosing it (a denial model's own `deny` label took 21.6% of
the variance explained on a public mortgage table), so each is named in a warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from cohortsql.errors import warn

COPY_SHARE = 0.95
"""A feature that alone accounts for this share of the explained column's variation among the
targets is taken for a copy of what is explained (the observed outcome, a label, another score)."""
FEW_LEVELS = 5
"""A feature with at most one level per this many targets is compared by its levels (the share of
variance between them); one with more, by its rank correlation (a rescaled or rounded copy)."""

COPY_MIN_ROWS = 30
"""Fewer rows than this support no claim of a copy: with 3 rows any feature of distinct values ranks
them as the explained column does (100% "explained"), and with k levels on n rows chance alone gives
a share of about (k - 1) / (n - 1). From 30 rows, a chance squared rank correlation of 0.95 has odds far
below 1 in a million, and a feature is judged by its levels only with at least `FEW_LEVELS` rows per
level (an eta^2 of 0.95 by chance then needs n / k below 1.05)."""

COPY_CHECK_ROWS = 20_000
"""Rows read to look for copies after Shapley effects (drawn at random beyond it): enough to place
rates and ten bins' calibration to about 0.01."""

COPY_CHECK_CELLS = 5_000_000
"""A wide table's check reads at most this many cells (rows x features), and at least
`COPY_CHECK_FEWEST` rows: at 1,024 features, 5,000 rows (0.5 s of a one-target call went to reading
20,000 rows of 1,025 columns twice and coding them)."""

COPY_CHECK_FEWEST = 5_000
"""The fewest rows the check reads: a calibrated label's rate then sits within 0.006 (one standard
deviation) of its probability's mean, well inside `LABEL_RATE_GAP` (at 2,000 rows it would be 0.009,
and one label in eight would go unnamed)."""


def copy_check_rows(features: int) -> int:
    """How many rows the copy check reads for a table of `features` features."""
    return max(COPY_CHECK_FEWEST, min(COPY_CHECK_ROWS, COPY_CHECK_CELLS // max(1, features)))


LABEL_RATE_GAP = 0.015
"""A two-level column is the label of a probability only if its rate is within this of the
probability's mean: a model fitted with an intercept reproduces its label's rate (to 1e-5 for
Titanic's logistic regression, 8e-5 for a gradient-boosted denial model; 0.011 at most on held-out
rows), while Titanic's `sex` is 0.037 away from the same model's mean and the mortgage table's
`selfemp` 0.003 (which is why the calibration below is needed too)."""
LABEL_CALIBRATION = 0.075
"""... and only if, in each tenth of the rows by the probability, the column's rate is on average
within this of the probability (the expected calibration error): 0.015-0.067 for the labels of
logistic, gradient-boosted and random-forest models of Titanic survival and mortgage denial, in and
out of sample; 0.077-0.18 for Titanic's `sex` and 0.058-0.10 for `selfemp` under the same models."""
LABEL_BINS = 10
LABEL_MIN_ROWS = 100
"""Fewer rows say too little about calibration to name a label."""


@dataclass(frozen=True)
class FittedLabel:
    """A two-level column that the explained column matches as a calibrated probability of one level."""

    name: str
    level: object
    rate: float
    """The share of rows at `level`."""
    mean: float
    """The explained column's mean."""
    calibration: float
    """The expected calibration error over `LABEL_BINS` equal-count bins of the explained column."""


def outcome_copies(targets: pl.DataFrame, features: Sequence[str], explained: np.ndarray) -> dict[str, float]:
    """The features that nearly determine the explained column among the targets, with the share of
    its variation each accounts for alone: for a feature of few levels, the variance between the
    levels' means over the whole variance (eta^2); for numbers of many values, the squared rank
    correlation (Spearman's). Boston's observed medv next to a model's prediction of it gives 0.97."""
    y = np.asarray(explained, dtype=float)
    finite = np.isfinite(y)
    if finite.sum() < COPY_MIN_ROWS or np.var(y[finite]) == 0:
        return {}
    columns = set(targets.columns)  # once: asked per feature, it costs d^2 at d = 1,024
    present = [name for name in features if name in columns]  # groups of features are no column
    if not present:
        return {}
    rows, y = targets.select(present).filter(pl.Series(finite)), y[finite]
    levels = _level_codes(rows)
    spread, mean = float(np.var(y)), float(np.mean(y))
    counts = {name: np.bincount(levels[name]) for name in present}
    few = {name for name in present if np.count_nonzero(counts[name]) <= len(y) // FEW_LEVELS}
    ranked = _rank_correlations(rows, [name for name in present if name not in few], y, levels)
    found = {}
    for name in present:
        held = counts[name] > 0
        if name in few:
            level_means = np.bincount(levels[name], weights=y)[held] / counts[name][held]
            share = float((counts[name][held] * (level_means - mean) ** 2).sum() / len(y)) / spread
        elif name in ranked:
            share = ranked[name]
        else:
            continue
        if np.isfinite(share) and share >= COPY_SHARE:
            found[name] = share
    return found


def _rank_correlations(
    rows: pl.DataFrame, names: Sequence[str], y: np.ndarray, levels: Mapping[str, np.ndarray]
) -> dict[str, float]:
    """The squared rank correlation (Spearman's) with `y` of each numeric column of `names`, over its rows
    of finite values when they are at least `COPY_MIN_ROWS`; NaN for a constant column. A column's
    average ranks come from its level codes (`levels`: `_level_codes`, whose codes follow the values'
    order): a level's rows hold the ranks after every lower level's, and share their mean. The columns
    with every value finite are correlated together in one product (a frame and two ranks a feature
    took 1 ms: 1.2 s of a call at 1,024 float features)."""
    shares: dict[str, float] = {}
    complete: list[str] = []
    for name in names:
        if not rows[name].dtype.is_numeric():
            continue
        kept = _finite_rows(rows[name])
        if kept.all():
            complete.append(name)
        elif np.count_nonzero(kept) >= COPY_MIN_ROWS:
            [shares[name]] = _squared_correlations(_average_ranks(levels[name][kept])[:, None], y[kept])
    if complete:
        every = np.column_stack([_average_ranks(levels[name]) for name in complete])
        shares |= dict(zip(complete, _squared_correlations(every, y)))
    return shares


def _finite_rows(column: pl.Series) -> np.ndarray:
    """Which rows of a numeric `column` hold a finite value (not NULL, NaN or infinite)."""
    if not column.null_count():  # most columns: no mask to build
        return np.isfinite(column.to_numpy()) if column.dtype.is_float() else np.ones(len(column), dtype=bool)
    kept = column.is_not_null().to_numpy()
    if column.dtype.is_float():
        kept &= np.isfinite(column.fill_null(0).to_numpy())
    return kept


def _average_ranks(codes: np.ndarray) -> np.ndarray:
    """Each row's rank among the rows (1 for the least), tied rows sharing their mean, from codes that
    follow the values' order."""
    counts = np.bincount(codes)
    return np.cumsum(counts)[codes] - (counts[codes] - 1) / 2


def _squared_correlations(ranks: np.ndarray, y: np.ndarray) -> list[float]:
    """The squared correlation of each column of `ranks` (rows, columns) with the ranks of `y`."""
    x, own = ranks - ranks.mean(axis=0), _average_ranks(np.unique(y, return_inverse=True)[1])
    own = own - own.mean()
    with np.errstate(invalid="ignore", divide="ignore"):  # constant ranks: no correlation to speak of
        correlation = (own @ x) / np.sqrt((x * x).sum(axis=0) * (own @ own))
    return (correlation**2).tolist()


_NARROW_INTEGERS = (pl.Boolean, pl.Int8, pl.Int16, pl.Int32, pl.UInt8, pl.UInt16, pl.UInt32)


def _level_codes(rows: pl.DataFrame) -> dict[str, np.ndarray]:
    """Each column's levels as codes 0, 1, ..., one per distinct value as a GROUP BY groups them (null
    one level, -0.0 with 0.0, NaN apart): a narrow integer or boolean column without nulls whose values
    span fewer than its rows is its values less their minimum; the others are ranked, all in one
    parallel query (a query per feature cost ~2 ms: 2 s for 1,024 features)."""
    codes: dict[str, np.ndarray] = {}
    for name in rows.columns:
        column = rows[name]
        if column.dtype in _NARROW_INTEGERS and column.null_count() == 0 and len(column):
            values = column.to_numpy().astype(np.int64)
            if int(values.max()) - int(values.min()) < len(values):
                codes[name] = values - values.min()
    ranked = [name for name in rows.columns if name not in codes]
    if ranked:
        dense = rows.select(pl.col(ranked).rank("dense").fill_null(0).cast(pl.Int64))
        codes |= {name: dense[name].to_numpy() for name in ranked}
    return codes


def fitted_label(rows: pl.DataFrame, features: Sequence[str], explained: np.ndarray) -> FittedLabel | None:
    """The two-level feature that the explained column, a probability (every value in [0, 1]), best
    matches as the probability of one of its levels, if any matches closely (`LABEL_RATE_GAP` and
    `LABEL_CALIBRATION`): the label the model was probably fitted to. A strong binary predictor is not
    calibrated so: Titanic's `sex` predicts survival well, but the probability of survival is not the
    probability of being female (0.16 from it on average in a tenth of the passengers against 0.055
    for `survived`). At most one column is named, the best calibrated."""
    p = np.asarray(explained, dtype=float)
    usable = np.isfinite(p)
    if usable.sum() < LABEL_MIN_ROWS or not ((p[usable] >= 0) & (p[usable] <= 1)).all() or np.ptp(p[usable]) == 0:
        return None
    best = None
    columns = set(rows.columns)
    for name in features:
        if name not in columns:
            continue
        column = rows[name]
        levels = column.drop_nulls().unique()
        if len(levels) != 2:
            continue
        present = usable & column.is_not_null().to_numpy()
        if present.sum() < LABEL_MIN_ROWS:
            continue
        for level in levels.to_list():
            at_level = (column == level).fill_null(False).to_numpy()[present].astype(float)
            found = _calibrated(name, level, p[present], at_level)
            if found is not None and (best is None or found.calibration < best.calibration):
                best = found
    return best


def _calibrated(name: str, level: object, p: np.ndarray, at_level: np.ndarray) -> FittedLabel | None:
    """`name = level` as the event whose probability `p` is, if its rate and its calibration say so."""
    rate, mean = float(at_level.mean()), float(p.mean())
    if abs(rate - mean) > LABEL_RATE_GAP:
        return None
    bins = np.array_split(np.argsort(p, kind="stable"), LABEL_BINS)
    calibration = sum(abs(at_level[rows].mean() - p[rows].mean()) * len(rows) for rows in bins) / len(p)
    if calibration > LABEL_CALIBRATION:
        return None
    return FittedLabel(name, level, rate, mean, float(calibration))


def warn_about_copies(rows: pl.DataFrame, features: Sequence[str], explained: np.ndarray, name: str | None) -> None:
    """Warn, naming each, about the features that nearly determine the explained column `name` (values
    `explained` on `rows`; `outcome_copies`) and the label it was probably fitted to (`fitted_label`),
    unless that is one of them."""
    copies = outcome_copies(rows, features, explained)
    label = fitted_label(rows, features, explained)
    what = "the explained column" if name is None else repr(name)
    for name, share in copies.items():
        warn(
            f"{name!r} alone accounts for {share:.0%} of the variation of {what}: it is probably a copy of what"
            " is explained (the observed outcome, a label or another score), not a predictor; leave it out of"
            " the features"
        )
    if label is not None and label.name not in copies:
        warn(
            f"{label.name!r} is probably the label {what} was fitted to: {what} reads as the probability that"
            f" {label.name} = {label.level!r} (its rate {label.rate:.1%} against a mean of {label.mean:.1%}, and"
            f" {label.calibration:.3f} apart on average in each tenth of the rows), so it would take credit for"
            f" being the answer, not a reason; leave {label.name!r} out of the features unless it is one"
        )
