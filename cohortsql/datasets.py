"""Small example data for the docstrings, the tests of the documentation and first experiments.

`loans` is twelve scored loan applications, small enough to read whole; `loans_model` is the
(made-up) model that scored them, for the methods that need the model itself. `redlining` is a
synthetic lending table whose model never sees the protected attribute but reads a zip code that
tracks it (`redlining_model`), for `cohortsql.audit`. `floor` is a table of small cohorts with a known
proxy and a known independent column, for the null reference of every share (``null=``).
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


REDLINING_ZIPS = ("z1", "z2", "z3", "z4")


def redlining(rows: int = 600, seed: int = 7) -> pl.DataFrame:
    """A synthetic lending table with a known proxy: ``id``; ``group`` (the protected attribute,
    ``a`` or ``b``, about 30% ``b``); ``zip`` (``z1`` .. ``z4``): 85% of ``b`` applicants live in
    ``z3`` or ``z4``, 85% of ``a`` applicants in ``z1`` or ``z2``; ``income`` (``low``, ``mid``,
    ``high``, independent of the group); and ``denial``, the score of `redlining_model`, which reads zip
    and income only.

    Examples
    --------
    >>> import cohortsql
    >>> table = cohortsql.datasets.redlining()
    >>> table.columns, table.height
    (['id', 'group', 'zip', 'income', 'denial'], 600)
    """
    import numpy as np
    import polars as pl

    draws = np.random.default_rng(seed)
    group = np.where(draws.random(rows) < 0.3, "b", "a")
    inside = draws.random(rows) < 0.85  # lives in the zips of its group
    high_zips = (group == "b") == inside
    zip_code = np.where(
        high_zips, np.where(draws.random(rows) < 0.5, "z3", "z4"), np.where(draws.random(rows) < 0.5, "z1", "z2")
    )
    income = np.array(["low", "mid", "high"])[draws.integers(0, 3, rows)]
    frame = pl.DataFrame({"id": np.arange(rows), "group": group, "zip": zip_code, "income": income})
    return frame.with_columns(denial=pl.Series(redlining_model(frame)))


def redlining_model(frame: pl.DataFrame) -> np.ndarray:
    """The model that scored `redlining`'s applications: 0.2, plus 0.3 in zips ``z3`` and ``z4``, plus
    0.2 for a ``low`` income, plus 0.1 for a ``mid`` one. It never reads ``group`` (call it with
    ``model_input="polars"``).

    Examples
    --------
    >>> import cohortsql
    >>> cohortsql.datasets.redlining_model(cohortsql.datasets.redlining()).round(2)[:3].tolist()
    [0.7, 0.4, 0.3]
    """
    import numpy as np

    zip_code, income = frame["zip"].to_numpy(), frame["income"].to_numpy()
    return 0.2 + 0.3 * np.isin(zip_code, ["z3", "z4"]) + 0.2 * (income == "low") + 0.1 * (income == "mid")


def floor(rows: int = 2000, seed: int = 0) -> pl.DataFrame:
    """Scores of a model that reads five numbers ``x0`` .. ``x4`` (``x5`` it ignores), compared by
    windows that leave most cohorts on every feature a row or two: the kind of table where a column that
    means nothing still earns a share of the variance. ``proxy`` (0 or 1) tracks ``x0``, the model's
    main input; ``coin`` (0 or 1) is independent of everything; ``id`` identifies rows; ``score`` is
    1.5 x0 + x1 - 0.5 x2 + 0.3 x3 x4 plus a little noise.

    Examples
    --------
    >>> import cohortsql
    >>> table = cohortsql.datasets.floor()
    >>> table.columns, table.height
    (['id', 'x0', 'x1', 'x2', 'x3', 'x4', 'x5', 'proxy', 'coin', 'score'], 2000)
    """
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 6)).round(2)
    proxy = (x[:, 0] + rng.normal(scale=0.7, size=rows) > 0).astype(np.int64)
    coin = rng.integers(0, 2, rows)
    score = 1.5 * x[:, 0] + x[:, 1] - 0.5 * x[:, 2] + 0.3 * x[:, 3] * x[:, 4] + rng.normal(scale=0.1, size=rows)
    return pl.DataFrame(
        {"id": np.arange(rows), **{f"x{j}": x[:, j] for j in range(6)}, "proxy": proxy, "coin": coin, "score": score}
    )
