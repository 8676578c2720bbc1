"""Ctrl-C is never lost: a KeyboardInterrupt that a library swallows (pyarrow importing pandas on first
use inside its conversions did) still stops the public call, at its next batch or before it returns."""

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import importlib.abc, signal, sys

    class SwallowedInterrupt(importlib.abc.MetaPathFinder):
        armed = fired = False

        def find_spec(self, name, path=None, target=None):
            if name == "pandas" and self.armed and not self.fired:
                self.fired = True
                try:
                    signal.raise_signal(signal.SIGINT)  # Ctrl-C while pyarrow imports pandas ...
                except KeyboardInterrupt:
                    pass  # ... and the exception lost inside the library's C code
            return None

    hook = SwallowedInterrupt()
    sys.meta_path.insert(0, hook)
    import polars as pl
    import cohortsql

    frame = pl.DataFrame({"a": [1.0, 2, 3, 4, 5], "b": [0, 1, 0, 1, 1], "y": [0.1, 0.5, 0.9, 0.3, 0.4]})
    hook.armed = True
    try:
        cohortsql.{call}
        print("returned" if hook.fired else "not fired")
    except KeyboardInterrupt:
        print("interrupted")
    """
)


@pytest.mark.parametrize(
    "call",
    [
        'cohort_shapley(frame, prediction="y", similarity=["a", "b"])',
        'shapley_effects(frame, prediction="y", similarity=["a", "b"])',
        'uniqueness_shapley(frame, similarity=["a", "b"])',
    ],
)
def test_a_ctrl_c_that_a_library_swallows_still_stops_the_call(call):
    script = SCRIPT.replace("{call}", call)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "interrupted", result.stdout + result.stderr


def test_the_callers_own_handler_is_kept_and_the_default_one_restored():
    import signal

    from cohortsql.run.interrupts import noticing_interrupts

    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with noticing_interrupts():
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler  # the flag's handler
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    def own(signum, frame):
        pass

    signal.signal(signal.SIGINT, own)
    try:
        with noticing_interrupts():
            assert signal.getsignal(signal.SIGINT) is own  # a caller that handles Ctrl-C its own way
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
