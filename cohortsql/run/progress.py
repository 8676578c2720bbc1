"""Progress reports on stderr: a rich progress bar on a terminal, a display that updates in a notebook,
and otherwise (when asked for) a log line at most every 10 seconds.

`reporter(enabled)` picks one: ``enabled=None`` shows progress only where someone is watching (a
terminal or a notebook) and only for runs longer than a second; ``True`` always reports (log lines
when stderr is a file or a pipe); ``False`` never does. Notes (such as a long run's estimate) are
printed unless ``enabled`` is False.

The time left is the caller's estimate where it gives one (`Reporter.update`'s `seconds_left`: the
pacer's fitted cost per batch and per target, `cohortsql.run.pace`), and none while it has none;
otherwise the elapsed time per target so far times the targets left, right for batches of equal cost.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

SHOW_AFTER_SECONDS = 1.0
"""With progress=None, runs that finish sooner show no bar."""

LOG_EVERY_SECONDS = 10.0
"""Log lines (stderr not a terminal, progress=True) are at most this far apart."""


def duration(seconds: float) -> str:
    """Seconds in words: '0.4 s', '45 s', '12 min', '4.3 h'."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Reporter:
    """Reports nothing (the base of every reporter: the methods they share)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.total = 0
        self.unit = "targets"
        self.started = time.perf_counter()
        self.estimated = False
        self.seconds_left: float | None = None

    def start(self, total: int, unit: str = "targets", *, estimated: bool = False) -> None:
        """A new stage of `total` targets begins (`unit` says what is counted, e.g. "distinct targets of
        1,500"); with `estimated`, every update gives the time left (or None: not known yet)."""
        self.total = total
        self.unit = unit
        self.started = time.perf_counter()
        self.estimated = estimated
        self.seconds_left = None

    def update(self, done: int, seconds_left: float | None = None) -> None:
        """`done` of the stage's targets are finished (and, in an estimated stage, `seconds_left` to go)."""
        self.seconds_left = seconds_left
        self._show(done)

    def _show(self, done: int) -> None:
        """Show that `done` of the stage's targets are finished."""

    def _left(self, done: int) -> str:
        """The time left as ", about 12 min left", or "" where no estimate is known or nothing is left."""
        if not 0 < done < self.total:
            return ""
        if self.estimated:
            left = self.seconds_left
        else:
            left = (time.perf_counter() - self.started) / done * (self.total - done)
        return "" if left is None else f", about {duration(left)} left"

    def note(self, message: str) -> None:
        """A message worth a line of its own (printed by every reporter but the silent one)."""
        self.stream.write(f"cohortsql: {message}\n")
        self.stream.flush()

    def finish(self) -> None:
        """The stage is over."""

    def _line(self, done: int) -> str:
        elapsed = time.perf_counter() - self.started
        return f"{done:,}/{self.total:,} {self.unit}, {duration(elapsed)}{self._left(done)}"


class Silent(Reporter):
    """Reports nothing at all, notes included (progress=False)."""

    def note(self, message: str) -> None:
        return None


class LogLines(Reporter):
    """A line per update at most every `LOG_EVERY_SECONDS`, for logs, pipes and schedulers."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__(stream)
        self.last = 0.0

    def _show(self, done: int) -> None:
        now = time.perf_counter()
        if now - self.last >= LOG_EVERY_SECONDS and done < self.total:
            self.last = now
            self.note(self._line(done))

    def finish(self) -> None:
        self.note(self._line(self.total))


class Bar(Reporter):
    """rich's progress bar on a terminal (shown after `SHOW_AFTER_SECONDS` unless asked for)."""

    def __init__(self, stream: TextIO | None = None, *, eager: bool = False) -> None:
        super().__init__(stream)
        self.eager = eager
        self.bar: Any = None
        self.task: Any = None

    def _show(self, done: int) -> None:
        if self.bar is None and (self.eager or time.perf_counter() - self.started >= SHOW_AFTER_SECONDS):
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self.bar = Progress(
                "cohortsql",
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[left]}"),
                console=Console(file=self.stream),
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task(self.unit, total=self.total, left="")
        if self.bar is not None:
            self.bar.update(self.task, completed=done, left=self._left(done).removeprefix(", "))

    def note(self, message: str) -> None:
        if self.bar is not None:
            self.bar.console.print(f"cohortsql: {message}", markup=False, highlight=False)
        else:
            super().note(message)

    def finish(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


class NotebookDisplay(Reporter):
    """One line in a notebook's output that updates in place (IPython's display)."""

    def __init__(self) -> None:
        super().__init__()
        self.handle: Any = None

    def _show(self, done: int) -> None:
        from IPython.display import display

        text = f"cohortsql: {self._line(done)}"
        if self.handle is None:
            self.handle = display(text, display_id=True)
        else:
            self.handle.update(text)

    def finish(self) -> None:
        if self.handle is not None:
            self.handle.update(f"cohortsql: {self._line(self.total)}")


def in_notebook() -> bool:
    """Whether code runs in a Jupyter kernel (where stderr is not a terminal but someone watches)."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    kernel = getattr(shell, "get_ipython", lambda: None)()
    return kernel is not None and "IPKernelApp" in getattr(kernel, "config", {})


def reporter(enabled: bool | None, stream: TextIO | None = None) -> Reporter:
    """The reporter for `enabled` (see the module docstring) writing to `stream` (stderr)."""
    if enabled is False:
        return Silent(stream)
    target = sys.stderr if stream is None else stream
    if target.isatty():
        return Bar(target, eager=bool(enabled))
    if stream is None and in_notebook():
        return NotebookDisplay()
    return LogLines(target) if enabled else Reporter(target)
