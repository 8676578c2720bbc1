"""The one exception type that users of cohortsql see."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Sequence

from cohortsql.redaction import redacted


class CohortError(ValueError):
    """A problem with the caller's input: the message names the column or value and the fix.

    Everything a user can get wrong (a missing column, a malformed similarity kind, a bad
    target id, an unreadable file) raises this type, never a raw DuckDB, KeyError or numpy error.
    Its message never shows a password: it is `cohortsql.redaction.redacted` as it is made.
    """

    def __init__(self, message: object = "", *rest: object) -> None:
        super().__init__(redacted(str(message)), *rest)


class CohortWarning(UserWarning):
    """A result that will be computed but may mislead: the message names the column and a remedy.

    For example an `exact` feature with thousands of levels, or targets that mostly end in a cohort
    of one row. Silence it with ``warnings.filterwarnings("ignore", category=cohortsql.CohortWarning)``.
    Its message never shows a password (`cohortsql.redaction.redacted`).
    """

    def __init__(self, message: object = "", *rest: object) -> None:
        super().__init__(redacted(str(message)), *rest)


def check_choice(name: str, value: object, choices: Sequence[str]) -> None:
    """Raise a `CohortError` unless `value` is one of `choices` (an option given as text)."""
    if value not in choices:
        raise CohortError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_HELPERS = (contextlib.__file__,)
"""Standard-library modules cohortsql's own frames pass through (a context manager's exit)."""


def warn(message: str) -> None:
    """Emit a `CohortWarning` pointing at the caller's own line: the first frame outside cohortsql
    (the notebook cell, the script, the command line's entry), however deep inside the package it was
    raised, so that ``warnings`` shows the user's code rather than a module of the library."""
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and (
        os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE) or frame.f_code.co_filename in _HELPERS
    ):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, CohortWarning, stacklevel=level)
