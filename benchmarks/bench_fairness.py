"""Group fairness metrics on a large table: `cohortsql.fairness` (one GROUP BY on DuckDB, intervals
drawn from its cells) against fairlearn's `MetricFrame` and metric functions on the same arrays in
memory, with the largest difference between their numbers.

A synthetic credit table of 1,000,000 and 4,000,000 rows: a protected attribute of 4 levels, a score
in [0, 1], an observed 0/1 outcome; selected at a score of 0.5 or more. Medians of 3 runs, run
alternately; fairlearn's time excludes building its arrays, cohortsql's includes reading the frame.

Usage: python benchmarks/bench_fairness.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from common import machine  # noqa: E402

import cohortsql  # noqa: E402

RATES = ("selection_rate", "true_positive_rate", "false_positive_rate")


def table(rows: int) -> pl.DataFrame:
    draws = np.random.default_rng(7)
    group = draws.integers(0, 4, rows)
    score = np.clip(draws.normal(0.45 + 0.05 * group, 0.2), 0, 1)
    observed = (draws.uniform(size=rows) < score).astype(np.int64)
    return pl.DataFrame({"group": group.astype(str), "score": score, "repaid": observed})


def with_fairlearn(frame: pl.DataFrame) -> tuple[float, np.ndarray]:
    from fairlearn.metrics import (
        MetricFrame,
        demographic_parity_difference,
        equalized_odds_difference,
        false_positive_rate,
        selection_rate,
        true_positive_rate,
    )

    y_true, groups = frame["repaid"].to_numpy(), frame["group"].to_numpy()
    y_pred = (frame["score"].to_numpy() >= 0.5).astype(int)
    began = time.perf_counter()
    found = MetricFrame(
        metrics={
            "selection_rate": selection_rate,
            "true_positive_rate": true_positive_rate,
            "false_positive_rate": false_positive_rate,
        },
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=groups,
    ).by_group
    between = [
        demographic_parity_difference(y_true, y_pred, sensitive_features=groups),
        equalized_odds_difference(y_true, y_pred, sensitive_features=groups),
    ]
    seconds = time.perf_counter() - began
    return seconds, np.concatenate([found[list(RATES)].to_numpy().ravel(), between])


def with_cohortsql(frame: pl.DataFrame, bootstrap: int) -> tuple[float, np.ndarray]:
    began = time.perf_counter()
    found = cohortsql.fairness(
        frame, prediction="score", protected="group", threshold=0.5, observed="repaid", bootstrap=bootstrap, seed=1
    )
    seconds = time.perf_counter() - began
    metrics = found.metrics.filter(pl.col("metric") != "demographic_parity_ratio")["value"].to_numpy()
    return seconds, np.concatenate([found.groups.select(RATES).to_numpy().ravel(), metrics])


def main() -> None:
    print(machine())
    print(
        f"{'rows':>10s} {'fairlearn s':>12s} {'cohortsql s':>12s} {'cohortsql, 200 replicates s':>28s} {'max |difference|':>17s}"
    )
    for rows in (1_000_000, 4_000_000):
        frame = table(rows)
        times: dict[str, list[float]] = {"fairlearn": [], "plain": [], "intervals": []}
        for _ in range(3):
            seconds, theirs = with_fairlearn(frame)
            times["fairlearn"].append(seconds)
            seconds, ours = with_cohortsql(frame, 0)
            times["plain"].append(seconds)
            seconds, _ = with_cohortsql(frame, 200)
            times["intervals"].append(seconds)
        medians = {name: float(np.median(values)) for name, values in times.items()}
        difference = float(np.max(np.abs(theirs - ours)))
        print(
            f"{rows:>10,d} {medians['fairlearn']:>12.3f} {medians['plain']:>12.3f} {medians['intervals']:>28.3f} {difference:>17.2e}"
        )


if __name__ == "__main__":
    main()
