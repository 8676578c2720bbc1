"""Checks of the caller's plain arguments (numbers, seeds, options), at the boundary of the API.

Each raises `CohortError` naming the argument and the value, so a wrong type never reaches numpy
or SQL as a raw exception.
"""

from __future__ import annotations

import math
import numbers
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from cohortsql.errors import CohortError

if TYPE_CHECKING:
    import numpy as np


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


def tolerance_or_inf(name: str, value: object) -> float:
    """A number >= 0, infinity included."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise CohortError(f"{name} must be a number, got {value!r}")
    if math.isnan(value) or value < 0:
        raise CohortError(f"{name} must be a number >= 0 (inf skips the check), got {value}")
    return float(value)


def optional_text(name: str, value: object) -> str | None:
    """None, or text."""
    if value is not None and not isinstance(value, str):
        raise CohortError(f"{name} must be text, got {value!r}")
    return value


def optional_path(name: str, value: object) -> str | os.PathLike[str] | None:
    """None, or a path (text or an `os.PathLike`)."""
    if value is not None and not isinstance(value, (str, os.PathLike)):
        raise CohortError(f"{name} must be a path (text), got {value!r}")
    return value


def included_ids(name: str, value: object) -> tuple[Any, ...] | None:
    """None, or the ids of `include=` as a tuple (their type is checked against the id column when
    they are read): a list, not text or a single id."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise CohortError(f"{name} takes a list of ids, got {value!r}: write {name}=[{value!r}]")
    if _boolean_values(value) is not None:
        raise CohortError(f"{name} takes a list of ids, not a boolean mask: pass the ids of the rows where it holds")
    ids = tuple(value.to_list() if hasattr(value, "to_list") else value)
    if not ids:
        raise CohortError(f"{name} is an empty list: name at least one id, or leave it out")
    return ids


def explained_columns(prediction: object, *, several: bool = True) -> tuple[str, ...]:
    """The explained columns: one name, or (where `several` are allowed) a non-empty list of names."""
    if isinstance(prediction, str):
        return (prediction,)
    if several and isinstance(prediction, Sequence) and prediction:
        for name in prediction:
            if not isinstance(name, str):
                raise CohortError(f"prediction must list column names (text), got {name!r}")
        return tuple(prediction)
    wanted = "the name of a column (text) or a list of them" if several else "the name of a column (text)"
    raise CohortError(f"prediction must be {wanted}, got {prediction!r}")


MAX_REPLICATES = 8_000
"""The most Bayesian-bootstrap replicates a run draws. Some queries hold a column per replicate (the
audit's sums by group: a weight and a weighted prediction each), and DuckDB 2.0's hash aggregate
stopped the process (SIGFPE) from 16,384 such sums (16,382 ran): 8,000 replicates are 16,002. Memory grows with B
too (a target's sums are held for every replicate at once: 40 rows and 1,000,000 replicates passed
3.5 GB in two minutes, 1e9 took the machine's 24 GB and were killed), and percentile intervals need
no more (their endpoints' Monte Carlo error shrinks as 1 / sqrt(B))."""


def bootstrap_arguments(bootstrap: object, confidence: object) -> tuple[int, float]:
    """B, the number of Bayesian-bootstrap replicates (0, or 2 to `MAX_REPLICATES`), and the intervals'
    confidence level."""
    replicates = whole_number("bootstrap", bootstrap, minimum=0)
    if replicates == 1:
        raise CohortError("bootstrap=1 gives no interval; ask for 0 (none) or at least 2 replicates (200 or more)")
    if replicates > MAX_REPLICATES:
        raise CohortError(
            f"bootstrap must be at most {MAX_REPLICATES:,} replicates (each target's sums are held for every"
            f" replicate at once; 1,000 to 2,000 give percentile intervals), got {replicates:,}"
        )
    level = positive_number("confidence", confidence)
    if level is None or level >= 1:
        raise CohortError(f"confidence must be a number between 0 and 1, e.g. 0.95; got {confidence!r}")
    return replicates, level


@overload
def drawn_seed(seed: int | None) -> int: ...
@overload
def drawn_seed(seed: int | None, needed: bool) -> int | None: ...
def drawn_seed(seed: int | None, needed: bool = True) -> int | None:
    """`seed`, or a fresh one when the run draws random numbers (`needed`) and none was given: it is
    recorded with the results, so the run can be repeated."""
    if seed is None and needed:
        return secrets.randbelow(2**31)  # from the operating system's entropy, as numpy's default_rng() draws
    return seed


def boolean(name: str, value: object) -> bool:
    """True or False (numpy's too), nothing else (not 1, not "yes")."""
    if type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"):
        return bool(value)
    if not isinstance(value, bool):
        raise CohortError(f"{name} must be True or False, got {value!r}")
    return value


def group_bins(name: str, value: object) -> dict[str, int | tuple[float, ...]]:
    """How each named numeric attribute is grouped: a whole number >= 2 of quantile groups, or the
    groups' edges (finite numbers in increasing order); `name` is the option's, for messages."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise CohortError(f"{name} must map attribute names to a number of groups or a list of edges, got {value!r}")
    checked: dict[str, int | tuple[float, ...]] = {}
    for attribute, bins in value.items():
        where = f"{name}[{attribute!r}]"
        if not isinstance(attribute, str):
            raise CohortError(f"{name} keys must be column names, got {attribute!r}")
        if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
            checked[attribute] = whole_number(where, bins, minimum=2)
            continue
        if isinstance(bins, str | bytes) or not (isinstance(bins, Sequence) or hasattr(bins, "__array__")):
            raise CohortError(f"{where} must be a number of quantile groups or a list of edges, got {bins!r}")
        edges = list(bins)
        if not edges or not all(isinstance(edge, numbers.Real) and not isinstance(edge, bool) for edge in edges):
            raise CohortError(f"{where} must list at least one number as an edge, got {bins!r}")
        floats = tuple(float(edge) for edge in edges)
        if not all(math.isfinite(edge) for edge in floats) or any(b <= a for a, b in zip(floats, floats[1:])):
            raise CohortError(f"{where}: edges must be finite and increasing, got {bins!r}")
        checked[attribute] = floats
    return checked


def protected_names(protected: object) -> tuple[str, ...]:
    """The protected attribute(s) of `audit` and `fairness` as a tuple of column names, each named once."""
    names = (protected,) if isinstance(protected, str) else protected
    if not isinstance(names, Sequence) or not names or not all(isinstance(name, str) for name in names):
        raise CohortError(
            f"protected names the protected attribute column(s), e.g. 'race' or ['race', 'sex'], got {protected!r}"
        )
    if len(set(names)) != len(names):
        raise CohortError(f"protected names a column twice: {list(names)!r}")
    return tuple(names)


def check_bins_named(bins: Mapping[str, object], names: Sequence[str]) -> None:
    """``protected_bins`` names only protected attributes (`names`)."""
    unknown = sorted(set(bins) - set(names))
    if unknown:
        raise CohortError(
            f"protected_bins names {unknown[0]!r}, which is not a protected attribute ({', '.join(names)})"
        )


def check_decisions(threshold: object, observed: object) -> float | None:
    """`fairness`' (and the audit's) ``threshold`` as a Python float (a numpy scalar too; never a bool),
    or None; ``observed`` None or a column name: checked before any work."""
    import numpy as np  # here: the command line's help loads no array library

    if threshold is not None and (
        isinstance(threshold, (bool, np.bool_))
        or not isinstance(threshold, numbers.Real)
        or not math.isfinite(float(threshold))
    ):
        raise CohortError(f"threshold must be a finite number (a score at or above it is selected), got {threshold!r}")
    if observed is not None and not isinstance(observed, str):
        raise CohortError(f"observed names the column of observed outcomes (0/1 or booleans), got {observed!r}")
    return None if threshold is None else float(threshold)


@dataclass(frozen=True, eq=False)
class RowMask:
    """``targets=`` given as a boolean mask: one True or False per row of the data, by position (a
    numpy, polars, pyarrow or pandas boolean array, or a list of booleans). It selects the rows where it
    is True; it is never read as the ids 0 and 1."""

    selected: np.ndarray
    """One bool per row of the data, in the data's row order."""

    def __str__(self) -> str:
        return f"a mask of {len(self.selected)} rows selecting {int(self.selected.sum())}"


def checked_targets(name: str, value: object) -> object:
    """``targets`` as the run reads it: a boolean mask (of any array library, or a list of booleans)
    becomes a `RowMask`; a column of another library (a pyarrow chunked array, a pandas Series)
    becomes a list of its values; the rest (None, a predicate, a sample size, a list of ids, a polars
    expression) is checked where it is read."""
    if isinstance(value, numbers.Number) and hasattr(value, "item"):
        value = value.item()  # a numpy scalar: the Python number it is
    if value is None or isinstance(value, (str, bool, numbers.Number)):
        return value
    import pyarrow as pa  # here: the command line's help loads no array library

    mask = _boolean_values(value)
    if mask is not None:
        return RowMask(mask)
    if isinstance(value, pa.ChunkedArray):
        return value.combine_chunks()
    if type(value).__module__.split(".")[0] == "pandas" and hasattr(value, "to_list"):
        return value.to_list()
    return value


def _boolean_values(value: object) -> np.ndarray | None:
    """The values of a boolean mask as a numpy bool array, or None when `value` is not one (a list must
    hold nothing but booleans: a list of ids is not a mask)."""
    import numpy as np
    import pyarrow as pa

    if isinstance(value, np.ndarray):
        return value.astype(bool) if value.dtype == np.bool_ else None
    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        return _without_missing(value.to_numpy(zero_copy_only=False)) if pa.types.is_boolean(value.type) else None
    module = type(value).__module__.split(".")[0]
    if module == "polars" and hasattr(value, "dtype") and hasattr(value, "to_numpy"):
        return _without_missing(value.to_numpy()) if str(value.dtype) == "Boolean" else None
    if module == "pandas" and hasattr(value, "dtype") and hasattr(value, "to_numpy"):
        return _without_missing(value.to_numpy()) if str(value.dtype) in ("bool", "boolean") else None
    if isinstance(value, (list, tuple)) and value and all(isinstance(item, (bool, np.bool_)) for item in value):
        return np.array(value, dtype=bool)
    return None


def _without_missing(values: np.ndarray) -> np.ndarray:
    """A mask's values as bools; a missing value (None in an object array) is refused: it says neither."""
    import numpy as np

    if values.dtype == np.bool_:
        return values
    if any(value is None or (isinstance(value, float) and math.isnan(value)) for value in values):
        raise CohortError("targets is a boolean mask with missing values: fill them (True or False) first")
    return values.astype(bool)


MAX_NULL_COPIES = 999
"""The most shuffled copies a null reference draws of each feature: 999 give p-values down to 0.001."""


def null_copies(name: str, value: object) -> int:
    """``null``: how many shuffled copies of each feature (0: no null reference), a whole number (not a
    bool) from 0 to `MAX_NULL_COPIES`."""
    copies = whole_number(name, value, minimum=0)
    if copies > MAX_NULL_COPIES:
        raise CohortError(
            f"{name} must be at most {MAX_NULL_COPIES} shuffled copies (p-values down to 0.001), got {copies}"
        )
    return copies


def null_features(name: str, value: object) -> tuple[str, ...] | None:
    """``null_features``: None (the default features), or the names of the features (or groups) whose
    shares get a null reference, each once."""
    if value is None:
        return None
    names = (value,) if isinstance(value, str) else value
    if isinstance(names, Sequence) and not isinstance(names, str):
        names = tuple(names)
    if not isinstance(names, tuple) or not names or not all(isinstance(item, str) for item in names):
        raise CohortError(f"{name} names features (text), e.g. ['age'] or ['age', 'zip'], got {value!r}")
    if len(set(names)) != len(names):
        raise CohortError(f"{name} names a feature twice: {list(names)!r}")
    return names
