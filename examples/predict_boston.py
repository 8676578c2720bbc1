"""Fit a least-squares regression of medv on the 13 Boston predictors and save its predictions.

Writes examples/data/boston_predictions.parquet: the 13 predictors, the observed medv and the
model's `prediction`, one row per tract. It needs numpy and polars only, so the shipped prediction
table can be explained with no model library installed:

    python examples/predict_boston.py
"""

from pathlib import Path

import numpy as np
import polars as pl

DATA = Path(__file__).parent / "data"
PREDICTORS = ["crim", "zn", "indus", "chas", "nox", "rm", "age", "dis", "rad", "tax", "ptratio", "black", "lstat"]


def boston_with_predictions() -> pl.DataFrame:
    """Boston housing with the fitted values of an ordinary least-squares model of medv."""
    boston = pl.read_csv(DATA / "boston.csv")
    design = np.column_stack([np.ones(boston.height), boston.select(PREDICTORS).to_numpy()])
    coefficients, *_ = np.linalg.lstsq(design, boston["medv"].to_numpy(), rcond=None)
    return boston.with_columns(prediction=pl.Series(design @ coefficients))


if __name__ == "__main__":
    table = boston_with_predictions()
    table.write_parquet(DATA / "boston_predictions.parquet")
    residual = (table["medv"] - table["prediction"]).pow(2).mean() ** 0.5
    print(f"wrote {DATA / 'boston_predictions.parquet'}: {table.height} rows, RMSE {residual:.3f}")
