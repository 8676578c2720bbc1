"""Queries run so that Ctrl-C stops them: in a worker thread while the caller's thread waits."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any, TypeVar

Result = TypeVar("Result")

INTERRUPT_GRACE_SECONDS = 5.0
"""After Ctrl-C, how long to wait for the interrupted query to stop before giving up on it."""


_WORKERS = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="cohortsql-query")
"""Threads that run queries, kept between queries: starting one per query cost ~1 ms each."""


def interruptible(action: Callable[[], Result], interrupt: Callable[[], None]) -> Result:
    """Run `action` (a query) in a worker thread while this thread waits, so that Ctrl-C is noticed at
    once: it calls `interrupt` (the engine stops the query) and re-raises KeyboardInterrupt.

    A query running in C++ or the JVM does not return to Python until it finishes, so a signal that
    arrives meanwhile would wait for it (34 s in one measured run); the waiting thread stays responsive."""
    outcome: list[Any] = []
    finished = threading.Event()  # not Thread.join: an interrupted join may return at once the next time

    def work() -> None:
        try:
            outcome.append((True, action()))
        except BaseException as error:  # handed to the waiting thread
            outcome.append((False, error))
        finally:
            finished.set()

    _WORKERS.submit(work)
    try:
        while not finished.wait(0.05):
            pass
    except KeyboardInterrupt:
        interrupt()
        finished.wait(INTERRUPT_GRACE_SECONDS)
        raise
    succeeded, value = outcome[0]
    if not succeeded:
        raise value
    return value
