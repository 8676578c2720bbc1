"""The numba kernels' compilations: said on stderr, left out of a run's pace and a dry run's estimate,
a few per kernel whatever the column types, and none in a second process (numba's cache).

Counted, never timed: `cohortsql.numeric.compilation` sees numba's ``numba:compile`` events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from cohortsql.numeric import compilation
from cohortsql.run.pace import Pacer
from cohortsql.run.progress import Silent

pytest.importorskip("numba")

# Tables of every column type the integrated kernel reads: small integers, doubles, integers too
# large for a byte, text, booleans, missing values, and many binary columns.
SCRIPT = textwrap.dedent(
    """
    import json, sys, warnings
    import numpy as np, polars as pl
    import cohortsql
    from cohortsql.numeric import compilation

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    n = 60
    tables = [
        ({"a": rng.integers(0, 3, n), "b": rng.normal(size=n)}, {"a": "exact", "b": "abs:0.5"}),
        ({"b": rng.normal(size=n), "c": rng.normal(size=n)}, {"b": "abs:0.5", "c": "abs:0.5"}),
        ({"a": rng.integers(0, 10**12, n)}, {"a": "abs:1000"}),
        ({"t": rng.choice(["x", "y"], n), "q": rng.integers(0, 2, n) == 1}, {"t": "exact", "q": "exact"}),
        ({"a": [None, *rng.integers(0, 3, n - 1)], "b": [None, *rng.normal(size=n - 1)]}, {"a": "exact", "b": "abs:0.5"}),
        ({f"f{i}": rng.integers(0, 2, n) for i in range(12)}, {f"f{i}": "exact" for i in range(12)}),
    ]
    plan = str(cohortsql.estimate(
        pl.DataFrame({**tables[0][0], "p": rng.normal(size=n)}),
        prediction="p", similarity=tables[0][1], method="integrated", targets=list(range(10)),
    ))
    for columns, similarity in tables:
        frame = pl.DataFrame({**columns, "p": rng.normal(size=n)})
        cohortsql.cohort_shapley(frame, prediction="p", similarity=similarity, method="integrated", targets=[0, 1])
    print(json.dumps({"compiled": compilation.compilations(), "plan": plan}))
    """
)


def _run(cache: str) -> tuple[dict, str]:
    environment = {**os.environ, "NUMBA_CACHE_DIR": cache}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=environment, timeout=600, check=True
    )
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


@pytest.mark.timeout(1200)
def test_a_first_process_says_it_compiles_a_few_kernels_and_a_second_compiles_none(tmp_path):
    first, said = _run(str(tmp_path))
    # every column type above, and the dry run, with the two argument types the kernel needs
    # (integers as bytes, or not): no compilation per column type
    assert first["compiled"] and set(first["compiled"]) == {"dissimilar_histogram"}
    assert len(first["compiled"]) <= 2
    assert said.count("compiling the numba kernel 'dissimilar_histogram'") == len(first["compiled"])
    assert "compiling the numba kernels took" in first["plan"] and "not in the estimate" in first["plan"]
    second, said = _run(str(tmp_path))
    assert second["compiled"] == []
    assert "compiling" not in said and "compiling" not in second["plan"]


def test_a_batch_that_compiles_is_timed_without_its_compilation(monkeypatch):
    """A pilot batch that compiled for 100 s is timed as the batch alone (the run reads numba's cache)."""
    spent = iter([0.0, 100.0, 100.0, 100.0])
    monkeypatch.setattr(compilation, "seconds", lambda: next(spent))
    pacer = Pacer(total=2, reporter=Silent(), pairs_per_target=10, sums_per_pair=1, memory_batch=1)
    for _ in pacer.batches():
        pass
    assert pacer.timed[0][1] == 0.0  # the batch took less than the 100 s it compiled
    assert len(pacer.timed) == 2


def test_announcements_go_to_the_innermost_note_and_stop_with_the_block(monkeypatch):
    monkeypatch.setattr(compilation, "_WATCH", compilation._Watch())
    said: list[str] = []
    with compilation.announcing(said.append):
        compilation._WATCH.started("dissimilar_histogram", True)
        compilation._WATCH.started("impl", False)  # numba's own functions, compiled inside the kernel's
        compilation._WATCH.ended(False)
        compilation._WATCH.ended(True)
    compilation._WATCH.started("fused", True)
    compilation._WATCH.ended(True)
    assert len(said) == 1 and "'dissimilar_histogram'" in said[0] and "about 10 s" in said[0]
    assert compilation.compilations() == ("dissimilar_histogram", "fused")


def test_the_wide_tables_tutorial_shows_the_announcement_as_it_is_said(monkeypatch):
    monkeypatch.setattr(compilation, "_WATCH", compilation._Watch())
    said: list[str] = []
    with compilation.announcing(said.append):
        compilation._WATCH.started("dissimilar_histogram", True)
        compilation._WATCH.ended(True)
    page = (Path(__file__).parents[2] / "docs" / "tutorials" / "wide-tables.md").read_text(encoding="utf-8")
    assert f"cohortsql: {said[0]}\n" in page


@pytest.mark.timeout(900)
def test_a_histogram_built_on_threads_compiles_its_kernel_once_and_finishes(tmp_path):
    """This run (a fresh cache, progress reported) hung before printing anything when two of the
    in-process histogram's threads imported numba at once: one thread's import failed inside
    llvmlite's lock (numba's lock callback met a partially imported ``numba.core.event``) and left it
    held, and the other waited for it for ever. numba is now imported by one thread
    (`compilation.watch`), and the first batch is added on the calling thread."""
    data = tmp_path / "rows.parquet"
    duckdb.sql(
        "COPY (SELECT hash(range) % 1000 / 1000.0 AS x0, hash(range, 1) % 1000 / 1000.0 AS x1,"
        f" hash(range, 2) % 1000 / 1000.0 AS x2, range * 1.0 AS y FROM range(1000000)) TO '{data}' (FORMAT parquet)"
    )
    windows = [argument for j in range(3) for argument in ("--similar", f"x{j}=abs:0.05")]
    command = [sys.executable, "-m", "cohortsql.cli", "shapley", str(data), "--prediction", "y", *windows]
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [*command, "--sample", "3000", "--seed", "1", "--progress"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
        check=True,
    )
    assert "3000 targets x 3 features" in done.stdout
    assert done.stderr.count("compiling the numba kernel 'pair_histogram'") == 1


FIRST_USE_ON_THREADS = textwrap.dedent(
    """
    import json, sys, threading
    from cohortsql.numeric import kernels

    assert "numba" not in sys.modules
    barrier = threading.Barrier(8)
    functions, failures = [], []

    def first_use():
        barrier.wait()
        try:
            functions.append(kernels.compiled_function("pair_histogram"))
        except BaseException as failure:
            failures.append(repr(failure))

    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    from numba.core import event

    listeners = [listener for listener in event._registered["numba:compile"] if "cohortsql" in type(listener).__module__]
    hung = sum(thread.is_alive() for thread in threads)
    print(json.dumps({"functions": len(functions), "listeners": len(listeners), "failures": failures, "hung": hung}))
    """
)


def test_threads_that_first_use_a_kernel_at_once_import_numba_once_and_register_one_listener():
    """Eight threads asking for a kernel at once, numba not yet imported: each registered a listener
    of its own (eight), the race in which two threads' imports of numba hung a run."""
    done = subprocess.run(
        [sys.executable, "-c", FIRST_USE_ON_THREADS], capture_output=True, text=True, timeout=300, check=True
    )
    assert json.loads(done.stdout.splitlines()[-1]) == {"functions": 8, "listeners": 1, "failures": [], "hung": 0}
