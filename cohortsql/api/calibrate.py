"""`cohortsql.calibrate`: the similarity threshold at which held-out rows are realistic (paper, Appendix 5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql._typing import CalibrationOptions
from cohortsql.errors import CohortError
from cohortsql.formats.settings import run_settings
from cohortsql.interrupts import interruptible_call
from cohortsql.numeric.realism import holdout_shares, marginal_shares
from cohortsql.request import arguments
from cohortsql.request.arguments import drawn_seed
from cohortsql.request.options import checked_options
from cohortsql.results.calibration import Calibration
from cohortsql.run.preparation import prepare
from cohortsql.run.session import opened_engine
from cohortsql.run.targets import every_row


@interruptible_call
def calibrate(data: Any, *, features: Sequence[str], **options: Unpack[CalibrationOptions]) -> Calibration:
    """The similarity threshold at which real rows count as realistic (paper, Appendix 5).

    For each threshold r in `thresholds`, the share of realistic points among (a) rows held out at
    random from the rest (each fraction of `holdouts`, `runs` times) and (b) `marginal_samples`
    points drawn from each column's marginal distribution independently (`runs` times). A point is
    realistic when some other row is within r x the `kind` width (``range``: max - min; ``quantile``:
    the 5%-95% quantile range) on every numeric feature and equal on every text or boolean feature
    and every feature in `exact`. `Calibration.recommended` is the smallest r at which 95% of held-out
    rows are realistic; `cohortsql.plot.calibration` draws the paper's figure. Tables of more than
    `max_rows` rows are calibrated on a random sample of that many (seeded).

    The defaults: `thresholds` 0.05, 0.10, ..., 1.00 (the paper's figure), `holdouts` 0.1, 0.2 and
    0.3, `runs` 100, `marginal_samples` 1,000, `max_rows` 20,000, `kind` ``range``, no `exact`.

    Parameters
    ----------
    data
        The table: any input `cohort_shapley` reads.
    features
        The features whose similarity thresholds are calibrated.
    **options
        What to try and where it runs (`CalibrationOptions`; the options of `cohort_shapley` with the same names mean the same):
        ``exact``, ``kind``, ``thresholds``, ``holdouts``, ``runs``, ``marginal_samples``, ``max_rows``, ``seed`` and the `RunOptions`.

    Returns
    -------
    Calibration
        The realistic shares of held-out rows and of marginal draws at every threshold, and the recommended one.

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> cohortsql.calibrate(loans, features=["income", "region"], runs=5, seed=1).recommended
    0.7
    """
    asked = checked_options(options, CalibrationOptions)
    choices = asked.calibration
    exact, kind, thresholds, holdouts = choices.exact, choices.kind, choices.thresholds, choices.holdouts
    runs, marginal_samples, max_rows = choices.runs, choices.marginal_samples, choices.max_rows
    levels = np.asarray(sorted(_fractions("thresholds", thresholds, upper=np.inf)))
    fractions = tuple(_fractions("holdouts", holdouts, upper=1.0))
    if isinstance(features, str) or isinstance(exact, str):
        raise CohortError("features and exact are lists of column names")
    unknown = sorted(set(exact) - set(features))
    if unknown:
        raise CohortError(f"exact names columns that are not among the features: {unknown}")
    seed = drawn_seed(asked.selection.seed)
    with opened_engine(data, asked.where) as running:
        kinds = {name: "exact" if name in exact else None for name in features}
        prepared = prepare(
            running, data, outcomes=(), similarity=kinds, id=None, target_predicate=None, max_features=1 << 10
        )
        sample = max_rows if prepared.subject_count > max_rows else None
        rows = every_row(running, prepared, sample, seed)
    window = [feature for feature in prepared.features if feature.kind.numeric]
    equal = [feature for feature in prepared.features if not feature.kind.numeric]
    windows = np.column_stack(
        [rows.column(feature.column).to_numpy(zero_copy_only=False).astype(np.float64) for feature in window]
        or [np.zeros((rows.num_rows, 0))]
    )
    codes = np.column_stack(
        [_codes(rows.column(feature.column)) for feature in equal] or [np.zeros((rows.num_rows, 0), dtype=np.int64)]
    )
    if rows.num_rows < 10:
        raise CohortError(f"calibration needs at least 10 rows; the table has {rows.num_rows}")
    rng = np.random.default_rng(seed)
    holdout = np.stack([holdout_shares(windows, codes, levels, f, runs, kind, rng) for f in fractions])
    marginal = marginal_shares(windows, codes, levels, marginal_samples, runs, kind, rng)
    return Calibration(
        thresholds=levels,
        holdouts=fractions,
        holdout=holdout,
        marginal=marginal,
        kind=kind,
        window_features=tuple(feature.name for feature in window),
        exact_features=tuple(feature.name for feature in equal),
        rows=rows.num_rows,
        settings=run_settings(
            engine=running.dialect.name,
            features=list(features),
            exact=list(exact),
            kind=kind,
            thresholds=[float(level) for level in levels],
            holdouts=list(fractions),
            runs=runs,
            marginal_samples=marginal_samples,
            seed=seed,
        ),
    )


def _fractions(name: str, values: Sequence[float], *, upper: float) -> list[float]:
    """`values` as a non-empty list of numbers in (0, upper)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise CohortError(f"{name} must be a non-empty list of numbers, got {values!r}")
    checked = [arguments.positive_number(name, value) for value in values]
    if any(value is None or value >= upper for value in checked):
        raise CohortError(
            f"{name} must be numbers above 0{'' if upper == np.inf else f' and below {upper:g}'}: got {list(values)!r}"
        )
    return [float(value) for value in checked if value is not None]


def _codes(column: pa.ChunkedArray) -> np.ndarray:
    """Integer codes of a column's values (equal values, equal codes; missing values -1)."""
    series = pl.Series(column)
    codes = series.rank("dense").fill_null(0).cast(pl.Int64) - 1
    return codes.to_numpy()
