"""How the command line fails: one line on stderr per warning and per failure (status 2), one line
and status 130 after Ctrl-C; ``--debug`` shows tracebacks instead."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from cohortsql.cli.flags import cli_spelling
from cohortsql.errors import CohortError, CohortWarning
from cohortsql.interrupts import noticing_interrupts

INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT), as shells report it."""


_RECORDING: list[list[warnings.WarningMessage]] = []
"""The warnings of the command that is running (one list while it runs), so that it can print them
before its results."""


def print_warnings_so_far() -> set[str]:
    """Print the running command's warnings now, before the results they qualify, and return their
    texts (a summary marks the features they name). Other categories wait for the end: printing them
    while the recorder runs would record them again."""
    if not _RECORDING:
        return set()
    caught = _RECORDING[-1]
    ours = [warning for warning in caught if issubclass(warning.category, CohortWarning)]
    caught[:] = [warning for warning in caught if not issubclass(warning.category, CohortWarning)]
    _print_warnings(ours)
    return {str(warning.message) for warning in ours}


@contextmanager
def _reported_failures(debug: bool) -> Iterator[None]:
    """One line on stderr per warning; a failure as one line and status 2, Ctrl-C as one line and 130.

    Warnings are printed before a command's results (`print_warnings_so_far`) or at its end, once their
    recorder is gone: printing one while it records (as `warnings.showwarning` does for other
    categories) would record it again, without end."""
    caught: list[warnings.WarningMessage] = []
    try:
        with noticing_interrupts(), warnings.catch_warnings(record=True) as caught, _recording(caught):
            warnings.simplefilter("always", CohortWarning)
            # PySpark warns at import that pandas 3 is not fully supported; cohortsql hands it Arrow.
            warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas", FutureWarning)
            yield
    except (CohortError, OSError) as error:
        if debug:
            raise
        _print_warnings(caught)
        typer.echo(f"cohortsql: error: {cli_spelling(str(error))}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        if debug:
            raise
        typer.echo("cohortsql: interrupted; nothing was written", err=True)
        raise typer.Exit(INTERRUPTED) from None
    _print_warnings(caught)


@contextmanager
def _recording(caught: list[warnings.WarningMessage]) -> Iterator[None]:
    _RECORDING.append(caught)
    try:
        yield
    finally:
        _RECORDING.pop()


def _print_warnings(caught: list[warnings.WarningMessage]) -> None:
    seen: set[str] = set()
    for warning in caught:
        text = str(warning.message)
        if issubclass(warning.category, CohortWarning) and text not in seen:
            seen.add(text)
            typer.echo(f"cohortsql: warning: {cli_spelling(text)}", err=True)
        elif not issubclass(warning.category, CohortWarning):
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
