"""Dry-run estimates against the runs they estimate, on real data: Boston's 506 tracts (13 features,
the shipped model's predictions) and Titanic's 1,046 passengers (the shipped model's predictions,
audited for sex), with interaction values, bootstrap replicates and the permutation method.

Each configuration is estimated three times in a row (`cohortsql.estimate`, or `estimate_audit`),
then run once; the table gives the three estimates, the run's time, their spread (the largest
estimate over the smallest: the aim is at most 1.5) and the mean estimate over the run's time.

Usage: python benchmarks/bench_estimates.py [configuration ...]
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from common import machine  # noqa: E402

import cohortsql  # noqa: E402

DATA = Path(__file__).parents[1] / "examples" / "data"
BOSTON = pl.read_parquet(DATA / "boston_predictions.parquet")
TITANIC = pl.read_parquet(DATA / "titanic_predictions.parquet")
FEATURES = [name for name in BOSTON.columns if name not in ("medv", "prediction")]
AUDITED = {"pclass": "exact", "age": "abs:5", "sibsp": "exact", "parch": "exact"}


def boston(**options: Any) -> tuple[Callable[[], Any], Callable[[], Any]]:
    arguments = dict(prediction="prediction", similarity=FEATURES, **options)
    return (lambda: cohortsql.estimate(BOSTON, **arguments)), (lambda: cohortsql.cohort_shapley(BOSTON, **arguments))


def titanic_audit(**options: Any) -> tuple[Callable[[], Any], Callable[[], Any]]:
    arguments = dict(prediction="prediction", protected="sex", similarity=AUDITED, seed=1, **options)
    return (
        lambda: cohortsql.estimate_audit(TITANIC, **arguments),
        lambda: cohortsql.audit(TITANIC, **arguments),
    )


CONFIGURATIONS = {
    "boston exact": boston(),
    "boston interactions": boston(interactions=True),
    "boston 200 replicates": boston(bootstrap=200, seed=1),
    "boston permutation + interactions": boston(method="permutation", interactions=True, seed=1),
    "titanic audit (200 replicates, interactions)": titanic_audit(),
    "titanic audit, 300 sampled": titanic_audit(sample=300),
}


def main(names: list[str]) -> None:
    print(machine())
    print("| configuration | dry runs (s) | run (s) | spread | estimate / run |")
    print("| --- | --- | --- | --- | --- |")
    for name in names or list(CONFIGURATIONS):
        estimate, run = CONFIGURATIONS[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cohortsql.CohortWarning)
            estimates = [estimate().estimated_seconds for _ in range(3)]
            began = time.perf_counter()
            run()
            seconds = time.perf_counter() - began
        mean = sum(estimates) / len(estimates)
        print(
            f"| {name} | {', '.join(f'{value:.2f}' for value in estimates)} | {seconds:.2f} |"
            f" {max(estimates) / min(estimates):.2f} | {mean / seconds:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
