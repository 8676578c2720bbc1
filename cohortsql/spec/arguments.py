"""Checks of the caller's plain arguments (numbers, seeds, options), at the boundary of the API.

Each raises `CohortError` naming the argument and the value, so a wrong type never reaches numpy
or SQL as a raw exception.
"""

from __future__ import annotations

import math
import numbers

from cohortsql.errors import CohortError


def whole_number(name: str, value: object, *, minimum: int) -> int:
    """`value` as an int when it is a whole number (not a bool) of at least `minimum`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise CohortError(f"{name} must be a whole number, got {value!r}")
    if value < minimum:
        raise CohortError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def seed(value: object) -> int | None:
    """A random seed: None, or a whole number >= 0."""
    return None if value is None else whole_number("seed", value, minimum=0)


def positive_number(name: str, value: object) -> float | None:
    """None, or a finite number > 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise CohortError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise CohortError(f"{name} must be a finite number > 0, got {value}")
    return float(value)


def optional_text(name: str, value: object) -> str | None:
    """None, or text."""
    if value is not None and not isinstance(value, str):
        raise CohortError(f"{name} must be text, got {value!r}")
    return value


def exact_or_permutation(method: str, d: int, *, auto_exact_up_to: int, exact_up_to: int, work: str) -> str:
    """``exact`` or ``permutation`` for `d` features: ``auto`` is exact up to `auto_exact_up_to`; an
    explicit ``exact`` beyond `exact_up_to` is refused, saying what grows as 2^d (`work`)."""
    if method == "auto":
        return "exact" if d <= auto_exact_up_to else "permutation"
    if method == "exact" and d > exact_up_to:
        raise CohortError(
            f"the exact method handles at most {exact_up_to} features ({work}); got {d}:"
            " use method='permutation' (or 'auto'), or drop features"
        )
    return method
