"""One feature's similarity test in numbers, as `cohortsql.numeric.pair_masks` evaluates it: what a
kind's SQL predicate says (`cohortsql.request.similarity.Similarity.pair_test`), for engines that
build the mask histogram outside SQL. No imports beyond the standard library: every kind names its test.
"""

from __future__ import annotations

from dataclasses import dataclass

EQUAL, WINDOW, RELATIVE, BINS = 0, 1, 2, 3
"""x_s = x_t; |x_s - x_t| <= delta; |x_s - x_t| <= delta |x_t|; the same bin of k over [low, low + width]."""


@dataclass(frozen=True)
class PairTest:
    """One feature's similarity test in numbers (see the module docstring)."""

    code: int
    delta: float = float("nan")
    """WINDOW's half-width or RELATIVE's fraction (NaN: a missing parameter, never similar)."""
    low: float | int = 0
    """BINS' low edge, in the column's own type (an integer for integer columns)."""
    width: float = float("nan")
    bins: int = 1
    integer: bool = False
    """Values are integers (BIGINT, days, microseconds, booleans, text codes): differences exact."""
    text: bool = False
    """Values are text, compared by their codes among the targets' values."""
