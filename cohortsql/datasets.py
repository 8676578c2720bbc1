"""Small example data for the docstrings, the tests of the documentation and first experiments.

`loans` is twelve scored loan applications, small enough to read whole; `loans_model` is the
(made-up) model that scored them, for the methods that need the model itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import polars as pl


def loans() -> pl.DataFrame:
    """Twelve loan applications: ``income`` (thousands), ``region`` (``n`` or ``s``) and the ``score``
    a model gave them (falling with income, a little higher in the south).

    Examples
    --------
    >>> import cohortsql
    >>> cohortsql.datasets.loans().head(3)
    shape: (3, 3)
    ┌────────┬────────┬───────┐
    │ income ┆ region ┆ score │
    │ ---    ┆ ---    ┆ ---   │
    │ i64    ┆ str    ┆ f64   │
    ╞════════╪════════╪═══════╡
    │ 21     ┆ n      ┆ 0.79  │
    │ 35     ┆ s      ┆ 0.7   │
    │ 48     ┆ n      ┆ 0.52  │
    └────────┴────────┴───────┘
    """
    import polars as pl

    return pl.DataFrame(
        {
            "income": [21, 35, 48, 52, 60, 75, 90, 33, 41, 66, 58, 27],
            "region": list("nsnsnsnsnsns"),
            "score": [0.79, 0.7, 0.52, 0.53, 0.4, 0.3, 0.1, 0.72, 0.59, 0.39, 0.42, 0.78],
        }
    )


def loans_model(frame: pl.DataFrame) -> np.ndarray:
    """The model that made the `loans` scores, as a function of a frame of feature values:
    1 - income / 100, plus 0.05 in the south. Baseline Shapley calls it on hybrid rows
    (``model_input="polars"``).

    Examples
    --------
    >>> import cohortsql
    >>> cohortsql.datasets.loans_model(cohortsql.datasets.loans()).round(2)[:3].tolist()
    [0.79, 0.7, 0.52]
    """
    return 1.0 - frame["income"].to_numpy() / 100 + 0.05 * (frame["region"] == "s").to_numpy()
