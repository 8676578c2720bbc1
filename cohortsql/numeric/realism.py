"""Calibrating the similarity threshold from how realistic real and impossible points are (paper, Appendix 5).

A point is realistic at threshold r when some reference row is within r times each window feature's
width (its range, or its 5%-95% quantile range, over the reference rows) and equal on every exact
feature. Held-out rows of the table are real points: the share of them that is realistic against
the remaining rows should be high. Points drawn independently from each column's marginal
distribution mostly are not real combinations: their share shows what the threshold lets through.
The recommended threshold is the smallest r at which, on average over the runs, at least 95% of
held-out rows are realistic for every holdout fraction (the rule of the authors' code).

All thresholds come from one number per point: the smallest, over the reference rows, of the
largest scaled distance over the window features (infinite when an exact feature differs). Pure
numpy; the caller reads the feature columns.
"""

from __future__ import annotations

import warnings

import numpy as np

from cohortsql._typing import CalibrationKind

QUANTILE_TAIL = 0.05
CHUNK_ENTRIES = 1 << 23
"""Distances computed at once (points x reference rows x window features)."""


def window_widths(reference: np.ndarray, kind: CalibrationKind) -> np.ndarray:
    """Each window feature's width over the reference rows' values: max - min, or q_0.95 - q_0.05
    (linear); missing values are left out, and a feature with none has width 0."""
    if not reference.size:
        return np.zeros(reference.shape[1])
    present = ~np.isnan(reference)
    if kind == "range":
        high = np.max(reference, axis=0, where=present, initial=-np.inf)
        low = np.min(reference, axis=0, where=present, initial=np.inf)
    else:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-missing columns
            high = np.nanquantile(reference, 1 - QUANTILE_TAIL, axis=0)
            low = np.nanquantile(reference, QUANTILE_TAIL, axis=0)
    return np.nan_to_num(high - low, nan=0.0, posinf=0.0, neginf=0.0)


def nearest_scaled_distance(
    points: tuple[np.ndarray, np.ndarray], reference: tuple[np.ndarray, np.ndarray], widths: np.ndarray
) -> np.ndarray:
    """For each point: min over reference rows of max_j |x_j - z_j| / width_j over the window features
    (a zero width counts equal values only), or infinity when no reference row matches its exact features.

    `points` and `reference` are pairs (window values, float (rows, p); exact codes, int (rows, q))."""
    windows, exact = points
    reference_windows, reference_exact = reference
    scale = np.where(widths > 0, widths, 1.0)
    result = np.empty(len(windows))
    per_point = max(1, len(reference_windows) * max(1, windows.shape[1]))
    step = max(1, CHUNK_ENTRIES // per_point)
    for start in range(0, len(windows), step):
        chunk = slice(start, start + step)
        gaps = np.abs(windows[chunk, None, :] - reference_windows[None, :, :]) / scale
        gaps = np.where((widths > 0) | (gaps == 0), gaps, np.inf)
        if np.isnan(gaps).any():  # a missing value is similar to a missing value only
            both = np.isnan(windows[chunk, None, :]) & np.isnan(reference_windows[None, :, :])
            gaps = np.where(np.isnan(gaps), np.where(both, 0.0, np.inf), gaps)
        distance = gaps.max(axis=2) if windows.shape[1] else np.zeros((len(gaps), len(reference_windows)))
        mismatch = (exact[chunk, None, :] != reference_exact[None, :, :]).any(axis=2)
        result[chunk] = np.where(mismatch, np.inf, distance).min(axis=1, initial=np.inf)
    return result


def realistic_shares(distances: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """The share of points realistic at each threshold (distance <= threshold)."""
    return (distances[:, None] <= thresholds[None, :]).mean(axis=0)


def holdout_shares(
    windows: np.ndarray,
    exact: np.ndarray,
    thresholds: np.ndarray,
    holdout: float,
    runs: int,
    kind: CalibrationKind,
    rng: np.random.Generator,
) -> np.ndarray:
    """(runs, thresholds): the share of held-out rows realistic against the rest, each run a new split."""
    rows = len(windows)
    held = min(rows - 1, max(1, round(holdout * rows)))
    shares = np.empty((runs, len(thresholds)))
    for run in range(runs):
        order = rng.permutation(rows)
        out, rest = order[:held], order[held:]
        widths = window_widths(windows[rest], kind)
        distances = nearest_scaled_distance((windows[out], exact[out]), (windows[rest], exact[rest]), widths)
        shares[run] = realistic_shares(distances, thresholds)
    return shares


def marginal_shares(
    windows: np.ndarray,
    exact: np.ndarray,
    thresholds: np.ndarray,
    samples: int,
    runs: int,
    kind: CalibrationKind,
    rng: np.random.Generator,
) -> np.ndarray:
    """(runs, thresholds): the share of points drawn from the columns' marginals (each column on its
    own, with replacement) that are realistic against the whole table."""
    widths = window_widths(windows, kind)
    shares = np.empty((runs, len(thresholds)))
    for run in range(runs):
        picks = rng.integers(0, len(windows), size=(samples, windows.shape[1] + exact.shape[1]))
        columns = np.arange(windows.shape[1])
        drawn_windows = windows[picks[:, : windows.shape[1]], columns]
        drawn_exact = exact[picks[:, windows.shape[1] :], np.arange(exact.shape[1])]
        distances = nearest_scaled_distance((drawn_windows, drawn_exact), (windows, exact), widths)
        shares[run] = realistic_shares(distances, thresholds)
    return shares
