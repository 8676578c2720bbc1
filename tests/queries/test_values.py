"""The values query's renderers, run by DuckDB on literal rows: the popcount written without a
popcount, the Shapley weights written as a table, and the superset sums written as passes of SQL
equal the numpy core's."""

import math

import duckdb
import numpy as np
import pytest

from cohortsql.dialects import DUCKDB
from cohortsql.numeric import shapley
from cohortsql.queries import values
from cohortsql.queries.steps import Step, with_query


@pytest.mark.parametrize("d", [1, 3, 6])
def test_set_size_counts_the_bits_of_every_set(d):
    rows = duckdb.sql(f"SELECT u, {values.set_size(d)} AS size FROM range({1 << d}) AS r(u) ORDER BY u").fetchall()
    assert [size for _, size in rows] == [u.bit_count() for u in range(1 << d)]


@pytest.mark.parametrize("d", [1, 4, 9])
def test_the_weights_table_holds_the_shapley_weights(d):
    rows = duckdb.sql(
        f"SELECT * FROM (VALUES {values.shapley_weights(d, DUCKDB)}) AS w(size, inside, outside)"
    ).fetchall()
    w = [1 / (d * math.comb(d - 1, s)) for s in range(d)]
    for size, inside, outside in rows:
        assert outside == pytest.approx(w[size] if size < d else 0.0, rel=1e-15)
        assert inside == pytest.approx((w[size - 1] if size else 0.0) + (w[size] if size < d else 0.0), rel=1e-15)
    np.testing.assert_allclose([w_ for w_ in w], shapley.shapley_weights(d), rtol=1e-15)


@pytest.mark.parametrize("d, bits", [(3, 1), (5, 2), (7, 5)])
def test_superset_passes_equal_the_numpy_transform(d, bits, monkeypatch):
    monkeypatch.setattr(values, "BITS_PER_PASS", bits)
    rng = np.random.default_rng(d)
    masks = sorted(set(rng.integers(0, 1 << d, 12).tolist()) | {(1 << d) - 1})
    weights = rng.integers(1, 4, len(masks)).astype(float)
    sums = rng.normal(size=len(masks))
    literal = ", ".join(f"(0, {m}, {DUCKDB.number(w)}, {DUCKDB.number(s)})" for m, w, s in zip(masks, weights, sums))
    steps = [Step("histogram", f"SELECT * FROM (VALUES {literal}) AS h(target, mask0, w0, s0_0)")]
    steps += values.superset_passes("histogram", d)
    rows = duckdb.sql(with_query(steps, f"SELECT u, w, s FROM {steps[-1].name} ORDER BY u")).fetchall()
    dense = np.zeros((2, 1 << d))
    dense[0, masks], dense[1, masks] = weights, sums
    expected = shapley.superset_sums(dense)
    got = {u: (w, s) for u, w, s in rows}
    for u in range(1 << d):
        if expected[0, u]:
            assert got[u][0] == pytest.approx(expected[0, u]) and got[u][1] == pytest.approx(expected[1, u])
