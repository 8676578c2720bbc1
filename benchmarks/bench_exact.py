"""Benchmark exact cohort Shapley (issue: the library's core) against a simple per-target numpy loop.

(a) Boston housing, all 506 targets, `quantile:0.1` on all 13 predictors, exact CS and CS2, on the
    predictions of the gradient-boosted model shipped in examples/data (examples/boston.py). Baseline: for each target, numpy similarity masks, then
    every one of the 2^13 cohorts found by testing every subject's mask (the definition, vectorised
    per target), then the Shapley sum. Both results must agree.
(b) 100 targets of a synthetic 1,000,000-row table with 12 `abs` window predictors: (target,
    subject) pairs per second. Baseline: for each target, numpy computes the 12 comparisons over
    all rows and a bincount of masks (the same histogram the SQL step produces), single-threaded.

    python benchmarks/bench_exact.py            # both
    python benchmarks/bench_exact.py --only a   # Boston only
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import polars as pl

import cohortsql
from cohortsql.numeric import shapley

sys.path.insert(0, str(Path(__file__).parent))
from common import machine, median_time  # noqa: E402

BOSTON = Path(__file__).parent.parent / "examples" / "data" / "boston_predictions.parquet"
PREDICTORS = ["crim", "zn", "indus", "chas", "nox", "rm", "age", "dis", "rad", "tax", "ptratio", "black", "lstat"]


def quantile_deltas(x: np.ndarray, fraction: float = 0.1, p: float = 0.05) -> np.ndarray:
    low, high = np.quantile(x, p, axis=0), np.quantile(x, 1 - p, axis=0)
    return fraction * (high - low)


def definition_loop(x: np.ndarray, y: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """Per target: masks, every cohort by testing every mask against every subset, Shapley sum."""
    n, d = x.shape
    subsets = np.arange(1 << d)
    sizes = shapley.set_sizes(d)
    weights = np.array([math.factorial(s) * math.factorial(d - s - 1) / math.factorial(d) for s in range(d)])
    mean = y.mean()
    phi = np.empty((n, d))
    for t in range(n):
        masks = ((np.abs(x - x[t]) <= deltas) << np.arange(d)).sum(axis=1)
        members = (masks[None, :] & subsets[:, None]) == subsets[:, None]
        value = members @ y / members.sum(axis=1) - mean
        for j in range(d):
            without = subsets[(subsets >> j & 1) == 0]
            phi[t, j] = weights[sizes[without]] @ (value[without | 1 << j] - value[without])
    return phi


def bench_boston(repeats: int) -> None:
    table = pl.read_parquet(BOSTON)
    similarity = {name: "quantile:0.1" for name in PREDICTORS}
    seconds, result = median_time(
        lambda: cohortsql.cohort_shapley(table, prediction="prediction", similarity=similarity), repeats
    )
    x = table.select(PREDICTORS).to_numpy().astype(float)
    y = table["prediction"].to_numpy()
    baseline_seconds, baseline = median_time(lambda: definition_loop(x, y, quantile_deltas(x)), 1)
    difference = np.abs(result.shapley - baseline).max()
    print("(a) Boston, 506 targets x 13 predictors, exact CS + CS2")
    print(f"    cohortsql           median of {repeats}: {seconds:.3f} s")
    print(f"    per-target numpy loop (1 run):  {baseline_seconds:.3f} s  -> {baseline_seconds / seconds:.0f}x")
    print(f"    largest |difference| between the two: {difference:.2e}")


def histogram_loop(x: np.ndarray, y: np.ndarray, targets: np.ndarray, delta: float) -> list[np.ndarray]:
    """Per target: the 12 window tests over every row and a bincount of the masks."""
    d = x.shape[1]
    histograms = []
    for t in targets:
        masks = np.zeros(len(y), dtype=np.int64)
        for j in range(d):
            masks |= (np.abs(x[:, j] - x[t, j]) <= delta).astype(np.int64) << j
        histograms.append(np.bincount(masks, weights=y, minlength=1 << d))
    return histograms


def bench_synthetic(repeats: int, rows: int = 1_000_000, targets: int = 100, d: int = 12) -> None:
    rng = np.random.default_rng(2026)
    x = rng.uniform(size=(rows, d))
    y = x @ rng.normal(size=d) + rng.normal(scale=0.1, size=rows)
    frame = pl.DataFrame({f"x{j}": x[:, j] for j in range(d)} | {"y": y})
    chosen = list(range(targets))
    similarity = {f"x{j}": "abs:0.1" for j in range(d)}
    seconds, _ = median_time(
        lambda: cohortsql.cohort_shapley(frame, prediction="y", similarity=similarity, targets=chosen), repeats
    )
    baseline_seconds, _ = median_time(lambda: histogram_loop(x, y, np.array(chosen), 0.1), repeats)
    pairs = rows * targets
    print(f"(b) synthetic, {rows:,} rows x {targets} targets x {d} window predictors")
    print(f"    cohortsql           median of {repeats}: {seconds:.2f} s  {pairs / seconds:.2e} pairs/s")
    print(
        f"    per-target numpy loop median of {repeats}: {baseline_seconds:.2f} s  {pairs / baseline_seconds:.2e} pairs/s"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["a", "b"])
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    print(machine())
    if options.only in (None, "a"):
        bench_boston(options.repeats)
    if options.only in (None, "b"):
        bench_synthetic(max(3, options.repeats // 2))
