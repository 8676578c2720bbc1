"""An analytic floor against the permutation null: does a formula from the cohorts the run already has
give what shuffled copies of an independent column get?

For a column Z unrelated to everything, taking feature j's place, the copy splits the cohort C = C_{t,u}
of every target t and set u of the other features into C' = {t} + a Bernoulli(p_t) part of the rest R
(p_t: the share of the other rows similar to t on Z). With k = |part|, r = |R|, given k the part is a
simple random sample of R, so

    E[(ybar_C' - ybar)^2 | k] = ((y_t + k ybar_R) / (k + 1) - ybar)^2 + (k / (k + 1))^2 s_R^2 / k (r - k) / (r - 1)

(s_R^2 the population variance of y over R), and the floor is the Shapley value of Z in the variance
game: phi_Z = mean over t of sum over u of w(|u|) (E[(ybar_C' - ybar)^2] - (ybar_C - ybar)^2), over the
variance. Everything it reads is a cohort's size and its sums of y and y^2 (the cohort-variance game's
sums), the target's own y, and p_t.

A first version without the target's special place (C' a random part of C, the finite-population
variance alone) agreed within 20% where most cohorts are single rows but gave 0.40-0.42 of the null
where they are not (windows of 0.3 x the 5-95% range): the target is always in C', which pulls
ybar_C' towards y_t. The exact expectation above agrees within 10% at every window tried.

Brute force over every pair (n^2) and every set of the other features: for small tables only.

Usage: python benchmarks/bench_null_formula.py
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import polars as pl
from scipy.stats import binom

import cohortsql


def table(rows: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 3)).round(2)
    y = 1.5 * x[:, 0] + x[:, 1] - 0.5 * x[:, 2] + rng.normal(scale=0.1, size=rows)
    return pl.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "x2": x[:, 2], "z": rng.integers(0, 2, rows), "y": y})


def similar(column: np.ndarray, delta: float | None) -> np.ndarray:
    """Subject i similar to target t, (targets, subjects): equal, or within `delta`."""
    if delta is None:
        return column[:, None] == column[None, :]
    return np.abs(column[:, None] - column[None, :]) <= delta


def increment(y: np.ndarray, sums: np.ndarray, squares: np.ndarray, sizes: np.ndarray, p: np.ndarray) -> np.ndarray:
    """E[(ybar_C' - ybar)^2] - (ybar_C - ybar)^2 for every target (the module's formula, summed over k)."""
    ybar = y.mean()
    found = np.zeros(len(y))
    for t in range(len(y)):
        r = int(sizes[t]) - 1
        if r == 0:
            continue
        mean_r = (sums[t] - y[t]) / r
        var_r = max((squares[t] - y[t] ** 2) / r - mean_r**2, 0.0)
        k = np.arange(r + 1)
        weights = binom.pmf(k, r, p[t])
        centre = (y[t] + k * mean_r) / (k + 1) - ybar
        spread = np.where(k > 0, var_r / np.maximum(k, 1) * (r - k) / max(r - 1, 1), 0.0)
        found[t] = (weights * (centre**2 + (k / (k + 1)) ** 2 * spread)).sum() - (sums[t] / sizes[t] - ybar) ** 2
    return found


def analytic_share(frame: pl.DataFrame, deltas: dict[str, float | None], tested: str) -> float:
    y = frame["y"].to_numpy()
    n = len(y)
    others = [name for name in deltas if name != tested]
    tests = {name: similar(frame[name].to_numpy(), delta) for name, delta in deltas.items()}
    d = len(deltas)
    weight = [math.factorial(s) * math.factorial(d - 1 - s) / math.factorial(d) for s in range(d)]
    p = (tests[tested].sum(axis=1) - 1) / (n - 1)
    phi = np.zeros(n)
    for size in range(len(others) + 1):
        for subset in itertools.combinations(others, size):
            member = np.ones((n, n), dtype=bool)
            for name in subset:
                member &= tests[name]
            phi += weight[size] * increment(y, member @ y, member @ (y * y), member.sum(axis=1).astype(float), p)
    return float(phi.mean() / y.var())


def main() -> None:
    warnings.simplefilter("ignore", cohortsql.CohortWarning)
    print("| rows | window (x 5-95% range) | seed | null_share (39 copies) | formula | formula / null |")
    print("| --- | --- | --- | --- | --- | --- |")
    for rows, window in [(150, 0.1), (300, 0.1), (300, 0.3), (300, 0.6)]:
        for seed in range(2):
            frame = table(rows, seed)
            deltas: dict[str, float | None] = {
                name: window * float(frame[name].quantile(0.95) - frame[name].quantile(0.05))
                for name in ("x0", "x1", "x2")
            }
            deltas["z"] = None
            kinds = {name: "exact" if delta is None else f"abs:{delta!r}" for name, delta in deltas.items()}
            found = cohortsql.shapley_effects(
                frame, prediction="y", similarity=kinds, null=39, null_features=["z"], seed=seed
            )
            null = float(found.effects.filter(pl.col("feature") == "z")["null_share"].item())
            formula = analytic_share(frame, deltas, "z")
            print(f"| {rows} | {window} | {seed} | {null:.4f} | {formula:.4f} | {formula / null:.2f} |")


if __name__ == "__main__":
    main()
