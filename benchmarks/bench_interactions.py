"""Interaction values beside plain cohort Shapley, in the same run: Boston's 506 targets with the
paper's similarity (d = 13; issue 25's measure), and the variance game's interaction effects.

interactions=True adds one more pass (the mask histograms again) and, per target, the dividends and
one superset-sum transform of 2^d values (`cohortsql.numeric.dividends`); the ratio to the plain
call is the figure that holds across machines.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_interactions.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

import cohortsql

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from common import machine, median_time  # noqa: E402

warnings.simplefilter("ignore", cohortsql.CohortWarning)
BOSTON = HERE.parent / "examples" / "data" / "boston_predictions.parquet"
FEATURES = ["crim", "zn", "indus", "chas", "nox", "rm", "age", "dis", "rad", "tax", "ptratio", "black", "lstat"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    similarity = {name: "quantile:0.1" for name in FEATURES} | {"chas": "exact"}
    options = dict(prediction="prediction", similarity=similarity)
    print(machine())
    runs = {
        "cohort_shapley": lambda: cohortsql.cohort_shapley(str(BOSTON), **options),
        "cohort_shapley(interactions=True)": lambda: cohortsql.cohort_shapley(
            str(BOSTON), interactions=True, **options
        ),
        "shapley_effects": lambda: cohortsql.shapley_effects(str(BOSTON), **options),
        "shapley_effects(interactions=True)": lambda: cohortsql.shapley_effects(
            str(BOSTON), interactions=True, **options
        ),
    }
    times = {}
    for name, run in runs.items():
        run()  # warm: file metadata, the numpy thread pool
        times[name], result = median_time(run, repeats)
        print(f"{name:<36} median {times[name]:.3f} s of {repeats}")
    print(
        f"interactions / plain, local values: {times['cohort_shapley(interactions=True)'] / times['cohort_shapley']:.2f}x"
    )
    print(
        f"interactions / plain, effects:      {times['shapley_effects(interactions=True)'] / times['shapley_effects']:.2f}x"
    )
    local = cohortsql.cohort_shapley(str(BOSTON), interactions=True, **options)
    typical = np.abs(local.interactions).mean(axis=0)
    first, second = np.triu_indices(len(FEATURES), 1)
    top = np.argsort(-typical[first, second])[:3]
    print(
        "largest mean |Phi_ij|:",
        ", ".join(f"{FEATURES[first[k]]} x {FEATURES[second[k]]} {typical[first[k], second[k]]:.3f}" for k in top),
    )


if __name__ == "__main__":
    main()
