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
