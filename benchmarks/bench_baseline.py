"""Baseline (BS) and all-baseline Shapley (ABS) for every target, beside shap's exact explainer and the
authors' published times (paper, Appendix 4: Titanic ABS 32.7 s for 1045 targets on a desktop;
Boston BS 9,490 s and ABS 5.8 hours).

The models are the examples' fitted models: Titanic's logistic regression and Boston's gradient
boosting. shap's ExactExplainer computes the same values (with the whole table, or the mean row, as
its background, never subsampled); it is timed on the first targets and scaled to all of them.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_baseline.py [--only titanic|boston] [--shap-targets N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

import cohortsql

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))
from common import machine  # noqa: E402

warnings.simplefilter("ignore", cohortsql.CohortWarning)


def timed(run: Callable[[], object], repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        began = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - began)
    return statistics.median(times), result


def shap_seconds(model: Callable[[np.ndarray], np.ndarray], x: np.ndarray, background: np.ndarray, targets: int):
    """shap's ExactExplainer on the first `targets` rows; seconds scaled to every row, and its values."""
    import shap

    explainer = shap.explainers.Exact(model, shap.maskers.Independent(background, max_samples=len(background)))
    began = time.perf_counter()
    values = explainer(x[:targets]).values
    return (time.perf_counter() - began) * len(x) / targets, values


def titanic(shap_targets: int) -> None:
    import titanic as example

    passengers, survival = example.fitted()
    features = dict(example.SIMILARITY)
    for baseline, name, paper in (("mean", "BS", None), ("all", "ABS", "32.7 s (1045 targets, desktop)")):
        for realistic in (False, True):
            seconds, result = timed(
                lambda baseline=baseline, realistic=realistic: cohortsql.baseline_shapley(
                    passengers,
                    model=survival,
                    model_input="polars",
                    features=features,
                    baseline=baseline,
                    realistic=realistic,
                    progress=False,
                ),
                3,
            )
            extra = f", realistic share {result.realistic_share:.0%}" if realistic else ""
            print(
                f"Titanic {name}, 1046 targets x 5{' with realism' if realistic else ''}: {seconds:.2f} s (median of 3){extra}"
            )
        if paper:
            print(f"    the paper: {paper}")
        if baseline == "all":
            codes = {"pclass": {"1st": 1, "2nd": 2, "3rd": 3}, "sex": {"female": 0, "male": 1}}
            x = (
                passengers.select(
                    pl.col("pclass").replace_strict(codes["pclass"]),
                    pl.col("sex").replace_strict(codes["sex"]),
                    "age",
                    "sibsp",
                    "parch",
                )
                .to_numpy()
                .astype(float)
            )

            def numeric_model(values: np.ndarray) -> np.ndarray:
                frame = pl.DataFrame(values, schema=["pclass", "sex", "age", "sibsp", "parch"], orient="row")
                frame = frame.with_columns(
                    pclass=pl.col("pclass").replace_strict({1.0: "1st", 2.0: "2nd", 3.0: "3rd"}),
                    sex=pl.col("sex").replace_strict({0.0: "female", 1.0: "male"}),
                )
                return survival(frame)

            scaled, values = shap_seconds(numeric_model, x, x, shap_targets)
            print(
                f"    shap ExactExplainer, whole table as background: {scaled:.1f} s (first {shap_targets} targets, scaled)"
            )
            print(f"    largest |difference| from shap: {np.abs(values - result.shapley[:shap_targets]).max():.1e}")


def boston(shap_targets: int) -> None:
    import boston as example

    frame, model = example.fitted()
    features = example.PREDICTORS
    for realistic in (False, True):
        seconds, result = timed(
            lambda realistic=realistic: cohortsql.baseline_shapley(
                frame,
                model=model,
                model_input="numpy",
                features={name: "quantile:0.1" for name in features},
                realistic=realistic,
                progress=False,
            ),
            3,
        )
        extra = f", realistic share {result.realistic_share:.1%}" if realistic else ""
        print(
            f"Boston BS, 506 targets x 13{' with realism' if realistic else ''}: {seconds:.2f} s (median of 3){extra}"
        )
    print("    the paper: 9,490 s")
    x = frame.select(features).to_numpy().astype(float)
    scaled, values = shap_seconds(model.predict, x, x.mean(axis=0, keepdims=True), shap_targets)
    print(f"    shap ExactExplainer, the mean row as background: {scaled:.1f} s (first {shap_targets} targets, scaled)")
    print(f"    largest |difference| from shap: {np.abs(values - result.shapley[:shap_targets]).max():.1e}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["titanic", "boston"])
    parser.add_argument("--shap-targets", type=int, default=40)
    options = parser.parse_args()
    print(machine())
    for name, case in {"titanic": titanic, "boston": boston}.items():
        if options.only in (None, name):
            case(options.shap_targets)
