"""Boston housing end to end (the paper's second example).

Fits a gradient-boosted regression of medv on the 13 predictors, saves its predictions as
examples/data/boston_predictions.parquet (so `cohortsql shapley` needs no model library), explains
every tract with cohort Shapley (each predictor similar within 10% of its 5%-95% quantile range),
prints the most important predictors and the Shapley effects, sets tract 205's cohort Shapley values
beside baseline and all-baseline Shapley of the fitted model, and saves figures.

    pip install -e ".[examples]" && python examples/boston.py
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import polars as pl  # noqa: E402
from sklearn.ensemble import GradientBoostingRegressor  # noqa: E402

import cohortsql  # noqa: E402
from cohortsql import plot  # noqa: E402

HERE = Path(__file__).parent
DATA = HERE / "data"
FIGURES = HERE / "figures"
PREDICTORS = ["crim", "zn", "indus", "chas", "nox", "rm", "age", "dis", "rad", "tax", "ptratio", "black", "lstat"]
TARGET = 204  # the paper's subject 205, 1-based


def fitted() -> tuple[pl.DataFrame, GradientBoostingRegressor]:
    """Boston housing, and a gradient-boosted regression of medv on the 13 predictors (numpy input)."""
    boston = pl.read_csv(DATA / "boston.csv")
    model = GradientBoostingRegressor(n_estimators=300, max_depth=3, learning_rate=0.05, random_state=0)
    model.fit(boston.select(PREDICTORS).to_numpy(), boston["medv"].to_numpy())
    return boston, model


def predictions() -> pl.DataFrame:
    """Boston housing with the predictions of a gradient-boosted regression of medv."""
    boston, model = fitted()
    return boston.with_columns(prediction=pl.Series(model.predict(boston.select(PREDICTORS).to_numpy())))


def main() -> None:
    table = predictions()
    table.write_parquet(DATA / "boston_predictions.parquet")
    similarity = {name: "quantile:0.1" for name in PREDICTORS}
    result = cohortsql.cohort_shapley(table, prediction="prediction", similarity=similarity)
    print(result)
    print("\nMost important predictors (mean |cohort Shapley value| over all tracts):")
    print(result.global_.sort("mean_abs_shapley", descending=True).select("feature", "mean_abs_shapley").head(5))
    effects = cohortsql.variance_shapley(table, prediction="prediction", similarity=similarity)
    print(f"\nShapley effects (variance {effects.variance:.2f}, explained {effects.explained_share:.1%}):")
    print(effects.effects.sort("shapley_effect", descending=True))
    print(f"\nTract {TARGET + 1} (1-based), as in the paper:")
    print(result.totals.filter(pl.col("id") == TARGET))
    print(result.paths.filter(pl.col("id") == TARGET).head(5))
    FIGURES.mkdir(exist_ok=True)
    plot.stacked(result).savefig(FIGURES / "boston_stacked.png", dpi=100)
    plot.effects(effects).savefig(FIGURES / "boston_effects.png", dpi=100)
    plot.path(result, TARGET).savefig(FIGURES / "boston_path.png", dpi=100)
    plot.cohort_scatter(result, TARGET, "lstat", "rm", data=table).savefig(FIGURES / "boston_scatter.png", dpi=100)
    _, model = fitted()
    comparison = cohortsql.compare(
        table, model=model, model_input="numpy", prediction="prediction", similarity=similarity, targets=[TARGET]
    )
    print(f"\nTract {TARGET + 1}: cohort Shapley beside baseline and all-baseline Shapley (paper, Appendix 4):")
    print(
        comparison.local.filter(pl.col("method").is_in(["CS", "BS", "ABS"])).pivot(
            on="method", index="feature", values="value"
        )
    )
    plot.compare_target(comparison, TARGET).savefig(FIGURES / "boston_compare.png", dpi=100)
    print(f"\nfigures in {FIGURES}")


if __name__ == "__main__":
    main()
