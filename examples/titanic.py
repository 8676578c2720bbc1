"""Titanic end to end (the paper's first example).

Fits a logistic regression of survival on pclass, sex, age, sibsp and parch (the 1046 passengers
with every predictor), saves the predicted survival probabilities as
examples/data/titanic_predictions.parquet, explains every passenger with cohort Shapley (age
similar within 10% of its range, the rest exact), prints the top features and the Shapley effects
(sex first, as in the paper), and saves figures.

    pip install -e ".[examples]" && python examples/titanic.py
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

import cohortsql  # noqa: E402
from cohortsql import plot  # noqa: E402

HERE = Path(__file__).parent
DATA = HERE / "data"
FIGURES = HERE / "figures"
SIMILARITY = {"pclass": "exact", "sex": "exact", "age": "range:0.1", "sibsp": "exact", "parch": "exact"}


def design(passengers: pl.DataFrame) -> np.ndarray:
    """The logistic regression's inputs: dummies for 2nd and 3rd class and for men, then age, sibsp, parch."""
    return np.column_stack(
        [
            passengers["pclass"] == "2nd",
            passengers["pclass"] == "3rd",
            passengers["sex"] == "male",
            passengers.select("age", "sibsp", "parch").to_numpy(),
        ]
    ).astype(float)


def fitted() -> tuple[pl.DataFrame, Callable[[pl.DataFrame], np.ndarray]]:
    """Complete Titanic passengers, and the fitted model: a polars frame of the predictors -> P(survived)."""
    passengers = pl.read_csv(DATA / "titanic.csv", null_values="NA").drop_nulls()
    survived = (passengers["survived"] == "survived").to_numpy()
    model = LogisticRegression(max_iter=1000).fit(design(passengers), survived)
    return passengers, lambda frame: model.predict_proba(design(frame))[:, 1]


def predictions() -> pl.DataFrame:
    """Complete Titanic passengers with a logistic regression's probability of survival."""
    passengers, survival = fitted()
    return passengers.with_columns(prediction=pl.Series(survival(passengers)))


def main() -> None:
    table = predictions()
    table.write_parquet(DATA / "titanic_predictions.parquet")
    result = cohortsql.cohort_shapley(table, prediction="prediction", similarity=SIMILARITY)
    print(result)
    print("\nMost important features (mean |cohort Shapley value| over all passengers):")
    print(result.global_.sort("mean_abs_shapley", descending=True).select("feature", "mean_abs_shapley"))
    effects = cohortsql.variance_shapley(table, prediction="prediction", similarity=SIMILARITY)
    print(f"\nShapley effects (variance {effects.variance:.4f}, explained {effects.explained_share:.1%}):")
    print(effects.effects.sort("shapley_effect", descending=True))
    print("\nMean attribution to sex, by sex (the paper's audit by group):")
    print(result.by("sex").filter(pl.col("feature") == "sex"))
    FIGURES.mkdir(exist_ok=True)
    plot.stacked(result).savefig(FIGURES / "titanic_stacked.png", dpi=100)
    plot.effects(effects).savefig(FIGURES / "titanic_effects.png", dpi=100)
    passengers, survival = fitted()
    comparison = cohortsql.compare(
        table, model=survival, model_input="polars", prediction="prediction", similarity=SIMILARITY
    )
    print("\nCohort, baseline and all-baseline Shapley, squared, global (mean over passengers):")
    print(
        comparison.global_.filter(pl.col("method").str.ends_with("2")).pivot(
            on="method", index="feature", values="importance"
        )
    )
    shares = comparison.totals.select(pl.col("bs_realistic_share", "abs_realistic_share").mean())
    print(f"realistic hybrid points: BS {shares[0, 0]:.1%}, ABS {shares[0, 1]:.1%}")
    plot.compare_global(comparison).savefig(FIGURES / "titanic_compare.png", dpi=100)
    plot.compare_stacked(comparison, "ABS").savefig(FIGURES / "titanic_abs_stacked.png", dpi=100)
    calibration = cohortsql.calibrate(table, features=list(SIMILARITY), runs=20, seed=1)
    print(f"\n{calibration}")
    plot.calibration(calibration).savefig(FIGURES / "titanic_calibration.png", dpi=100)
    print(f"\nfigures in {FIGURES}")


if __name__ == "__main__":
    main()
