"""How close integrated gradient cohort Shapley (IGCS) comes to cohort Shapley, scored the way its
authors score it: the insertion and deletion tests (Hama, Mase & Owen) of exact cohort Shapley,
permutation cohort Shapley and IGCS on the same targets of the same table, with each method's time
and how far IGCS and the permutation estimate are from the exact values.

Boston (506 tracts, the 13 features at their usual windows, the shipped model's predictions) and
Titanic (1,309 passengers, 5 features, the shipped model's predictions); every row is a target.

Usage: python benchmarks/bench_abc.py
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from common import machine  # noqa: E402

import cohortsql  # noqa: E402

DATA = Path(__file__).parents[1] / "examples" / "data"
BOSTON = [name for name in pl.read_csv(DATA / "boston.csv").columns if name != "medv"]
TABLES = {
    "Boston": (
        pl.read_parquet(DATA / "boston_predictions.parquet").with_row_index("id"),
        {name: "quantile:0.1" for name in BOSTON} | {"chas": "exact"},
    ),
    "Titanic": (
        pl.read_parquet(DATA / "titanic_predictions.parquet").with_row_index("id"),
        {"pclass": "exact", "sex": "exact", "age": "abs:2", "sibsp": "exact", "parch": "exact"},
    ),
}
METHODS = {
    "exact cohort Shapley": {"method": "exact"},
    "permutation cohort Shapley (200 orders)": {"method": "permutation", "max_permutations": 200, "seed": 1},
    "IGCS": {"method": "integrated"},
}


def main() -> None:
    print(machine())
    warnings.simplefilter("ignore", cohortsql.CohortWarning)
    for name, (frame, similarity) in TABLES.items():
        options = dict(prediction="prediction", similarity=similarity, id="id")
        print(f"\n{name}: {len(similarity)} features")
        print(
            f"  {'method':42s} {'seconds':>8s} {'insertion ABC':>14s} {'deletion ABC':>13s} {'max |phi - exact| / max |exact|':>32s}"
        )
        exact = None
        for label, chosen in METHODS.items():
            began = time.perf_counter()
            result = cohortsql.cohort_shapley(frame, **options, **chosen)
            seconds = time.perf_counter() - began
            exact = result.shapley if exact is None else exact
            tests = cohortsql.insertion_deletion(frame, attributions=result, **options)
            insertion, deletion = (float(tests.abc[column].mean()) for column in ("insertion_abc", "deletion_abc"))
            off = float(np.abs(result.shapley - exact).max() / np.abs(exact).max())
            print(f"  {label:42s} {seconds:8.2f} {insertion:14.4f} {deletion:13.4f} {off:32.3f}")
        print(f"  ({len(result.ids):,} targets: every row with a prediction)")


if __name__ == "__main__":
    main()
