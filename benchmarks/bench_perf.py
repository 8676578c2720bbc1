"""The performance aims, each a ratio measured in one run on this machine (absolute times drift; ratios hold).

(a) Boston housing, all 506 targets x 13 `quantile:0.1`, exact CS and CS^2, against a naive vectorised
    per-target numpy implementation (every one of the 2^13 cohorts found by testing every subject).
(b) 2,000,000 rows x 12 `abs:0.1` windows: the time for 20 targets over the time for 100 (fixed costs).
(c) 100,000 rows x 20 targets at d = 8, 12, 16 against a per-target numpy loop (masks, np.unique
    histogram, the same numpy Shapley code).
(d) The mask-histogram step alone (d = 12, 2,000,000 rows x 100 targets) against a compiled (numba)
    kernel computing the same histogram on the same cores: the distance to the hardware.
(e) Shapley effects of 1,000,000 rows x 10 `bins:10`: see bench_global.py (against GROUP BY CUBE).

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_perf.py [--only a|b|c|d]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import warnings
from pathlib import Path

import numpy as np
import polars as pl

import cohortsql
from cohortsql import queries
from cohortsql.engines.base import fetch_numpy
from cohortsql.numeric import shapley
from cohortsql.run import preparation as prepare
from cohortsql.run.session import opened_engine
from cohortsql.run.targets import select_targets

sys.path.insert(0, str(Path(__file__).parent))
from bench_exact import PREDICTORS, definition_loop, quantile_deltas  # noqa: E402
from common import compiled_histogram_kernel, machine, median_time  # noqa: E402

BOSTON = Path(__file__).parent.parent / "examples" / "data" / "boston_predictions.parquet"
warnings.simplefilter("ignore", cohortsql.CohortWarning)


def uniform(rows: int, d: int, seed: int = 2026) -> tuple[np.ndarray, np.ndarray, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(rows, d))
    y = x @ rng.normal(size=d) + rng.normal(scale=0.1, size=rows)
    return x, y, pl.DataFrame({f"x{j}": x[:, j] for j in range(d)} | {"y": y})


def aim_a(repeats: int) -> None:
    table = pl.read_parquet(BOSTON)
    similarity = {name: "quantile:0.1" for name in PREDICTORS}
    ours, _ = median_time(
        lambda: cohortsql.cohort_shapley(table, prediction="prediction", similarity=similarity), repeats
    )
    x = table.select(PREDICTORS).to_numpy().astype(float)
    y = table["prediction"].to_numpy()
    naive, _ = median_time(lambda: definition_loop(x, y, quantile_deltas(x)), 3)
    print(
        f"(a) Boston 506 x 13: cohortsql {ours:.3f} s (median of {repeats}), naive numpy {naive:.2f} s (median of 3)"
        f" -> {ours / naive:.3f}x"
    )


def aim_b(repeats: int) -> None:
    _, _, frame = uniform(2_000_000, 12)
    similarity = {f"x{j}": "abs:0.1" for j in range(12)}
    times: dict[int, list[float]] = {20: [], 100: []}
    for _ in range(repeats):  # interleaved, so that a busy spell on the shared machine hits both sizes
        for targets in times:
            seconds, _ = median_time(
                lambda targets=targets: cohortsql.cohort_shapley(
                    frame, prediction="y", similarity=similarity, targets=list(range(targets)), progress=False
                ),
                1,
            )
            times[targets].append(seconds)
    few, many = (statistics.median(times[targets]) for targets in (20, 100))
    print(
        f"(b) 2,000,000 x 12: 20 targets {few:.2f} s, 100 targets {many:.2f} s (medians of {repeats}, interleaved)"
        f" -> {few / many:.3f}"
    )


def numpy_loop(x: np.ndarray, y: np.ndarray, targets: int, delta: float) -> None:
    rows, d = x.shape
    for t in range(targets):
        masks = np.zeros(rows, dtype=np.int64)
        for j in range(d):
            masks |= (np.abs(x[:, j] - x[t, j]) <= delta).astype(np.int64) << j
        distinct, inverse = np.unique(masks, return_inverse=True)
        entries = (
            np.zeros_like(distinct),
            distinct,
            np.bincount(inverse).astype(float),
            np.bincount(inverse, weights=y),
        )
        shapley.cohort_shapley_of_histograms(shapley.GameBatch(*entries, 1, d, np.array([y.mean()]), np.ones(1), 1))


def aim_c(repeats: int) -> None:
    for d in (8, 12, 16):
        x, y, frame = uniform(100_000, d)
        similarity = {f"x{j}": "abs:0.1" for j in range(d)}
        ours, _ = median_time(
            lambda frame=frame, similarity=similarity: cohortsql.cohort_shapley(
                frame, prediction="y", similarity=similarity, targets=list(range(20))
            ),
            repeats,
        )
        loop, _ = median_time(lambda x=x, y=y: numpy_loop(x, y, 20, 0.1), repeats)
        print(
            f"(c) 100,000 x 20 targets, d = {d}: cohortsql {ours:.3f} s, numpy loop {loop:.3f} s -> {ours / loop:.2f}x"
        )


def aim_d(repeats: int) -> None:
    kernel = compiled_histogram_kernel()
    if kernel is None:
        print("(d) needs numba (pip install 'cohortsql[fast]')")
        return
    x, y, frame = uniform(2_000_000, 12)
    contiguous = np.ascontiguousarray(x)
    compiled, _ = median_time(lambda: kernel(contiguous, y, contiguous[:100], 0.1), repeats)
    similarity = {f"x{j}": "abs:0.1" for j in range(12)}
    with opened_engine(frame, {}) as engine:
        prepared = prepare.prepare(
            engine, frame, outcomes=["y"], similarity=similarity, id=None, target_predicate=None, max_features=128
        )
        targets = select_targets(engine, prepared, list(range(100)), None)
        weighted = prepare.weigh_subjects(engine, prepared)
        uploaded = engine.upload(targets.numbered(), "targets")
        sql = queries.histogram.mask_histogram(
            weighted.relation,
            uploaded,
            prepared.features,
            prepared.measures,
            engine.dialect,
            collapsed=prepared.compressed,
        )
        step, _ = median_time(lambda: fetch_numpy(engine, sql, context="benchmark"), repeats)
    pairs = 2_000_000 * 100
    print(
        f"(d) mask histogram, 2,000,000 x 100 targets x 12: SQL step {step:.2f} s ({pairs / step:.2e} pairs/s),"
        f" compiled kernel {compiled:.2f} s ({pairs / compiled:.2e} pairs/s) -> {step / compiled:.1f}x"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["a", "b", "c", "d"])
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    print(machine())
    for name, aim in {"a": aim_a, "b": aim_b, "c": aim_c, "d": aim_d}.items():
        if options.only in (None, name):
            aim(options.repeats)
