"""What every surface must give for a case of the corpus: cohort Shapley values by brute force
(`tests/reference.py`: every cohort found row by row, Shapley values from the weighted-marginal
definition), on the values as the library defines its comparisons:

- NaN is missing (similar to missing only), -0.0 equals 0.0, infinities are values;
- decimals, integers of any width, booleans and text compare as themselves (integers exactly);
- dates are compared in days and timestamps in microseconds since 1970 (an instant, for zoned ones;
  nanoseconds below the microsecond do not count).
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import polars as pl
import reference
from corpus import ID, Case
from reference import comparable, reference_kind


def brute_force(case: Case, kinds: dict[str, str]) -> pl.DataFrame:
    """Every row's values (id, feature, shapley, shapley_squared) under the resolved `kinds`."""
    return _brute_force(case.name, tuple(kinds.items()))


def _reference_inputs(
    name: str, kinds: tuple[tuple[str, str], ...]
) -> tuple[pl.DataFrame, list[str], list, list, np.ndarray]:
    """A case's frame, its features, their values and brute-force tests, and its predictions."""
    from corpus import CASES

    case = next(case for case in CASES if case.name == name)
    frame = case.frame()
    features = [feature for feature, _ in kinds]
    columns = [[comparable(value) for value in frame[feature].to_list()] for feature in features]
    tests = [reference_kind(kind, frame.schema[feature]) for feature, kind in kinds]
    return frame, features, columns, tests, frame[case.prediction].cast(pl.Float64).to_numpy()


def _long_values(ids: list, features: list[str], **values: np.ndarray) -> pl.DataFrame:
    """(targets, features) arrays as the long table the surfaces give: id, feature, then each array."""
    return pl.DataFrame(
        {
            ID: [identifier for identifier in ids for _ in features],
            "feature": features * len(ids),
            **{name: array.reshape(-1) for name, array in values.items()},
        }
    )


@functools.cache
def _brute_force(name: str, kinds: tuple[tuple[str, str], ...]) -> pl.DataFrame:
    frame, features, columns, tests, y = _reference_inputs(name, kinds)
    phi, phi2 = reference.cohort_shapley(columns, tests, y, range(frame.height))
    return _long_values(frame[ID].to_list(), features, shapley=phi, shapley_squared=phi2)


def brute_force_variance(case: Case, kinds: dict[str, str]) -> pl.DataFrame:
    """Every row's Shapley values of the cohort variance game v(t, u) = Var_{C_{t,u}}(y) - Var(y) (each
    variance about its own cohort's mean, as numpy takes it), every cohort found row by row."""
    return _brute_force_variance(case.name, tuple(kinds.items()))


@functools.cache
def _brute_force_variance(name: str, kinds: tuple[tuple[str, str], ...]) -> pl.DataFrame:
    frame, features, columns, tests, y = _reference_inputs(name, kinds)
    d = len(features)
    phi = np.zeros((frame.height, d))
    for target in range(frame.height):
        similar = reference.similar_matrix(columns, tests, target).astype(bool)
        value = {
            frozenset(u): float(np.var(y[similar[:, list(u)].all(axis=1)]) - np.var(y))
            for size in range(d + 1)
            for u in itertools.combinations(range(d), size)
        }
        phi[target] = reference.shapley(value, d)
    return _long_values(frame[ID].to_list(), features, shapley=phi)


def brute_force_integrated(case: Case, kinds: dict[str, str]) -> pl.DataFrame:
    """Every row's integrated gradient cohort Shapley by its definition (`reference.integrated_gradients`)."""
    return _brute_force_integrated(case.name, tuple(kinds.items()))


@functools.cache
def _brute_force_integrated(name: str, kinds: tuple[tuple[str, str], ...]) -> pl.DataFrame:
    frame, features, columns, tests, y = _reference_inputs(name, kinds)
    rows = range(min(frame.height, MAX_INTEGRATED_TARGETS))
    phi = reference.integrated_gradients(columns, tests, y, rows, panels=100)
    return _long_values(frame[ID].to_list()[: len(rows)], features, shapley=phi)


MAX_INTEGRATED_TARGETS = 12
"""Targets the integrated surface explains (its brute force costs a product over every subject and feature
at every node of a fine rule)."""


def brute_force_curves(case: Case, kinds: dict[str, str]) -> pl.DataFrame:
    """Every row's insertion and deletion curves along its brute-force cohort Shapley order (ties in
    feature order), as rows (id, feature = 'insertion:m' or 'deletion:m', shapley = the cohort mean)."""
    return _brute_force_curves(case.name, tuple(kinds.items()))


@functools.cache
def _brute_force_curves(name: str, kinds: tuple[tuple[str, str], ...]) -> pl.DataFrame:
    frame, features, columns, tests, y = _reference_inputs(name, kinds)
    values = _brute_force(name, kinds)
    rows = []
    for target, identifier in enumerate(frame[ID].to_list()[:MAX_INTEGRATED_TARGETS]):
        phi = values.filter(pl.col(ID) == identifier)["shapley"].to_numpy()
        order = np.argsort(-phi, kind="stable")
        similar = reference.similar_matrix(columns, tests, target).astype(bool)
        for m in range(len(features) + 1):
            rows.append((identifier, f"insertion:{m}", float(y[similar[:, order[:m]].all(axis=1)].mean())))
            rows.append((identifier, f"deletion:{m}", float(y[similar[:, order[m:]].all(axis=1)].mean())))
    return pl.DataFrame(rows, schema=[ID, "feature", "shapley"], orient="row")


def assert_values_equal(found: pl.DataFrame, expected: pl.DataFrame, scale: float) -> None:
    """The same (id, feature) rows, with values within 1e-9 of the prediction's scale."""
    key = [ID, "feature"]
    found = found.select(pl.col(ID).cast(pl.Int64), "feature", pl.col("shapley").cast(pl.Float64))
    joined = expected.select(*key, "shapley").join(found, on=key, how="full", suffix="_found", coalesce=True)
    missing = joined.filter(pl.col("shapley").is_null() | pl.col("shapley_found").is_null())
    assert missing.is_empty(), f"rows missing on one side:\n{missing}"
    difference = np.abs(joined["shapley"].to_numpy() - joined["shapley_found"].to_numpy())
    assert difference.max(initial=0.0) <= 1e-9 * scale, f"largest difference {difference.max()} at scale {scale}"


def prediction_scale(case: Case) -> float:
    """The prediction's spread: values are compared to 1e-9 of it (or of 1 when it has none)."""
    y = case.frame()[case.prediction].cast(pl.Float64).to_numpy()
    spread = float(np.std(y)) if y.size else 0.0
    return spread if spread > 0 else 1.0


def brute_force_fairness(case: Case, kinds: dict[str, str]) -> pl.DataFrame:
    """Each group of the case's protected attribute (rows equal as the cohorts compare them: NaN and
    NULL missing, -0.0 is 0.0; a number with more than 4 distinct values split at the surface's edge)
    with its rows and the share of them whose prediction is at or above the surface's threshold."""
    from surfaces import fairness_bins, fairness_threshold, groups_as_rows

    frame = case.frame()
    threshold = fairness_threshold(frame, case.prediction)
    selected = frame[case.prediction].cast(pl.Float64).to_numpy() >= threshold
    edges = fairness_bins(frame, case.attribute).get("protected_bins", {}).get(case.attribute)
    keys = [comparable(value) for value in frame[case.attribute].to_list()]
    if edges is not None:
        keys = [None if key is None else key >= edges[0] for key in keys]
    groups: dict[object, list[bool]] = {}
    for key, chosen in zip(keys, selected, strict=True):
        groups.setdefault(key, []).append(bool(chosen))
    return groups_as_rows([len(rows) for rows in groups.values()], [sum(rows) / len(rows) for rows in groups.values()])
