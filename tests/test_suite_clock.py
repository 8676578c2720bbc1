"""The suite's own promise: no test can fail because the machine is busy. Nothing in ``tests/`` waits on a
clock shorter than the suite's per-test timeout (pytest-timeout, set in pyproject.toml), and property
tests have no deadline (the ``cohortsql`` hypothesis profile of ``tests/conftest.py``). Timing belongs in
``benchmarks/``."""

import re
import tomllib
from pathlib import Path

from hypothesis import settings

TESTS = Path(__file__).resolve().parent
PYPROJECT = TESTS.parent / "pyproject.toml"

LIMIT = re.compile(r"\b(?:timeout|deadline|timeout_seconds)\s*=\s*(\d+(?:\.\d+)?)")
"""A literal limit in seconds (or a hypothesis deadline in milliseconds) written in a test."""
CLOCK_ASSERTION = re.compile(r"assert[^\n]*\b(?:elapsed|seconds|perf_counter|monotonic)\b[^\n]*[<>]")
"""An assertion that compares a measured time."""


def per_test_timeout() -> float:
    return float(tomllib.loads(PYPROJECT.read_text())["tool"]["pytest"]["ini_options"]["timeout"])


def test_property_tests_have_no_deadline():
    assert settings.default.deadline is None
    assert settings.default.derandomize  # the same examples on every run


def test_no_test_waits_on_a_clock_shorter_than_the_suites_timeout():
    floor = per_test_timeout()
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            limits = [float(value) for value in LIMIT.findall(line)]
            if any(limit < floor for limit in limits) or CLOCK_ASSERTION.search(line):
                found.append(f"{path.relative_to(TESTS)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_ci_runs_every_spark_row_that_a_developers_run_skips():
    """`python -m pytest` skips the Spark rows of the tests every engine runs (Spark only in the
    parameters); CI sets the flag that runs them. Tests about Spark itself are never rows."""
    from conftest import SPARK_ROWS, spark_row

    assert f"{SPARK_ROWS}=1 python -m pytest" in (TESTS.parent / ".ci" / "run").read_text()
    assert spark_row("tests/api/test_weights.py::test_a_weight_of_zero_is_a_dropped_row[spark]")
    assert spark_row("tests/conformance/test_matrix.py::test_every_case_on_every_surface[one row-printed_spark]")
    assert not spark_row("tests/engines/test_engines.py::test_spark_equals_duckdb[classic-defaults]")
    assert not spark_row("tests/engines/test_spark_ids.py::test_text_ids_keep_grouping[a]")
    assert not spark_row("tests/api/test_weights.py::test_a_weight_of_zero_is_a_dropped_row[duckdb]")
