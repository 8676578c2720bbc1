"""Compilations of the numba kernels (`cohortsql.numeric.compiled`) in this process: counted, timed and
announced.

numba compiles a kernel the first time it is called with new argument types, unless its on-disk cache
holds that compilation (which then takes a fraction of a second to load). A compilation takes seconds
(`EXPECTED_SECONDS`), so a call that compiles says so before it waits (`announcing`), and a run's pace
and a dry run's estimate leave the compilation out of the time they measure (`seconds`): the run after
it reads the cache.

The watch is numba's own event API (``numba.core.event``): a listener on ``numba:compile`` events, which
numba emits only when it compiles (a load from the cache emits none).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

COMPILED_MODULE = "cohortsql.numeric.compiled"

EXPECTED_SECONDS = {"dissimilar_histogram": 10.0, "fused": 16.0, "pair_histogram": 3.0}
"""A kernel's compilation on 2 cores (numba 0.68, measured with a fresh ``NUMBA_CACHE_DIR``:
`benchmarks/bench_compile.py`); a kernel not listed is announced at `DEFAULT_SECONDS`."""
DEFAULT_SECONDS = 10.0


class _Watch:
    """What the listener saw: compilations of the cohortsql kernels, each counted once with the time
    it took (numba compiles the functions a kernel calls inside the kernel's own compilation)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.compiled: list[str] = []
        self.seconds = 0.0
        self.depth = 0
        self.began = 0.0
        self.announce: list[Callable[[str], None]] = []

    def started(self, name: str, ours: bool) -> None:
        with self.lock:
            self.depth += 1
            if self.depth > 1 or not ours:
                return
            self.began = time.perf_counter()
            self.compiled.append(name)
            announce = self.announce[-1] if self.announce else None
        if announce is not None:
            expected = EXPECTED_SECONDS.get(name, DEFAULT_SECONDS)
            announce(
                f"compiling the numba kernel {name!r} for this machine and these column types: about"
                f" {expected:.0f} s on 2 cores, once (numba's cache serves later calls and processes)"
            )

    def ended(self, ours: bool) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth == 0 and ours:
                self.seconds += time.perf_counter() - self.began


_WATCH = _Watch()
_registered: list[bool] = []
_REGISTERING = threading.Lock()


def watch() -> None:
    """Start watching numba's compilations (importing numba; once per process, before any kernel runs).

    Threads that call it at once wait for the first, so that numba is first imported by one thread
    and its listener registered once: two threads of DuckDB's in-process histogram importing numba at
    once hung a run (a thread waited for llvmlite's lock inside numba's import for ever, the thread that
    had begun the import gone), and every thread that called this at once registered a listener."""
    with _REGISTERING:
        if not _registered:
            _register()


def _register() -> None:
    from numba.core import event

    class Listener(event.Listener):
        def on_start(self, happened: Any) -> None:
            function = happened.data["dispatcher"].py_func
            _WATCH.started(function.__name__, function.__module__ == COMPILED_MODULE)

        def on_end(self, happened: Any) -> None:
            function = happened.data["dispatcher"].py_func
            _WATCH.ended(function.__module__ == COMPILED_MODULE)

    event.register("numba:compile", Listener())
    _registered.append(True)


def compilations() -> tuple[str, ...]:
    """The kernels compiled in this process so far (not read from numba's cache), in order."""
    with _WATCH.lock:
        return tuple(_WATCH.compiled)


def seconds() -> float:
    """The time this process has spent compiling kernels so far."""
    with _WATCH.lock:
        return _WATCH.seconds


@contextmanager
def announcing(note: Callable[[str], None]) -> Iterator[None]:
    """Within the block, each kernel compilation is said first through `note` (a reporter's note)."""
    with _WATCH.lock:
        _WATCH.announce.append(note)
    try:
        yield
    finally:
        with _WATCH.lock:
            _WATCH.announce.remove(note)
