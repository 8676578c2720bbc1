"""Similarity kinds: the target-specific tests z_tj(x_ij) of the paper (DESIGN §1).

Each kind is a small immutable object that renders a SQL boolean comparing a subject value with a
target value (rendered as ``s."col"`` and ``t."col"``). Data-dependent kinds (``range``, ``quantile``,
``bins``) first name the aggregates they need over the whole table (`statistics`); the values of
those aggregates are then passed to `predicate`. Rendering never mutates the kind.

The predicates here only see non-NULL values: NULL handling (NULL is similar only to NULL, so a
target is always in its own cohorts) is added once, in `cohortsql.compile`.

Short text forms (`parse_similarity`)::

    exact                  x_i = x_t
    abs:<delta>            |x_i - x_t| <= delta
    relative:<delta>       |x_i - x_t| <= delta * |x_t|
    range:<r>              |x_i - x_t| <= r * (max - min)
    quantile:<r>[:<p>]     |x_i - x_t| <= r * (q_{1-p} - q_p), p = 0.05 by default
    bins:<k>               same bin of k equal-width bins over [min, max]
    sql:<expression>       any SQL boolean over s.<col> (subject) and t.<col> (target)
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from cohortsql.errors import CohortError
from cohortsql.sqltext import render_number

Statistics = Mapping[str, float | None]


class Similarity(ABC):
    """A similarity test z_tj between a subject value and a target value of one predictor."""

    numeric: ClassVar[bool] = True
    """Whether the predictor must be numeric."""

    equivalence: ClassVar[bool] = False
    """Whether the test is an equivalence relation (then every cohort is a GROUP BY cell)."""

    def statistics(self, column: str) -> dict[str, str]:
        """Named SQL aggregates over the whole table that the predicate needs (none by default)."""
        return {}

    @abstractmethod
    def predicate(self, subject: str, target: str, stats: Statistics) -> str:
        """SQL boolean that is true when the subject value is similar to the target value."""

    def interval(self, target: float, stats: Statistics) -> tuple[float, float] | None:
        """The numeric values similar to `target`, as a closed interval (None when not an interval)."""
        return None


def _check_non_negative(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise CohortError(f"{name} must be a finite number >= 0, got {value:g}")
    return value


def _window(subject: str, target: str, delta: float) -> str:
    return f"abs({subject} - {target}) <= {render_number(delta)}"


@dataclass(frozen=True)
class Exact(Similarity):
    """x_i = x_t."""

    numeric: ClassVar[bool] = False
    equivalence: ClassVar[bool] = True

    def key(self, value: str, stats: Statistics) -> str:
        """SQL expression of the value's equivalence class."""
        return value

    def predicate(self, subject: str, target: str, stats: Statistics) -> str:
        return f"{subject} = {target}"

    def interval(self, target: float, stats: Statistics) -> tuple[float, float]:
        return (target, target)

    def __str__(self) -> str:
        return "exact"


@dataclass(frozen=True)
class AbsoluteWindow(Similarity):
    """|x_i - x_t| <= delta."""

    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "delta", _check_non_negative("abs delta", self.delta))

    def predicate(self, subject: str, target: str, stats: Statistics) -> str:
        return _window(subject, target, self.delta)

    def interval(self, target: float, stats: Statistics) -> tuple[float, float]:
        return (target - self.delta, target + self.delta)

    def __str__(self) -> str:
        return f"abs:{self.delta:g}"


@dataclass(frozen=True)
class RelativeWindow(Similarity):
    """|x_i - x_t| <= delta * |x_t| (not symmetric in i and t; the paper allows that)."""

    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "delta", _check_non_negative("relative delta", self.delta))

    def predicate(self, subject: str, target: str, stats: Statistics) -> str:
        return f"abs({subject} - {target}) <= {render_number(self.delta)} * abs({target})"

    def interval(self, target: float, stats: Statistics) -> tuple[float, float]:
        return (target - self.delta * abs(target), target + self.delta * abs(target))

    def __str__(self) -> str:
        return f"relative:{self.delta:g}"


@dataclass(frozen=True)
class RangeWindow(Similarity):
    """|x_i - x_t| <= r * (max - min): the paper's Titanic choice with r = 0.1."""

    fraction: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "fraction", _check_non_negative("range fraction", self.fraction))

    def statistics(self, column: str) -> dict[str, str]:
        return {"min": f"min({column})", "max": f"max({column})"}

    def delta(self, stats: Statistics) -> float:
        """The window half-width for the table the statistics describe."""
        if stats["min"] is None or stats["max"] is None:
            return 0.0
        return self.fraction * (stats["max"] - stats["min"])

    def predicate(self, subject: str, target: str, stats: Statistics) -> str:
        return _window(subject, target, self.delta(stats))

    def interval(self, target: float, stats: Statistics) -> tuple[float, float]:
        return (target - self.delta(stats), target + self.delta(stats))

    def __str__(self) -> str:
        return f"range:{self.fraction:g}"


@dataclass(frozen=True)
class QuantileWindow(Similarity):
    """|x_i - x_t| <= r * (q_{1-p} - q_p), linear-interpolated quantiles: the paper's Boston choice."""

    fraction: float
    p: float = 0.05

    def __post_init__(self) -> None:
        object.__setattr__(self, "fraction", _check_non_negative("quantile fraction", self.fraction))
        p = float(self.p)
        if not 0 <= p < 0.5:
            raise CohortError(f"quantile p must be in [0, 0.5), got {self.p}")
        object.__setattr__(self, "p", p)

    def statistics(self, column: str) -> dict[str, str]:
        return {
            "low": f"quantile_cont({column}, {render_number(self.p)})",
            "high": f"quantile_cont({column}, {render_number(1 - self.p)})",
        }

    def delta(self, stats: Statistics) -> float:
        """The window half-width for the table the statistics describe."""
        if stats["low"] is None or stats["high"] is None:
            return 0.0
        return self.fraction * (stats["high"] - stats["low"])

    def predicate(self, subject: str, target: str, stats: Statistics) -> str:
        return _window(subject, target, self.delta(stats))

    def interval(self, target: float, stats: Statistics) -> tuple[float, float]:
        return (target - self.delta(stats), target + self.delta(stats))

    def __str__(self) -> str:
        suffix = "" if self.p == 0.05 else f":{self.p:g}"
        return f"quantile:{self.fraction:g}{suffix}"


@dataclass(frozen=True)
class Bins(Similarity):
    """Same bin of k equal-width bins over [min, max]: bin = least(floor((x - min) / (max - min) * k), k - 1)."""

    k: int
    equivalence: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or int(self.k) != self.k or self.k < 1:
            raise CohortError(f"bins needs a whole number of bins >= 1, got {self.k}")
        object.__setattr__(self, "k", int(self.k))

    def statistics(self, column: str) -> dict[str, str]:
        return {"min": f"min({column})", "max": f"max({column})"}

    def key(self, value: str, stats: Statistics) -> str:
        """SQL expression of the value's bin number (NULL for NULL)."""
        low, high = stats["min"], stats["max"]
        if low is None or high is None or high == low:
            return f"({value} - {value})"  # one bin: 0 for every value, NULL for NULL
        bin_number = f"floor(({value} - {render_number(low)}) / {render_number(high - low)} * {self.k})"
        # Not least(): it skips NULLs, which would put missing values in the last bin.
        return f"(CASE WHEN {bin_number} > {self.k - 1} THEN {self.k - 1} ELSE {bin_number} END)"

    def predicate(self, subject: str, target: str, stats: Statistics) -> str:
        return f"{self.key(subject, stats)} = {self.key(target, stats)}"

    def interval(self, target: float, stats: Statistics) -> tuple[float, float]:
        low, high = stats["min"], stats["max"]
        if low is None or high is None or high == low:
            return (low, high) if low is not None else (target, target)
        width = (high - low) / self.k
        number = min(math.floor((target - low) / (high - low) * self.k), self.k - 1)
        return (low + number * width, low + (number + 1) * width)

    def __str__(self) -> str:
        return f"bins:{self.k}"


@dataclass(frozen=True)
class SqlPredicate(Similarity):
    """Any SQL boolean over the subject row ``s`` and the target row ``t``.

    Subjects with the target's own value are always similar, so the target stays in its own
    cohorts whatever the expression says; a NULL result counts as not similar.
    """

    expression: str
    numeric: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if not isinstance(self.expression, str) or not self.expression.strip():
            raise CohortError("sql: similarity needs a SQL boolean expression, e.g. sql:abs(s.age - t.age) <= 5")

    def predicate(self, subject: str, target: str, stats: Statistics) -> str:
        return f"({self.expression})"

    def __str__(self) -> str:
        return f"sql:{self.expression}"


_USAGE = "exact, abs:<delta>, relative:<delta>, range:<r>, quantile:<r>[:<p>], bins:<k> or sql:<expression>"


def _numbers(arguments: str, count: range) -> list[float]:
    parts = arguments.split(":") if arguments else []
    if len(parts) not in count:
        raise ValueError
    return [float(part) for part in parts]


def parse_similarity(text: str) -> Similarity:
    """Parse the short text form of a similarity kind, e.g. ``"range:0.1"`` or ``"sql:s.a = t.a"``."""
    if not isinstance(text, str):
        raise CohortError(f"a similarity kind must be a Similarity object or text like 'range:0.1', got {text!r}")
    kind, _, arguments = text.strip().partition(":")
    kind = kind.strip().lower()
    try:
        if kind == "sql":
            return SqlPredicate(arguments.strip())
        if kind == "exact" and not arguments:
            return Exact()
        if kind in ("abs", "absolute"):
            return AbsoluteWindow(*_numbers(arguments, range(1, 2)))
        if kind == "relative":
            return RelativeWindow(*_numbers(arguments, range(1, 2)))
        if kind == "range":
            return RangeWindow(*_numbers(arguments, range(1, 2)))
        if kind == "quantile":
            return QuantileWindow(*_numbers(arguments, range(1, 3)))
        if kind == "bins":
            (k,) = _numbers(arguments, range(1, 2))
            return Bins(int(k) if k.is_integer() else k)
    except ValueError as error:
        if isinstance(error, CohortError):
            raise CohortError(f"malformed similarity {text!r}: {error}") from None
    raise CohortError(f"malformed similarity {text!r}: expected {_USAGE}")


def as_similarity(kind: Similarity | str) -> Similarity:
    """A Similarity object as given, or parsed from its short text form."""
    return kind if isinstance(kind, Similarity) else parse_similarity(kind)
