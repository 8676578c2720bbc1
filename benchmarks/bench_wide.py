"""Wide tables: integrated gradient cohort Shapley (``method="integrated"``) on binary features.

Part 1, the headline case: 1,024 binary features x 100,000 rows x 100 targets on DuckDB (the aim: under
60 s on 2 cores), beside the authors' scheme on the first of the same targets over the same rows: the
gradient of nu at the 501 points a = 0, 1/500, ..., 1 from every subject's soft product, and their mean
(what their PyTorch code computes, written here in numpy from its definition and as fast as numpy
allows: the dissimilar flags and k once per target, then two products with them per point). Their
scheme costs O(501 n d) per target, the library O(n d). Accuracy is measured on a subsample of the rows
(`--scheme-rows`, 250 by default, as the authors measured at d = 1,024), where the exact integral (a
converged composite rule of the analytic gradient) is affordable: the library and the scheme on the
same targets, each against it.

Part 2: d = 64, 256, 1,024 and 2,048 on the same rows and targets, to show the cost grows linearly in d.
Part 3: the headline case under ``memory_limit="500MB"`` and the process's peak RSS.
Part 4: a call's fixed cost (one target after a warm-up, at 1,000 and 20,000 rows) and its cost per
target at 20,000 rows x 20 targets against the authors' scheme in the same run.
Part 5 (asked for alone, ``--parts 5``: it builds a 200 MB table): d = 10,000 x 20,000 rows x 5 targets
under ``memory_limit="1GB"``, and the peak RSS.

Until 2026-11-29 the scheme here made 501 matrix-vector products a target (91.3 s a target at 100,000
rows, the "202x" of the benchmarks page); it is now one matrix product of the flags with every point's
weights, the same numbers to 6e-15 and 2.2-2.7x faster at 20,000 rows, so the ratios printed are against a baseline as
fast as numpy allows.

Usage: python benchmarks/bench_wide.py [--rows 100000] [--targets 100] [--scheme-targets 2] [--parts 1,2,3,4|5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from common import machine  # noqa: E402

import cohortsql  # noqa: E402


def table(rows: int, d: int, seed: int = 0) -> pl.DataFrame:
    """Binary features; the prediction reads the first 16 of them (and noise)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2, (rows, d), dtype=np.int8)
    y = x[:, :16] @ rng.normal(size=16) + rng.normal(scale=0.1, size=rows)
    return pl.DataFrame({f"x{j}": x[:, j] for j in range(d)}).with_columns(y=pl.Series(y)).with_row_index("id")


def explained(
    frame: pl.DataFrame, d: int, targets: list[int], **options
) -> tuple[float, cohortsql.CohortShapleyResult]:
    similarity = {f"x{j}": "exact" for j in range(d)}
    began = time.perf_counter()
    result = cohortsql.cohort_shapley(
        frame, prediction="y", similarity=similarity, id="id", targets=targets, method="integrated", **options
    )
    return time.perf_counter() - began, result


class Flags:
    """One target's dissimilar flags (n, d) and each subject's count k of them, computed once: binary
    exact features make each factor of the soft product 1 or 1 - a, so s = (1 - a)^k_i and
    d s / d z_j = -(1 - a)^(k_i - 1) where i is not similar on j (what automatic differentiation of the
    product gives)."""

    def __init__(self, x: np.ndarray, target: int) -> None:
        self.dissimilar = (x != x[target]).astype(np.float64)
        self.k = self.dissimilar.sum(axis=1)

    def gradient(self, y: np.ndarray, a: float) -> np.ndarray:
        """d nu / d z_j at z = a 1: the quotient rule with sums over every subject."""
        q = 1.0 - a
        s = q**self.k
        lower = np.where(self.k > 0, q ** np.maximum(self.k - 1, 0), 0.0)
        d_numerator = -((y * lower) @ self.dissimilar)  # sum_i y_i d s_i / d z_j
        d_denominator = -(lower @ self.dissimilar)
        denominator, numerator = s.sum(), (s * y).sum()
        return (d_numerator * denominator - numerator * d_denominator) / denominator**2


def converged(x: np.ndarray, y: np.ndarray, target: int, panels: int = 4000) -> np.ndarray:
    """The integral of the same gradient by a composite 8-point Gauss-Legendre rule (the reference)."""
    flags = Flags(x, target)
    nodes, weights = np.polynomial.legendre.leggauss(8)
    total = np.zeros(x.shape[1])
    for panel in range(panels):
        low, high = panel / panels, (panel + 1) / panels
        for node, weight in zip(nodes, weights):
            total += (high - low) / 2 * weight * flags.gradient(y, low + (high - low) * (node + 1) / 2)
    return total


def authors_scheme(x: np.ndarray, y: np.ndarray, target: int, steps: int = 500) -> np.ndarray:
    """The authors' scheme from its definition: the gradient at a = 0, 1/steps, ..., 1, and their mean,
    as fast as numpy allows: every point's subject weights (1 - a)^(k_i - 1) and y_i times them as the
    columns of one (n, 2 (steps + 1)) matrix, and every point's sums over the dissimilar subjects as
    one BLAS product of the flags with it (not a matrix-vector product per point)."""
    flags = Flags(x, target)
    q = 1.0 - np.linspace(0, 1, steps + 1)
    k = flags.k[:, None]
    s = q[None, :] ** k
    lower = np.where(k > 0, q[None, :] ** np.maximum(k - 1, 0), 0.0)
    sums = flags.dissimilar.T @ np.hstack([y[:, None] * lower, lower])  # (d, 2 (steps + 1))
    d_numerator, d_denominator = -sums[:, : steps + 1], -sums[:, steps + 1 :]
    denominator, numerator = s.sum(axis=0), y @ s
    gradients = (d_numerator * denominator - numerator * d_denominator) / denominator**2
    return gradients.mean(axis=1)


def features_and_prediction(frame: pl.DataFrame, d: int) -> tuple[np.ndarray, np.ndarray]:
    return frame.select(f"x{j}" for j in range(d)).to_numpy(), frame["y"].to_numpy()


def part1(rows: int, targets: int, scheme_rows: int, scheme_targets: int) -> None:
    d = 1024
    frame = table(rows, d)
    chosen = list(range(targets))
    explained(frame.head(1000), d, [0])  # compile the kernel, warm DuckDB
    seconds, result = explained(frame, d, chosen)
    print(
        f"part 1: d = {d}, {rows:,} rows, {targets} targets on DuckDB: {seconds:.1f} s"
        f" ({seconds / targets:.3f} s a target; {result.settings['integration_nodes']} nodes)"
    )
    x, y = features_and_prediction(frame, d)
    began = time.perf_counter()
    theirs = np.array([authors_scheme(x, y, target) for target in range(scheme_targets)])
    theirs_seconds = (time.perf_counter() - began) / scheme_targets
    largest = float(np.abs(result.shapley[:scheme_targets]).max())
    print(
        f"  the authors' scheme (501 points) on the first {scheme_targets} of those targets, same rows:"
        f" {theirs_seconds:.2f} s a target, {theirs_seconds / (seconds / targets):.0f}x the library's"
        f" {seconds / targets:.3f} s; the two differ by"
        f" {np.abs(theirs - result.shapley[:scheme_targets]).max() / largest:.1e} of the largest value"
    )
    small = frame.head(scheme_rows)
    x, y = features_and_prediction(small, d)
    _, ours = explained(small, d, list(range(scheme_targets)))
    theirs = np.array([authors_scheme(x, y, target) for target in range(scheme_targets)])
    reference = np.array([converged(x, y, target) for target in range(scheme_targets)])
    largest = float(np.abs(reference).max())
    print(
        f"  on {scheme_rows} rows, against a converged composite rule: the library off by"
        f" {np.abs(ours.shapley - reference).max() / largest:.1e}, the scheme by"
        f" {np.abs(theirs - reference).max() / largest:.1e} of the largest value"
    )


def part2(rows: int, targets: int) -> None:
    print("part 2: the cost in d (same rows and targets)")
    for d in (64, 256, 1024, 2048):
        frame = table(rows, d)
        explained(frame.head(500), d, [0])
        seconds, _ = explained(frame, d, list(range(targets)))
        print(f"  d = {d:5,}: {seconds:7.2f} s, {seconds / d * 1000:.2f} ms per feature")


def part3(rows: int, targets: int) -> None:
    frame = table(rows, 1024)
    seconds, _ = explained(frame, 1024, list(range(targets)), engine=cohortsql.DuckDB(memory_limit="500MB"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"part 3: memory_limit='500MB': {seconds:.1f} s, peak RSS of this process so far {peak:,.0f} MB")


def part4(rows: int, targets: int, repeats: int) -> None:
    """A call's fixed cost and its cost per target against the authors' scheme, at 20,000 rows."""
    d = 1024
    frame = table(rows, d)
    explained(frame.head(1000), d, [0])  # compile the kernel, warm DuckDB
    print(f"part 4: d = {d}, after a warm-up call (medians of {repeats})")
    for size in (1000, rows):
        seconds = statistics.median(explained(frame.head(size), d, [0])[0] for _ in range(repeats))
        print(f"  one target, {size:,} rows: {seconds:.2f} s")
    seconds = statistics.median(explained(frame, d, list(range(targets)))[0] for _ in range(repeats))
    x, y = features_and_prediction(frame, d)
    began = time.perf_counter()
    for target in range(min(targets, 3)):
        authors_scheme(x, y, target)
    theirs = (time.perf_counter() - began) / min(targets, 3)
    print(
        f"  {targets} targets, {rows:,} rows: {seconds:.2f} s, {seconds / targets:.3f} s a target (whole call /"
        f" {targets}); the authors' scheme as one BLAS product a target: {theirs:.2f} s a target,"
        f" {theirs / (seconds / targets):.1f}x"
    )


def part5(rows: int, targets: int) -> None:
    """The widest table accepted, under a memory limit: d = 10,000 binary features."""
    d = 10_000
    frame = table(rows, d)
    seconds, _ = explained(frame, d, list(range(targets)), engine=cohortsql.DuckDB(memory_limit="1GB"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"part 5: d = {d:,}, {rows:,} rows, {targets} targets, memory_limit='1GB': {seconds:.1f} s, peak RSS of"
        f" this process so far {peak:,.0f} MB (the table itself {frame.estimated_size() / 2**20:,.0f} MB in polars)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--targets", type=int, default=100)
    parser.add_argument("--scheme-rows", type=int, default=250)
    parser.add_argument("--scheme-targets", type=int, default=2)
    parser.add_argument("--parts", default="1,2,3,4")
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    print(machine())
    parts = {int(part) for part in arguments.parts.split(",")}
    if 1 in parts:
        part1(arguments.rows, arguments.targets, arguments.scheme_rows, arguments.scheme_targets)
    if 2 in parts:
        part2(min(arguments.rows, 20_000), min(arguments.targets, 10))
    if 3 in parts:
        part3(arguments.rows, arguments.targets)
    if 4 in parts:
        part4(min(arguments.rows, 20_000), min(arguments.targets, 20), arguments.repeats)
    if 5 in parts:
        part5(min(arguments.rows, 20_000), min(arguments.targets, 5))


if __name__ == "__main__":
    main()
