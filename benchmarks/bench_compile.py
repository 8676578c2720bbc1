"""What a first call pays to compile each numba kernel, and what a second process pays instead.

Each kernel is compiled in a process of its own with an empty ``NUMBA_CACHE_DIR`` (as after an install),
then loaded in a second process from the cache that the first wrote; the seconds are numba's
compilations as `cohortsql.numeric.compilation` saw them, and the second process's whole call. The
figures behind `cohortsql.numeric.compilation.EXPECTED_SECONDS`.

Usage: python benchmarks/bench_compile.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import machine  # noqa: E402

TRIGGERS = {
    # the integrated method on DuckDB: the dissimilar-player histogram
    "dissimilar_histogram": """
        import polars as pl
        frame = pl.DataFrame({"a": rng.integers(0, 3, 200), "b": rng.normal(size=200), "p": rng.normal(size=200)})
        cohortsql.cohort_shapley(frame, prediction="p", similarity={"a": "exact", "b": "abs:0.5"},
                                 method="integrated", targets=[0, 1])
    """,
    # the exact method's fused kernel, as a dry run compiles it before its pilot
    "fused": """
        from cohortsql.numeric import kernels
        kernels.compile_now()
    """,
    # the mask histogram Spark's executors build
    "pair_histogram": """
        import pyarrow as pa
        from cohortsql.numeric import pair_masks
        from cohortsql.numeric.pair_tests import EQUAL, WINDOW, PairTest
        columns = [pa.array(rng.integers(0, 3, 50)), pa.array(rng.normal(size=50))]
        tests = [PairTest(EQUAL), PairTest(WINDOW, delta=0.5)]
        encoded = pair_masks.Columns.of(columns, tests, [None, None])
        histogram = pair_masks.PartialHistogram(encoded, tests, 1)
        histogram.add(encoded, np.ones((50, 1)))
    """,
}

SCRIPT = """
import json, time, warnings
warnings.simplefilter("ignore")
began = time.perf_counter()
import numpy as np
import cohortsql
from cohortsql.numeric import compilation
rng = np.random.default_rng(0)
{trigger}
print(json.dumps({{"compiled": compilation.compilations(), "compile_seconds": compilation.seconds(),
                   "call_seconds": time.perf_counter() - began}}))
"""


def run(kernel: str, cache: str) -> dict:
    """The trigger of `kernel` in a new process whose numba cache is `cache`."""
    code = SCRIPT.format(trigger=textwrap.dedent(TRIGGERS[kernel]))
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NUMBA_CACHE_DIR": cache},
    )
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    arguments = parser.parse_args()
    print(machine())
    print(f"{'kernel':<22} {'compiles (s)':>14} {'first call (s)':>15} {'second process (s)':>19}  compiled again")
    for kernel in TRIGGERS:
        compiles, firsts, seconds, again = [], [], [], []
        for _ in range(arguments.rounds):
            with tempfile.TemporaryDirectory() as cache:
                first, second = run(kernel, cache), run(kernel, cache)
            compiles.append(first["compile_seconds"])
            firsts.append(first["call_seconds"])
            seconds.append(second["call_seconds"])
            again.append(len(second["compiled"]))
        print(
            f"{kernel:<22} {statistics.median(compiles):>14.1f} {statistics.median(firsts):>15.1f}"
            f" {statistics.median(seconds):>19.2f}  {max(again)}"
        )


if __name__ == "__main__":
    main()
