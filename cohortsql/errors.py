"""The one exception type that users of cohortsql see."""

from __future__ import annotations


class CohortError(ValueError):
    """A problem with the caller's input: the message names the column or value and the fix.

    Everything a user can get wrong (a missing column, a malformed similarity kind, a bad
    target id, an unreadable file) raises this type, never a raw DuckDB, KeyError or numpy error.
    """
