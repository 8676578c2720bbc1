"""Brute-force cohort Shapley straight from the paper's definitions, for checking the library.

Every cohort is recomputed from scratch for every subset of predictors, every similarity test is
plain Python, and Shapley values come from the weighted-marginal definition with factorials. Slow
on purpose: O(2^d n d) per target, independent of the SQL, the masks and the zeta transform.
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import math
import re
from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

Test = Callable[[object, object], bool]
"""z(subject value, target value) for non-missing values."""


def nonmissing(values: Sequence[object]) -> np.ndarray:
    return np.array([v for v in values if v is not None], dtype=float)


def exact() -> Callable[[Sequence[object]], Test]:
    return lambda column: lambda s, t: s == t


def absolute(delta: float) -> Callable[[Sequence[object]], Test]:
    return lambda column: lambda s, t: abs(s - t) <= delta


def relative(delta: float) -> Callable[[Sequence[object]], Test]:
    return lambda column: lambda s, t: abs(s - t) <= delta * abs(t)


def range_window(fraction: float) -> Callable[[Sequence[object]], Test]:
    def build(column: Sequence[object]) -> Test:
        values = nonmissing(column)
        delta = fraction * (values.max() - values.min()) if len(values) else 0.0
        return lambda s, t: abs(s - t) <= delta

    return build


def quantile_window(fraction: float, p: float = 0.05) -> Callable[[Sequence[object]], Test]:
    def build(column: Sequence[object]) -> Test:
        values = nonmissing(column)
        delta = fraction * (np.quantile(values, 1 - p) - np.quantile(values, p)) if len(values) else 0.0
        return lambda s, t: abs(s - t) <= delta

    return build


def bins(k: int) -> Callable[[Sequence[object]], Test]:
    def build(column: Sequence[object]) -> Test:
        values = nonmissing(column)
        low, high = (values.min(), values.max()) if len(values) else (0.0, 0.0)

        def bin_of(x: float) -> float:
            return 0.0 if high == low else min(math.floor((x - low) / (high - low) * k), k - 1)

        return lambda s, t: bin_of(s) == bin_of(t)

    return build


def custom(test: Test) -> Callable[[Sequence[object]], Test]:
    """A Python twin of a sql: predicate; equal values are always similar (as the library does)."""
    return lambda column: lambda s, t: s == t or test(s, t)


def similar(test: Test, subject: object, target: object) -> bool:
    """NULL (None) is similar to NULL only."""
    if subject is None or target is None:
        return subject is None and target is None
    return bool(test(subject, target))


def cohort_shapley(
    columns: Sequence[Sequence[object]],
    kinds: Sequence[Callable[[Sequence[object]], Test]],
    y: Sequence[float],
    targets: Sequence[int],
) -> tuple[np.ndarray, np.ndarray]:
    """(phi of v_CS, phi of v_CS2), each of shape (len(targets), d), by the definitions."""
    d = len(columns)
    phi = np.zeros((len(targets), d))
    phi2 = np.zeros((len(targets), d))
    for row, t in enumerate(targets):
        value = cohort_values(columns, kinds, y, t)
        for j in range(d):
            others = [k for k in range(d) if k != j]
            for size in range(d):
                weight = math.factorial(size) * math.factorial(d - size - 1) / math.factorial(d)
                for u in itertools.combinations(others, size):
                    without, with_j = value[frozenset(u)], value[frozenset(u) | {j}]
                    phi[row, j] += weight * (with_j - without)
                    phi2[row, j] += weight * (with_j**2 - without**2)
    return phi, phi2


def cohort_values(
    columns: Sequence[Sequence[object]], kinds: Sequence[Callable[[Sequence[object]], Test]], y: Sequence[float], t: int
) -> dict[frozenset[int], float]:
    """v_CS(t, u) = ybar_{t,u} - ybar for every set u of predictors, each cohort found row by row."""
    y = np.asarray(y, dtype=float)
    n, d = len(y), len(columns)
    tests = [kind(column) for kind, column in zip(kinds, columns)]
    value = {}
    for size in range(d + 1):
        for u in itertools.combinations(range(d), size):
            cohort = [i for i in range(n) if all(similar(tests[j], columns[j][i], columns[j][t]) for j in u)]
            value[frozenset(u)] = y[cohort].mean() - y.mean()
    return value


def cohort_interactions(
    columns: Sequence[Sequence[object]],
    kinds: Sequence[Callable[[Sequence[object]], Test]],
    y: Sequence[float],
    targets: Sequence[int],
) -> np.ndarray:
    """Interaction values of v_CS in shap's convention, shape (len(targets), d, d) (`interactions`)."""
    return np.array([interactions(cohort_values(columns, kinds, y, t), len(columns)) for t in targets])


def interactions(value: dict[frozenset[int], float], d: int) -> np.ndarray:
    """A game's interaction values in shap's convention, (d, d), from the definition of the Shapley
    interaction index (Grabisch & Roubens 1999): I_ij = sum over S not meeting {i, j} of
    |S|! (d - |S| - 2)! / (d - 1)! (v(S + ij) - v(S + i) - v(S + j) + v(S)); Phi_ij = I_ij / 2 and
    Phi_ii = phi_i - sum over j != i of Phi_ij, phi by the weighted-marginal definition."""
    values = np.zeros((d, d))
    for i in range(d):
        others = [k for k in range(d) if k != i]
        for size in range(d):
            weight = math.factorial(size) * math.factorial(d - size - 1) / math.factorial(d)
            for u in map(frozenset, itertools.combinations(others, size)):
                values[i, i] += weight * (value[u | {i}] - value[u])
    for i, j in itertools.combinations(range(d), 2):
        others = [k for k in range(d) if k not in (i, j)]
        for size in range(d - 1):
            weight = math.factorial(size) * math.factorial(d - size - 2) / math.factorial(d - 1)
            for u in map(frozenset, itertools.combinations(others, size)):
                step = value[u | {i, j}] - value[u | {i}] - value[u | {j}] + value[u]
                values[i, j] += weight * step / 2
        values[j, i] = values[i, j]
        values[i, i] -= values[i, j]
        values[j, j] -= values[i, j]
    return values


def cohort_sizes(
    columns: Sequence[Sequence[object]], kinds: Sequence[Callable[[Sequence[object]], Test]], t: int
) -> dict[frozenset[int], int]:
    """|C_{t,u}| for every set u of predictors, each cohort found row by row."""
    n, d = len(columns[0]), len(columns)
    tests = [kind(column) for kind, column in zip(kinds, columns)]
    sizes = {}
    for size in range(d + 1):
        for u in itertools.combinations(range(d), size):
            cohort = [i for i in range(n) if all(similar(tests[j], columns[j][i], columns[j][t]) for j in u)]
            sizes[frozenset(u)] = len(cohort)
    return sizes


def shapley(value: dict[frozenset[int], float], d: int) -> np.ndarray:
    """phi_j = sum over u not containing j of |u|! (d - |u| - 1)! / d! (v(u + j) - v(u)), by the definition."""
    phi = np.zeros(d)
    for j in range(d):
        others = [k for k in range(d) if k != j]
        for size in range(d):
            weight = math.factorial(size) * math.factorial(d - size - 1) / math.factorial(d)
            for u in map(frozenset, itertools.combinations(others, size)):
                phi[j] += weight * (value[u | {j}] - value[u])
    return phi


def uniqueness_values(
    columns: Sequence[Sequence[object]], kinds: Sequence[Callable[[Sequence[object]], Test]], t: int
) -> dict[frozenset[int], float]:
    """v_U(t, u) = -log(|C_{t,u}| / n) for every set u of predictors, each cohort found row by row."""
    n = len(columns[0])
    return {u: -math.log(size / n) for u, size in cohort_sizes(columns, kinds, t).items()}


def uniqueness_shapley(
    columns: Sequence[Sequence[object]],
    kinds: Sequence[Callable[[Sequence[object]], Test]],
    targets: Sequence[int],
) -> tuple[np.ndarray, np.ndarray]:
    """(phi of v_U(t, u) = -log(|C_{t,u}| / n), |C_{t,1:d}|) for the targets, by the definitions."""
    n, d = len(columns[0]), len(columns)
    phi = np.zeros((len(targets), d))
    sizes = np.zeros(len(targets))
    for row, t in enumerate(targets):
        value = uniqueness_values(columns, kinds, t)
        sizes[row] = math.exp(-value[frozenset(range(d))]) * n
        for j in range(d):
            others = [k for k in range(d) if k != j]
            for size in range(d):
                weight = math.factorial(size) * math.factorial(d - size - 1) / math.factorial(d)
                for u in itertools.combinations(others, size):
                    phi[row, j] += weight * (value[frozenset(u) | {j}] - value[frozenset(u)])
    return phi, sizes


def baseline_shapley(
    columns: Sequence[Sequence[object]],
    kinds: Sequence[Callable[[Sequence[object]], Test]],
    model: Callable[[list[object]], float],
    targets: Sequence[Sequence[object]],
    baselines: Sequence[Sequence[object]],
) -> dict[str, np.ndarray]:
    """Baseline Shapley over the given baseline points by the definitions: every subset, every
    baseline, one model call per hybrid point per term, realism by testing every subject.

    Returns phi, phi2 and their realistic parts, each (len(targets), d)."""
    n, d = len(columns[0]), len(columns)
    tests = [kind(column) for kind, column in zip(kinds, columns)]

    def hybrid(target: Sequence[object], base: Sequence[object], u: frozenset[int]) -> list[object]:
        return [target[j] if j in u else base[j] for j in range(d)]

    def realistic(point: Sequence[object]) -> bool:
        return any(all(similar(tests[j], columns[j][i], point[j]) for j in range(d)) for i in range(n))

    out = {name: np.zeros((len(targets), d)) for name in ("phi", "phi2", "real", "real2")}
    for row, target in enumerate(targets):
        for base in baselines:
            origin = model(list(base))
            for j in range(d):
                others = [k for k in range(d) if k != j]
                for size in range(d):
                    weight = math.factorial(size) * math.factorial(d - size - 1) / math.factorial(d)
                    for chosen in itertools.combinations(others, size):
                        u = frozenset(chosen)
                        without, with_j = hybrid(target, base, u), hybrid(target, base, u | {j})
                        v0, v1 = model(without) - origin, model(with_j) - origin
                        both = realistic(without) and realistic(with_j)
                        out["phi"][row, j] += weight * (v1 - v0) / len(baselines)
                        out["phi2"][row, j] += weight * (v1**2 - v0**2) / len(baselines)
                        out["real"][row, j] += both * weight * (v1 - v0) / len(baselines)
                        out["real2"][row, j] += both * weight * (v1**2 - v0**2) / len(baselines)
    return out


def conjunction(*kinds: Callable[[Sequence[object]], Test]) -> Callable[[Sequence[object]], Test]:
    """The kind of a group whose values are tuples of its members' values: similar when similar on every
    member (each member's NULL similar to NULL only), each member's test built from its own column."""

    def build(column: Sequence[object]) -> Test:
        tests = [kind([value[index] for value in column]) for index, kind in enumerate(kinds)]
        return lambda s, t: all(similar(test, a, b) for test, a, b in zip(tests, s, t))

    return build


def owen_values(value: dict[frozenset[int], float], unions: Sequence[Sequence[int]]) -> np.ndarray:
    """Owen values by their definition (Owen 1977): each player's marginal contribution averaged over
    every order of the players in which the members of each union come one after another."""
    d = sum(len(union) for union in unions)
    union_of = {member: index for index, union in enumerate(unions) for member in union}
    phi, orders = np.zeros(d), 0
    for order in itertools.permutations(range(d)):
        runs = [union_of[player] for player in order]
        changes = [index for index in range(1, d) if runs[index] != runs[index - 1]]
        if len(changes) != len(unions) - 1:  # a union's members are split by another's
            continue
        orders += 1
        before: frozenset[int] = frozenset()
        for player in order:
            phi[player] += value[before | {player}] - value[before]
            before = before | {player}
    return phi / orders


# -- values and kinds as the library defines its comparisons (NaN missing, -0.0 equal to 0.0, dates in days,
# timestamps in microseconds as instants), for tables of any type ------------------------------------------

UNITS = {"w": 604_800_000_000, "d": 86_400_000_000, "h": 3_600_000_000, "min": 60_000_000, "s": 1_000_000}
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def comparable(value: object) -> object:
    """A value as the similarity tests compare it (None for missing)."""
    if value is None:
        return None
    if isinstance(value, float):
        return None if math.isnan(value) else value + 0.0
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, datetime.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)
        delta = aware - EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, datetime.date):
        return (value - datetime.date(1970, 1, 1)).days
    return value


def reference_kind(text: str, dtype: pl.DataType):
    """The brute-force twin of a kind's text form."""
    if text == "exact":
        return exact()
    kind, _, argument = text.partition(":")
    if kind == "abs":
        number, unit = re.fullmatch(r"([0-9.eE+-]+)([a-z]*)", argument).groups()
        if unit:
            return absolute(float(number) * UNITS[unit])
        return absolute(float(number) * (UNITS["d"] if dtype == pl.Datetime else 1))
    if kind == "relative":
        return relative(float(argument))
    if kind == "range":
        return range_window(float(argument))
    if kind == "quantile":
        fraction, _, p = argument.partition(":")
        return quantile_window(float(fraction), float(p or 0.05))
    if kind == "bins":
        return bins(int(argument))
    raise ValueError(f"no brute-force twin for {text!r}")


def similar_matrix(
    columns: Sequence[Sequence[object]], kinds: Sequence[Callable[[Sequence[object]], Test]], t: int
) -> np.ndarray:
    """S_ij: whether subject i is similar to target t on feature j, (n, d), by the tests above."""
    tests = [kind(column) for kind, column in zip(kinds, columns)]
    return np.array(
        [
            [similar(tests[j], columns[j][i], columns[j][t]) for j in range(len(columns))]
            for i in range(len(columns[0]))
        ],
        dtype=float,
    ).reshape(len(columns[0]), len(columns))


def integrated_gradients(
    columns: Sequence[Sequence[object]],
    kinds: Sequence[Callable[[Sequence[object]], Test]],
    y: Sequence[float],
    targets: Sequence[int],
    weights: Sequence[float] | None = None,
    panels: int = 200,
) -> np.ndarray:
    """IGCS by its definition (Hama, Mase & Owen), (len(targets), d): nu(z) = sum_i w_i s_z(i) y_i /
    sum_i w_i s_z(i) with s_z(i) = prod_j (1 + z_j (S_ij - 1)); its gradient by the quotient rule from
    every subject's own product at z = a 1, integrated over a by a composite 8-point Gauss-Legendre
    rule on `panels` equal panels graded geometrically toward a = 1."""
    y = np.asarray(y, dtype=float)
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    nodes, node_weights = np.polynomial.legendre.leggauss(8)
    # `panels` equal panels, and panels halving toward a = 1, where nu moves within ~1/n of the end
    # (the factors (1 - a) of the dissimilar rows vanish there, leaving the target's own cohort)
    edges = np.union1d(np.linspace(0, 1, panels + 1), 1 - 0.5 ** np.arange(1, 53))
    lows, widths = edges[:-1], np.diff(edges)
    a = (lows[:, None] + widths[:, None] * (nodes[None, :] + 1) / 2).reshape(-1)  # every node of every panel
    rule = (widths[:, None] * node_weights[None, :] / 2).reshape(-1)
    values = []
    for t in targets:
        similar_to = similar_matrix(columns, kinds, t)  # (n, d)
        factors = 1 + a[:, None, None] * (similar_to[None] - 1)  # (nodes, n, d)
        s = factors.prod(axis=2)
        # prod over k != j of the factors, as the products before j times those after it (no division)
        ones = np.ones(factors.shape[:2] + (1,))
        before = np.cumprod(np.concatenate([ones, factors[:, :, :-1]], axis=2), axis=2)
        after = np.cumprod(np.concatenate([ones, factors[:, :, :0:-1]], axis=2), axis=2)[:, :, ::-1]
        d_s = -(1 - similar_to)[None] * before * after
        denominator, numerator = s @ w, s @ (w * y)
        gradient = (
            np.einsum("i,aij->aj", w * y, d_s) * denominator[:, None]
            - numerator[:, None] * np.einsum("i,aij->aj", w, d_s)
        ) / denominator[:, None] ** 2
        values.append(rule @ gradient)
    return np.array(values)
