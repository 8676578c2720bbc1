"""The null reference's cost: a run with ``null=19`` against the same run without it, alternated, and
the dry run's estimate of each against its run.

(a) the audit of a 2,000-row table of small cohorts (`cohortsql.datasets.floor`: 8 features, 6 quantile
    windows, two protected attributes, 200 bootstrap replicates and interaction values): 38 copies;
(b) the Shapley effects of 100 sampled targets of a 1,000,000-row table with 12 `abs` windows, the null of
    one feature: 19 copies, each 1e8 target-subject pairs.

Each configuration runs without and with the null in turn, `--rounds` times (the machine is shared:
the ratio of medians in one run is what holds); then one dry run of each.

Usage: python benchmarks/bench_null.py [--rounds 3] [--only audit|million]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from common import machine  # noqa: E402

import cohortsql  # noqa: E402


def audit_2000() -> tuple[Callable[..., Any], Callable[..., Any], dict[str, Any]]:
    table = cohortsql.datasets.floor(rows=2000)
    arguments = dict(
        prediction="score",
        protected=["proxy", "coin"],
        similarity={f"x{j}": "quantile:0.1" for j in range(6)},
        id="id",
        seed=1,
    )
    run = lambda **null: cohortsql.audit(table, **arguments, **null)  # noqa: E731
    dry = lambda **null: cohortsql.estimate_audit(table, **arguments, **null)  # noqa: E731
    return run, dry, {"null": 19}


def effects_million() -> tuple[Callable[..., Any], Callable[..., Any], dict[str, Any]]:
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(1_000_000, 12))
    frame = pl.DataFrame({f"x{j}": x[:, j] for j in range(12)}).with_columns(
        y=pl.Series(x[:, :4].sum(axis=1) + rng.normal(scale=0.1, size=len(x)))
    )
    arguments = dict(
        prediction="y",
        similarity={f"x{j}": "abs:0.3" for j in range(12)},
        sample=100,
        seed=1,
        engine=cohortsql.DuckDB(memory_limit="4GB"),
    )
    run = lambda **null: cohortsql.shapley_effects(frame, **arguments, **null)  # noqa: E731
    dry = lambda **null: cohortsql.estimate(frame, **{**arguments, **null})  # noqa: E731
    return run, dry, {"null": 19, "null_features": ["x0"]}


CONFIGURATIONS = {"audit": audit_2000, "million": effects_million}


def timed(call: Callable[[], Any]) -> float:
    began = time.perf_counter()
    call()
    return time.perf_counter() - began


def main(rounds: int, only: str | None) -> None:
    warnings.simplefilter("ignore", cohortsql.CohortWarning)
    print(machine())
    print("| configuration | without the null (s) | with null=19 (s) | ratio of medians | dry run / run, with |")
    print("| --- | --- | --- | --- | --- |")
    for name, make in CONFIGURATIONS.items():
        if only is not None and name != only:
            continue
        run, dry, null = make()
        plain, nulled = [], []
        for _ in range(rounds):
            plain.append(timed(run))
            nulled.append(timed(partial(run, **null)))
        estimate = dry(**null).estimated_seconds
        ratio = statistics.median(nulled) / statistics.median(plain)
        print(
            f"| {name} | {' / '.join(f'{value:.1f}' for value in plain)} | {' / '.join(f'{value:.1f}' for value in nulled)}"
            f" | {ratio:.2f} | {estimate / statistics.median(nulled):.2f} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=list(CONFIGURATIONS))
    options = parser.parse_args()
    main(options.rounds, options.only)
