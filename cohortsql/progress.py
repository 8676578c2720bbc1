"""A one-line progress report over batches of targets, on stderr, for long runs on a terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO, TypeVar

Batch = TypeVar("Batch")

SHOW_AFTER_SECONDS = 1.0
"""Runs that finish sooner print nothing."""


def track(
    batches: Iterable[Batch],
    *,
    total: int,
    size: Callable[[Batch], int],
    enabled: bool | None,
    stream: TextIO | None = None,
) -> Iterator[Batch]:
    """Yield `batches` unchanged while reporting how many of `total` targets are done.

    `enabled` None shows the report only when `stream` (stderr by default) is a terminal.
    """
    stream = sys.stderr if stream is None else stream
    show = stream.isatty() if enabled is None else enabled
    start = time.perf_counter()
    done = 0
    shown = False
    for batch in batches:
        done += size(batch)
        elapsed = time.perf_counter() - start
        if show and (shown or elapsed >= SHOW_AFTER_SECONDS or enabled) and done < total:
            remaining = elapsed / done * (total - done)
            stream.write(f"\rcohortsql: {done:,}/{total:,} targets, {elapsed:.0f} s, about {remaining:.0f} s left ")
            stream.flush()
            shown = True
        yield batch
    if shown:
        stream.write(f"\rcohortsql: {total:,}/{total:,} targets, {time.perf_counter() - start:.0f} s{' ' * 20}\n")
        stream.flush()
