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
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.stdout.strip() == "interrupted", result.stdout + result.stderr


def test_the_callers_own_handler_runs_and_decides():
    """PySpark installs a handler that cancels its jobs and raises: it still runs, and its interrupt is
    noticed; a handler that does not raise is the caller's choice, and the call goes on."""
    import signal

    from cohortsql.interrupts import check_not_interrupted, noticing_interrupts

    before = signal.getsignal(signal.SIGINT)
    seen = []

    def cancelling(signum, frame):
        seen.append("cancelled")
        raise KeyboardInterrupt

    def ignoring(signum, frame):
        seen.append("ignored")

    try:
        signal.signal(signal.SIGINT, cancelling)
        with pytest.raises(KeyboardInterrupt), noticing_interrupts():
            try:
                signal.raise_signal(signal.SIGINT)
            except KeyboardInterrupt:
                pass  # swallowed: the check at the end still stops the block
        assert signal.getsignal(signal.SIGINT) is cancelling
        signal.signal(signal.SIGINT, ignoring)
        with noticing_interrupts():
            signal.raise_signal(signal.SIGINT)
            check_not_interrupted()
    finally:
        signal.signal(signal.SIGINT, before)
    assert seen == ["cancelled", "ignored"]


def test_a_call_on_another_thread_never_hides_the_main_threads_ctrl_c():
    """A public call running on another thread (a DuckDB function's callback, a caller's worker that
    outlives its test) once counted as the main thread's outer call: every later call then skipped
    installing the handler, and a swallowed Ctrl-C went unnoticed (the command exited 0)."""
    import signal
    import threading

    from cohortsql.interrupts import noticing_interrupts

    entered, leave, stopped = threading.Event(), threading.Event(), []

    def other_call():
        try:
            with noticing_interrupts():
                entered.set()
                leave.wait(60)
        except KeyboardInterrupt:
            stopped.append(True)  # the Ctrl-C stops every running call, this one too

    other = threading.Thread(target=other_call)
    other.start()
    try:
        assert entered.wait(60)
        with pytest.raises(KeyboardInterrupt), noticing_interrupts():
            try:
                signal.raise_signal(signal.SIGINT)
            except KeyboardInterrupt:
                pass  # swallowed, as pyarrow once did: the flag still stops the call
    finally:
        leave.set()
        other.join(60)
    assert stopped == [True]
