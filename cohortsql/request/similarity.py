"""Similarity kinds: the target-specific tests z_tj(x_ij) of the paper (docs/design.md §1).

Each kind is a small immutable object that renders, for a SQL dialect, a boolean comparing a subject
value with a target value (``s."col"`` and ``t."col"``). Data-dependent kinds (``range``, ``quantile``,
``bins``) first name their whole-table parameters as SQL aggregates (`parameters`); the predicate
then refers to those parameters as SQL text, which is either a literal (the library computes the
parameters first) or a column the statistics CTE computed (the standalone query carries them on each
target row).
Rendering is a pure function of the kind, the dialect and its arguments; it never mutates the kind.

Numeric kinds compare numbers: integers, decimals and floats as they are, dates and timestamps as
days since 1970-01-01 (so ``abs:7`` on a date column is a week; ``abs:12h`` a duration).

The predicates here only see non-NULL values: NULL handling (NULL is similar only to NULL, so a
target is always in its own cohorts) is added once, in `cohortsql.queries.compile`.

Short text forms (`cohortsql.request.similarity_text.parse_similarity`)::

    exact                  x_i = x_t
    abs:<delta>[unit]      |x_i - x_t| <= delta (unit for dates and timestamps: w, d, h, min, s)
    relative:<delta>       |x_i - x_t| <= delta * |x_t|
    range:<r>              |x_i - x_t| <= r * (max - min)
    quantile:<r>[:<p>]     |x_i - x_t| <= r * (q_{1-p} - q_p), p = 0.05 by default
    bins:<k>               same bin of k equal-width bins over [min, max]
    sql:<expression>       any SQL boolean over s.<col> (subject) and t.<col> (target)
"""

from __future__ import annotations

import decimal
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, Literal, TypeAlias

from cohortsql.dialects import Dialect
from cohortsql.errors import CohortError
from cohortsql.numeric.pair_tests import BINS, EQUAL, RELATIVE, WINDOW, PairTest
from cohortsql.request.user_sql import check_expression

ParameterValues = Mapping[str, float | None]
"""Whole-table parameters of a kind as Python numbers (None when the column has no values)."""

ParameterSql = Mapping[str, str]
"""The same parameters as SQL text: literals, or columns of a statistics CTE."""

KnownQuantiles = Mapping[tuple[str, float], float | None]
"""Quantiles computed beforehand (a sort that spills, under a memory limit or case weights), by the
SQL expression of the column's values and the probability; None for a column with no values."""

NO_QUANTILES: KnownQuantiles = {}

DURATION_MICROS = {"w": 604_800_000_000, "d": 86_400_000_000, "h": 3_600_000_000, "min": 60_000_000, "s": 1_000_000}
"""Units an ``abs:`` window may carry for a date or timestamp column, in microseconds."""

MICROS_PER_DAY = DURATION_MICROS["d"]
"""Timestamps are compared in microseconds since 1970 (integers: exact and symmetric), dates in days."""


class Similarity(ABC):
    """A similarity test z_tj between a subject value and a target value of one predictor."""

    numeric: ClassVar[bool] = True
    """Whether the predictor must be numeric (numbers, dates and timestamps)."""

    equivalence: ClassVar[bool] = False
    """Whether the test is an equivalence relation (then every cohort is a GROUP BY cell)."""

    def parameters(
        self, value: str, dialect: Dialect, known: KnownQuantiles = NO_QUANTILES, *, per_day: int = 1
    ) -> dict[str, str]:
        """Named whole-table aggregates over the numeric `value` that the predicate needs (none by default).

        `value` has a type whose differences are exact (see `cohortsql.queries.statistics.statistic_value`);
        subtract before casting to DOUBLE. Quantiles the caller computed beforehand (`known`, by
        expression and probability) enter as literals instead of aggregates. `per_day` is how many of
        the value's units make a day (1 for numbers and dates, `MICROS_PER_DAY` for timestamps)."""
        return {}

    @abstractmethod
    def predicate(self, subject: str, target: str, parameters: ParameterSql, dialect: Dialect) -> str:
        """SQL boolean that is true when the subject value is similar to the target value."""

    def interval(self, target: float, parameters: ParameterValues) -> tuple[float, float] | None:
        """The numeric values similar to `target`, as a closed interval (None when not an interval)."""
        return None

    def pair_test(self, parameters: ParameterValues) -> PairTest | None:
        """The predicate's numeric twin, for engines that build masks outside SQL
        (`cohortsql.numeric.pair_masks`); None when only SQL can evaluate it."""
        return None

    def narrower(self) -> Similarity | None:
        """The same kind with a window half as wide (twice the bins), to suggest when similarity on
        the feature alone keeps nearly the whole table; None where no setting narrows it (an exact
        comparison: a common level is the data's, and a caller's SQL predicate)."""
        return None


def _check_non_negative(name: str, value: float) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise CohortError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(value) or value < 0:
        raise CohortError(f"{name} must be a finite number >= 0, got {value:g}")
    return value


def _window_interval(target: float, delta: float | None) -> tuple[float, float]:
    width = delta or 0.0
    return (target - width, target + width)


class WholeTableWindow(Similarity):
    """|x_i - x_t| <= delta, with the half-width delta a whole-table parameter (``delta``: given, or
    a share of the column's range or of its quantiles' spread); NULL (NaN in numpy) when the column
    has no value, and then never similar, as in SQL."""

    def predicate(self, subject: str, target: str, parameters: ParameterSql, dialect: Dialect) -> str:
        return f"abs({subject} - {target}) <= {parameters['delta']}"

    def interval(self, target: float, parameters: ParameterValues) -> tuple[float, float]:
        return _window_interval(target, parameters["delta"])

    def pair_test(self, parameters: ParameterValues) -> PairTest:
        delta = parameters["delta"]
        return PairTest(WINDOW, delta=math.nan if delta is None else float(delta))


@dataclass(frozen=True)
class Exact(Similarity):
    """x_i = x_t, compared in the column's own type."""

    numeric: ClassVar[bool] = False
    equivalence: ClassVar[bool] = True

    def key(self, value: str, parameters: ParameterSql) -> str:
        """SQL expression of the value's equivalence class."""
        return value

    def predicate(self, subject: str, target: str, parameters: ParameterSql, dialect: Dialect) -> str:
        return f"{subject} = {target}"

    def interval(self, target: float, parameters: ParameterValues) -> tuple[float, float]:
        return (target, target)

    def pair_test(self, parameters: ParameterValues) -> PairTest:
        return PairTest(EQUAL)

    def __str__(self) -> str:
        return "exact"


@dataclass(frozen=True)
class AbsoluteWindow(WholeTableWindow):
    """|x_i - x_t| <= delta; for dates and timestamps delta is in days, or in `unit` (w, d, h, min, s).

    The width is a whole-table parameter in the column's own units (microseconds for timestamps), a
    constant, so that a timestamp window compares integers: ``abs:1h`` over hourly data holds the
    neighbours on both sides exactly."""

    delta: float
    unit: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "delta", _check_non_negative("abs delta", self.delta))
        if self.unit is not None and self.unit not in DURATION_MICROS:
            raise CohortError(f"abs window unit must be one of {', '.join(DURATION_MICROS)}, got {self.unit!r}")

    def parameters(
        self, value: str, dialect: Dialect, known: KnownQuantiles = NO_QUANTILES, *, per_day: int = 1
    ) -> dict[str, str]:
        if per_day == MICROS_PER_DAY:  # a timestamp's: whole microseconds
            return {"delta": dialect.number(self.delta * DURATION_MICROS[self.unit or "d"])}
        return {"delta": dialect.number(self.width)}

    @property
    def width(self) -> float:
        """The half-width in the column's numeric scale (days for dates and timestamps)."""
        if self.unit is None:
            return self.delta
        return self.delta * DURATION_MICROS[self.unit] / MICROS_PER_DAY

    def narrower(self) -> Similarity:
        return replace(self, delta=self.delta / 2)

    def __str__(self) -> str:
        return f"abs:{self.delta:g}{self.unit or ''}"


@dataclass(frozen=True)
class RelativeWindow(Similarity):
    """|x_i - x_t| <= delta * |x_t| (not symmetric in i and t; the paper allows that)."""

    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "delta", _check_non_negative("relative delta", self.delta))

    def predicate(self, subject: str, target: str, parameters: ParameterSql, dialect: Dialect) -> str:
        return f"abs({subject} - {target}) <= {dialect.number(self.delta)} * abs({target})"

    def interval(self, target: float, parameters: ParameterValues) -> tuple[float, float]:
        return _window_interval(target, self.delta * abs(target))

    def pair_test(self, parameters: ParameterValues) -> PairTest:
        return PairTest(RELATIVE, delta=self.delta)

    def narrower(self) -> Similarity:
        return replace(self, delta=self.delta / 2)

    def __str__(self) -> str:
        return f"relative:{self.delta:g}"


@dataclass(frozen=True)
class RangeWindow(WholeTableWindow):
    """|x_i - x_t| <= r * (max - min): the paper's Titanic choice with r = 0.1."""

    fraction: float

    def __post_init__(self) -> None:
        fraction = _check_non_negative("range fraction", self.fraction)
        if fraction > 1:
            raise CohortError(
                f"range:{fraction:g} is {fraction:g} times the feature's whole range (max - min), which makes every"
                " row similar to every other: range takes a fraction of it, from 0 to 1 (range:0.1 is a tenth)"
            )
        object.__setattr__(self, "fraction", fraction)

    def parameters(
        self, value: str, dialect: Dialect, known: KnownQuantiles = NO_QUANTILES, *, per_day: int = 1
    ) -> dict[str, str]:
        spread = f"CAST(coalesce(max({value}) - min({value}), 0) AS DOUBLE)"
        return {"delta": f"{dialect.number(self.fraction)} * {spread}"}

    def narrower(self) -> Similarity:
        return replace(self, fraction=self.fraction / 2)

    def __str__(self) -> str:
        return f"range:{self.fraction:g}"


@dataclass(frozen=True)
class QuantileWindow(WholeTableWindow):
    """|x_i - x_t| <= r * (q_{1-p} - q_p), linear-interpolated quantiles: the paper's Boston choice."""

    fraction: float
    p: float = 0.05

    def __post_init__(self) -> None:
        object.__setattr__(self, "fraction", _check_non_negative("quantile fraction", self.fraction))
        p = _check_non_negative("quantile p", self.p)
        if not p < 0.5:
            raise CohortError(f"quantile p must be in [0, 0.5), got {self.p}")
        object.__setattr__(self, "p", p)

    def parameters(
        self, value: str, dialect: Dialect, known: KnownQuantiles = NO_QUANTILES, *, per_day: int = 1
    ) -> dict[str, str]:
        high, low = (
            dialect.optional_number(known[(value, p)]) if (value, p) in known else dialect.quantile_aggregate(value, p)
            for p in (1 - self.p, self.p)
        )
        spread = f"{high} - {low}"
        return {"delta": f"{dialect.number(self.fraction)} * coalesce({spread}, CAST(0 AS DOUBLE))"}

    def narrower(self) -> Similarity:
        return replace(self, fraction=self.fraction / 2)

    def __str__(self) -> str:
        suffix = "" if self.p == 0.05 else f":{self.p:g}"
        return f"quantile:{self.fraction:g}{suffix}"


MOST_BINS = 2**53
"""The most bins `Bins` takes: bin numbers are computed in doubles, whose whole numbers are exact to
2^53 (Spark refused 1e19 bins with an overflow, 1e300 with a decimal of 301 digits; DuckDB computed them)."""


@dataclass(frozen=True)
class Bins(Similarity):
    """Same bin of k equal-width bins over [min, max]: bin = min(floor((x - min) / (max - min) * k), k - 1)."""

    k: int
    equivalence: ClassVar[bool] = True

    def __post_init__(self) -> None:
        valid = isinstance(self.k, (int, float)) and not isinstance(self.k, bool) and math.isfinite(self.k)
        if not valid or int(self.k) != self.k or self.k < 1:
            raise CohortError(f"bins needs a whole number of bins >= 1, got {self.k}")
        if self.k > MOST_BINS:
            raise CohortError(
                f"bins:{self.k:g} is more bins than a bin number computed in doubles tells apart: at most 2^53"
                f" ({MOST_BINS:,}); for one bin per value, use exact"
            )
        object.__setattr__(self, "k", int(self.k))

    def parameters(
        self, value: str, dialect: Dialect, known: KnownQuantiles = NO_QUANTILES, *, per_day: int = 1
    ) -> dict[str, str]:
        # The low edge keeps the column's type, so x - low is exact before it becomes DOUBLE.
        return {"low": f"min({value})", "range": f"CAST(max({value}) - min({value}) AS DOUBLE)"}

    def key(self, value: str, parameters: ParameterSql) -> str:
        """SQL expression of the value's bin number (NULL for NULL; one bin when the column is constant)."""
        low, width = parameters["low"], parameters["range"]
        bin_number = f"floor(CAST({value} - {low} AS DOUBLE) / {width} * {self.k})"
        # Not least(): it skips NULLs, which would put missing values in the last bin.
        capped = f"CASE WHEN {bin_number} > {self.k - 1} THEN {self.k - 1} ELSE {bin_number} END"
        return f"(CASE WHEN {width} > 0 THEN {capped} ELSE {value} - {value} END)"

    def predicate(self, subject: str, target: str, parameters: ParameterSql, dialect: Dialect) -> str:
        return f"{self.key(subject, parameters)} = {self.key(target, parameters)}"

    def interval(self, target: float, parameters: ParameterValues) -> tuple[float, float]:
        low, width = parameters["low"], parameters["range"]
        if low is None or width is None or width <= 0:
            return (target, target)
        number = min(math.floor((target - low) / width * self.k), self.k - 1)
        return (low + number * width / self.k, low + (number + 1) * width / self.k)

    def pair_test(self, parameters: ParameterValues) -> PairTest | None:
        low, width = parameters["low"], parameters["range"]
        if isinstance(low, decimal.Decimal):  # an integer column's edge (DECIMAL(38, 0)), or a decimal's
            if low != low.to_integral_value() or abs(low) >= 2**62:
                return None  # a decimal's edge: SQL's exact arithmetic only
            low = int(low)
        spread = math.nan if width is None else float(width)
        return PairTest(BINS, low=0 if low is None else low, width=spread, bins=self.k)

    def narrower(self) -> Similarity:
        return replace(self, k=2 * self.k)

    def __str__(self) -> str:
        return f"bins:{self.k}"


@dataclass(frozen=True)
class SqlPredicate(Similarity):
    """Any SQL boolean over the subject row ``s`` and the target row ``t``, in the engine's dialect.

    Subjects with the target's own value are always similar, so the target stays in its own
    cohorts whatever the expression says; a NULL result counts as not similar.
    """

    expression: str
    numeric: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if not isinstance(self.expression, str) or not self.expression.strip():
            raise CohortError("sql: similarity needs a SQL boolean expression, e.g. sql:abs(s.age - t.age) <= 5")
        object.__setattr__(self, "expression", check_expression(self.expression, "sql: similarity"))

    def predicate(self, subject: str, target: str, parameters: ParameterSql, dialect: Dialect) -> str:
        return f"({self.expression})"

    def __str__(self) -> str:
        return f"sql:{self.expression}"


SimilarityArgument: TypeAlias = "Mapping[str, Similarity | str | None] | Sequence[str] | Literal['all']"
"""Feature -> similarity kind (an object or its text form, None for the default), or a list of
feature names that get default kinds; its order is the feature order (`cohortsql._typing.EVERY_OTHER`
stands for every column not named otherwise)."""
