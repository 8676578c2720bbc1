"""Benchmark Shapley effects on the grouping-sets path against a plain DuckDB GROUP BY CUBE.

1,000,000 rows, 10 predictors binned into 10 equal-width bins each (`bins:10`), every row a target:
`cohortsql.variance_shapley` (SQL collapses the rows into cells, numpy walks the lattice of the 1024
subsets) beside one DuckDB query that computes the same v_var(u) for every u with GROUP BY CUBE
over the same bin keys. Both must agree.

    python benchmarks/bench_global.py [--rows 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

import cohortsql
from cohortsql.numeric import shapley

sys.path.insert(0, str(Path(__file__).parent))
from common import machine, median_time  # noqa: E402


def cube_effects(frame: pl.DataFrame, d: int, k: int) -> np.ndarray:
    """Shapley effects from v_var(u) computed by DuckDB's GROUP BY CUBE of the bin keys."""
    connection = duckdb.connect()
    connection.register("frame", frame.to_arrow())
    keys = ", ".join(
        f"least(floor((x{j} - min(x{j}) OVER ()) / (max(x{j}) OVER () - min(x{j}) OVER ()) * {k}), {k - 1}) AS k{j}"
        for j in range(d)
    )
    names = ", ".join(f"k{j}" for j in range(d))
    reversed_names = ", ".join(f"k{j}" for j in reversed(range(d)))
    rows = connection.execute(
        f"""
        WITH keyed AS (SELECT {keys}, y - avg(y) OVER () AS centered FROM frame),
        cube AS (
            SELECT {(1 << d) - 1} - GROUPING({reversed_names}) AS subset, count(*) AS n, sum(centered) AS s
            FROM keyed GROUP BY CUBE ({names})
        )
        SELECT subset, sum(s * s / n) / {frame.height} FROM cube GROUP BY subset
        """
    ).fetchall()
    game = np.zeros(1 << d)
    for subset, value in rows:
        game[subset] = value
    game[0] = 0.0
    return shapley.shapley_values(game)


def main(rows: int, repeats: int, d: int = 10, k: int = 10) -> None:
    rng = np.random.default_rng(2026)
    x = rng.uniform(size=(rows, d))
    y = x @ np.linspace(1, 0.1, d) + x[:, 0] * x[:, 1] + rng.normal(scale=0.1, size=rows)
    frame = pl.DataFrame({f"x{j}": x[:, j] for j in range(d)} | {"y": y})
    similarity = {f"x{j}": f"bins:{k}" for j in range(d)}
    seconds, effects = median_time(
        lambda: cohortsql.variance_shapley(frame, prediction="y", similarity=similarity), repeats
    )
    cube_seconds, cube = median_time(lambda: cube_effects(frame, d, k), 1)
    difference = np.abs(effects.effects["shapley_effect"].to_numpy() - cube).max()
    print(machine())
    print(f"Shapley effects, {rows:,} rows x {d} predictors (bins:{k}), every row a target, path {effects.path}")
    print(f"    cohortsql variance_shapley median of {repeats}: {seconds:.2f} s")
    print(
        f"    DuckDB GROUP BY CUBE (1 run):          {cube_seconds:.2f} s  -> cohortsql takes {seconds / cube_seconds:.3f}x"
    )
    print(f"    largest |difference| of the effects: {difference:.2e}; explained share {effects.explained_share:.4f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    main(options.rows, options.repeats)
