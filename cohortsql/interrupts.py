"""Ctrl-C is never lost: while a public call (or a command) runs on the main thread, SIGINT also sets
a flag, which the call checks between batches and before it returns.

A KeyboardInterrupt raised inside a library's C code can be swallowed there: pyarrow importing pandas
on first use inside ``to_numpy()`` caught it and went on, so a notebook user's Ctrl-C was lost and
the call returned its result. The flag cannot be swallowed.
"""

from __future__ import annotations

import functools
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import ParamSpec, TypeVar

from cohortsql.errors import CohortError

_INTERRUPTED = threading.Event()
_DEPTH = [0]
"""How many calls that notice interrupts are running on the main thread (nested: a command runs a
public call). Calls on other threads (a DuckDB function's callback, a caller's worker thread) are not
counted: one that outlives its caller would otherwise leave every later call of the process thinking
it is nested, and Ctrl-C would no longer set the flag."""

Parameters = ParamSpec("Parameters")
Returned = TypeVar("Returned")


def _noticing(previous: Callable[[int, FrameType | None], object]) -> Callable[[int, FrameType | None], None]:
    """A SIGINT handler that runs `previous` (Python's, which raises KeyboardInterrupt, or one of the
    caller's, such as PySpark's, which cancels its jobs first) and sets the flag when it raises."""

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        try:
            previous(signum, frame)
        except KeyboardInterrupt:
            _INTERRUPTED.set()
            raise

    return on_interrupt


def check_not_interrupted() -> None:
    """Stop (KeyboardInterrupt) if Ctrl-C came during the running call, even if its exception was lost."""
    if _INTERRUPTED.is_set():
        raise KeyboardInterrupt


@contextmanager
def noticing_interrupts() -> Iterator[None]:
    """While the block runs, a Ctrl-C that raises KeyboardInterrupt (Python's own handler, or the
    caller's, such as PySpark's) also sets the flag, and the block ends with a check. Only the main
    thread receives signals; elsewhere, and where SIGINT is ignored or left to the system, the block
    runs as it is."""
    on_main = threading.current_thread() is threading.main_thread()
    outermost = on_main and _DEPTH[0] == 0
    previous = signal.getsignal(signal.SIGINT) if outermost else None
    install = outermost and callable(previous)
    if _DEPTH[0] == 0:
        _INTERRUPTED.clear()  # no main-thread call runs: an earlier Ctrl-C was already raised, or is stale
    if install:
        assert callable(previous)
        signal.signal(signal.SIGINT, _noticing(previous))
    if on_main:
        _DEPTH[0] += 1
    try:
        yield
        check_not_interrupted()
    except Exception:
        # A library that caught the KeyboardInterrupt may have raised its own error instead (DuckDB
        # reading a registered frame's schema said "InvalidInputException: ... KeyboardInterrupt").
        check_not_interrupted()
        raise
    finally:
        if on_main:
            _DEPTH[0] -= 1
        if install:
            signal.signal(signal.SIGINT, previous)


def interruptible_call(function: Callable[Parameters, Returned]) -> Callable[Parameters, Returned]:
    """A public function that notices Ctrl-C (`noticing_interrupts`) from start to return, and whose
    dependencies' panics (a Rust library's ``PanicException``, a `BaseException` that ``except
    Exception`` does not catch) come out as one `CohortError` in one line."""

    @functools.wraps(function)
    def call(*arguments: Parameters.args, **options: Parameters.kwargs) -> Returned:
        try:
            with noticing_interrupts():
                return function(*arguments, **options)
        except BaseException as error:
            if type(error).__name__ != "PanicException":
                raise
            first = (str(error).strip().splitlines() or ["a panic"])[0]
            raise CohortError(f"{function.__name__} failed inside a library it calls: {first}") from None

    return call
