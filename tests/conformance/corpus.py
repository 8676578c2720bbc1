"""The hostile corpus: every case of names, types, scales and sizes that an earlier round found a
surface getting wrong, as one small table each, with what every surface must do with it: compute the
brute-force values (`oracle.py`), or refuse in one `CohortError` that names the culprit.

A case is data, not a test: `test_matrix.py` runs each through every surface of `surfaces.py`, so a new
surface inherits every case, and a defect found anywhere becomes one more case here.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl

ID = "id"


@dataclass(frozen=True)
class Case:
    """One hostile table and the request every surface makes of it."""

    name: str
    axis: str
    """``names``, ``types``, ``scales`` or ``sizes`` (DESIGN §7)."""
    make: Callable[[], pl.DataFrame]
    prediction: str
    similarity: dict[str, str | None]
    """Feature -> kind; None: the feature's default kind (the oracle reads the kind the library chose)."""
    refused: str | None = None
    """When set, every surface refuses the case with one `CohortError` whose message names this."""
    protected: str | None = None
    """The feature the audit surface treats as the protected attribute (default: the last one)."""
    table: str = "scores"
    """The table's name on surfaces that read a table by name (SQL, a warehouse)."""
    not_on: dict[str, str] = field(default_factory=dict)
    """Surface -> why it cannot take the case at all (say why; never to hide a failure)."""
    refused_on: dict[str, str] = field(default_factory=dict)
    """Surface -> the culprit its one `CohortError` must name, where that surface's engine has no type
    for the values (other surfaces compute the case)."""
    computed_on: dict[str, str] = field(default_factory=dict)
    """Surface -> why it computes a case the others refuse: what they refuse is not among what it reads."""

    def frame(self) -> pl.DataFrame:
        return self.make()

    @property
    def attribute(self) -> str:
        return self.protected or list(self.similarity)[-1]

    def __str__(self) -> str:
        return self.name


def _rng() -> np.random.Generator:
    return np.random.default_rng(20261126)


def _scores(n: int, columns: dict[str, object], prediction: str = "p", scale: float = 1.0) -> pl.DataFrame:
    """A table of `n` rows: an id, the given columns, and a prediction that depends on the first column
    (so that every feature has something to explain), times `scale`."""
    rng = _rng()
    frame = pl.DataFrame({ID: np.arange(n), **columns})
    first = frame.columns[1]
    codes = frame[first].rank("dense").fill_null(0).cast(pl.Float64).to_numpy()
    y = (codes + rng.normal(scale=0.5, size=n)) * scale
    return frame.with_columns(pl.Series(prediction, y))


def _levels(n: int, count: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, count, n)


def _names_case(name: str, names: list[str], table: str = "scores") -> Case:
    def make() -> pl.DataFrame:
        return _scores(14, {column: _levels(14, 3, index) for index, column in enumerate(names)}, prediction="p")

    return Case(
        name,
        "names",
        make,
        "p",
        {column: "exact" if index % 2 == 0 else "abs:1" for index, column in enumerate(names)},
        table=table,
    )


def _timestamps(n: int, unit: str, zone: str | None) -> pl.Series:
    hours = _levels(n, 40, 7)
    base = datetime.datetime(2024, 3, 30, 20)  # over a daylight-saving change in most zones
    series = pl.Series([base + datetime.timedelta(hours=int(h), microseconds=123) for h in hours])
    return series.cast(pl.Datetime(unit, zone))


CASES: list[Case] = [
    # names: quotes, newlines, comment ends, keywords, unicode, case-only differences
    _names_case("quotes", ['it\'s "q"', "back`tick"]),
    _names_case("newline and comment", ["a\nb", "c */ d -- e"]),
    _names_case("keywords", ["select", "statistics", "from"]),
    _names_case("unicode", ["âge", "年齢"]),
    _names_case("commas and equals", ["a,b", "c=d"]),
    _names_case("a table named statistics", ["x", "y"], table="statistics"),
    Case(
        "names differing only in case",
        "names",
        lambda: _scores(12, {"Age": _levels(12, 3), "age": _levels(12, 3, 1)}),
        "p",
        {"Age": "exact", "age": "exact"},
        refused="age",
    ),
    # types
    Case(
        "decimal feature and prediction",
        "types",
        lambda: pl.DataFrame(
            {
                ID: np.arange(12),
                "d": [decimal.Decimal(value) for value in ["0.25", "1.50", "0.25", "2.75"] * 3],
                "x": _levels(12, 2),
                "p": [decimal.Decimal(f"{value}.125") for value in _levels(12, 9, 3)],
            },
            schema_overrides={"d": pl.Decimal(10, 2), "p": pl.Decimal(12, 3)},
        ),
        "p",
        {"d": "abs:1", "x": "exact"},
    ),
    Case(
        "nanosecond UTC timestamps",
        "types",
        lambda: _scores(12, {"t": _timestamps(12, "ns", "UTC"), "x": _levels(12, 2)}),
        "p",
        {"t": "abs:2h", "x": "exact"},
    ),
    Case(
        "nanosecond UTC timestamps, default kind",
        "types",
        lambda: _scores(12, {"t": _timestamps(12, "ns", "UTC"), "x": _levels(12, 2)}),
        "p",
        {"t": None, "x": "exact"},
    ),
    Case(
        "zoned microsecond timestamps",
        "types",
        lambda: _scores(12, {"t": _timestamps(12, "us", "Europe/Paris"), "x": _levels(12, 2)}),
        "p",
        {"t": "abs:3h", "x": "exact"},
    ),
    Case(
        "unsigned 64-bit integers",
        "types",
        lambda: _scores(
            12,
            {"u": pl.Series([2**62 + 5 * int(v) for v in _levels(12, 4)], dtype=pl.UInt64), "x": _levels(12, 2)},
        ),
        "p",
        {"u": "abs:5", "x": "exact"},
    ),
    Case(
        "unsigned 64-bit integers beyond BIGINT",
        "types",
        lambda: _scores(
            12,
            {"u": pl.Series([2**63 + 5 * int(v) for v in _levels(12, 4)], dtype=pl.UInt64), "x": _levels(12, 2)},
        ),
        "p",
        {"u": "abs:5", "x": "exact"},
        refused_on={"spark": "u", "postgres_upload": "u"},
    ),
    Case(
        "unsigned 64-bit keys beyond BIGINT compared exactly",
        "types",
        lambda: _scores(
            12,
            {"u": pl.Series([2**64 - 1 - int(v) for v in _levels(12, 4)], dtype=pl.UInt64), "x": _levels(12, 2)},
        ),
        "p",
        {"u": "exact", "x": "exact"},
        refused_on={"spark": "u", "postgres_upload": "u"},
    ),
    Case(
        "booleans and dates",
        "types",
        lambda: _scores(
            12,
            {
                "b": _levels(12, 2).astype(bool),
                "day": [datetime.date(2024, 2, 26) + datetime.timedelta(days=int(v)) for v in _levels(12, 20, 4)],
            },
        ),
        "p",
        {"b": "exact", "day": "abs:7"},
    ),
    Case(
        "NaN, infinities and negative zero",
        "types",
        lambda: _scores(
            16,
            {
                "x": _levels(16, 2),
                "a": [1.0, float("inf"), float("-inf"), float("nan"), 0.0, -0.0, None, 1.0] * 2,
            },
        ),
        "p",
        {"x": "exact", "a": "exact"},
    ),
    Case(
        "the text 'null' beside NULL",
        "types",
        lambda: _scores(15, {"x": _levels(15, 2), "g": ["null", None, "x"] * 5}),
        "p",
        {"x": "exact", "g": "exact"},
    ),
    Case(
        "an infinity under a default kind",
        "types",
        lambda: _scores(12, {"v": [float(value) for value in range(11)] + [float("inf")], "x": _levels(12, 2)}),
        "p",
        {"v": None, "x": "exact"},
        refused="v",
        computed_on={"fairness": "it reads the prediction and the protected attribute x, not the feature v"},
    ),
    # scales
    Case(
        "predictions of 1e-13",
        "scales",
        lambda: _scores(12, {"x": _levels(12, 3), "z": _levels(12, 2, 1)}, scale=1e-13),
        "p",
        {"x": "exact", "z": "exact"},
    ),
    Case(
        "predictions of 1e13",
        "scales",
        lambda: _scores(12, {"x": _levels(12, 3), "z": _levels(12, 2, 1)}, scale=1e13),
        "p",
        {"x": "exact", "z": "exact"},
    ),
    Case(
        "predictions of 1e-300",
        "scales",
        lambda: _scores(12, {"x": _levels(12, 3), "z": _levels(12, 2, 1)}, scale=1e-300),
        "p",
        {"x": "exact", "z": "exact"},
        refused="multiply 'p' by 1e+300",  # its squares underflow: refused with the factor, never effects of 0
    ),
    Case(
        "predictions of 1e300",
        "scales",
        lambda: _scores(12, {"x": _levels(12, 3), "z": _levels(12, 2, 1)}, scale=1e300),
        "p",
        {"x": "exact", "z": "exact"},
        refused="multiply 'p' by 1e-300",  # its sums of squares overflow: refused with the factor
    ),
    Case(
        "close large numbers",
        "scales",
        lambda: _scores(12, {"income": 1_000_000 + np.arange(12), "x": _levels(12, 2)}),
        "p",
        {"income": "range:0.2", "x": "exact"},
        protected="income",
    ),
    # sizes
    Case("no rows", "sizes", lambda: _scores(12, {"x": _levels(12, 2)}).head(0), "p", {"x": "exact"}, refused="rows"),
    Case("one row", "sizes", lambda: _scores(1, {"x": [1], "z": [2.0]}), "p", {"x": "exact", "z": "abs:1"}),
    Case("two rows", "sizes", lambda: _scores(2, {"x": [0, 1], "z": [0.0, 1.0]}), "p", {"x": "exact", "z": "exact"}),
    Case(
        "three rows",
        "sizes",
        lambda: _scores(3, {"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]}),
        "p",
        {"a": "abs:0.5", "b": "exact"},
    ),
    Case(
        "one level",
        "sizes",
        lambda: _scores(12, {"x": _levels(12, 3), "one": ["same"] * 12}),
        "p",
        {"x": "exact", "one": "exact"},
    ),
    Case(
        "500 levels",
        "sizes",
        lambda: _scores(500, {"k": np.arange(500) % 500, "x": _levels(500, 2)}),
        "p",
        {"k": "exact", "x": "exact"},
        protected="x",
    ),
]
"""Every case of the corpus."""

CASE_IDS = [case.name for case in CASES]
