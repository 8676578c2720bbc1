"""Invariances that hold by definition, as seeded property tests on every engine, both paths and both methods.

Cohort Shapley values depend only on which subjects are similar and on the explained values, so:
row order, relabelled ids and duplicated rows change nothing; reordering features reorders the
values; adding a constant to y changes nothing; scaling y by c scales values by c and squared
values by c^2.
"""

import numpy as np
import polars as pl
from conftest import EngineUnderTest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cohortsql

KINDS = ["exact", "abs:1", "range:0.3", "bins:2", "quantile:0.4"]
EQUIVALENCES = ["exact", "bins:2"]


@st.composite
def cases(draw):
    """A small table of integers (ties and window edges are common), kinds, a method and a path."""
    n = draw(st.integers(2, 10))
    d = draw(st.integers(1, 3))
    grouping = draw(st.booleans())
    kinds = [draw(st.sampled_from(EQUIVALENCES if grouping else KINDS)) for _ in range(d)]
    columns = {f"x{j}": draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)) for j in range(d)}
    columns["y"] = draw(st.lists(st.integers(-4, 4), min_size=n, max_size=n))
    frame = pl.DataFrame(columns).with_columns(
        pl.col("y").cast(pl.Float64), key=pl.Series([f"r{i:02d}" for i in range(n)])
    )
    method = draw(st.sampled_from(["exact", "permutation"]))
    options = dict(
        similarity=dict(zip([f"x{j}" for j in range(d)], kinds)),
        method=method,
        path="grouping_sets" if grouping and method == "exact" else "pairwise",
        seed=3,
        max_permutations=6,
    )
    return frame, options, draw(st.randoms(use_true_random=False))


def explain(frame, options, engine, **changes):
    return cohortsql.cohort_shapley(frame, prediction="y", id="key", **{**options, **changes}, **engine.options)


def close(first, second, scale=1.0):
    np.testing.assert_allclose(first.shapley * scale, second.shapley, atol=1e-9)
    np.testing.assert_allclose(first.shapley_squared * scale**2, second.shapley_squared, atol=1e-9)


def check_row_order(frame, options, random, engine):
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=random.randint(0, 10**6))
    close(explain(frame, options, engine), explain(shuffled, options, engine))


def check_relabelled_ids(frame, options, random, engine):
    relabelled = frame.with_columns(key=pl.col("key").str.replace("r", "id-"))
    first, second = explain(frame, options, engine), explain(relabelled, options, engine)
    assert second.ids.to_list() == [key.replace("r", "id-") for key in first.ids.to_list()]
    close(first, second)


def check_feature_order(frame, options, random, engine):
    if options["method"] == "permutation":
        return  # the random orders are drawn over feature positions
    names = list(options["similarity"])
    reordered = names[::-1]
    similarity = {name: options["similarity"][name] for name in reordered}
    first, second = explain(frame, options, engine), explain(frame, options, engine, similarity=similarity)
    np.testing.assert_allclose(first.shapley[:, ::-1], second.shapley, atol=1e-9)
    np.testing.assert_allclose(first.shapley_squared[:, ::-1], second.shapley_squared, atol=1e-9)


def check_offset(frame, options, random, engine):
    offset = random.choice([1e6, 1e15, -3e12])
    shifted = frame.with_columns(y=pl.col("y") + offset)
    first, second = explain(frame, options, engine), explain(shifted, options, engine)
    close(first, second)
    # a cohort mean near the offset is only as exact as a double there (1e15 + 1/3 is 1e15 + 0.375)
    representable = max(1e-9, 2 * np.spacing(abs(offset)))
    np.testing.assert_allclose(second.totals["cohort_mean"] - offset, first.totals["cohort_mean"], atol=representable)


def check_scale(frame, options, random, engine):
    scale = random.choice([-2.0, 0.5, 3.0])
    close(explain(frame, options, engine), explain(frame.with_columns(y=pl.col("y") * scale), options, engine), scale)


def check_duplicated_rows(frame, options, random, engine):
    doubled = pl.concat([frame, frame.with_columns(key=pl.col("key") + "-copy")])
    first, second = explain(frame, options, engine), explain(doubled, options, engine)
    original = second.ids.is_in(first.ids.implode()).to_numpy()
    np.testing.assert_allclose(first.shapley, second.shapley[original], atol=1e-9)
    np.testing.assert_allclose(first.shapley_squared, second.shapley_squared[original], atol=1e-9)


PROPERTIES = [
    check_row_order,
    check_relabelled_ids,
    check_feature_order,
    check_offset,
    check_scale,
    check_duplicated_rows,
]
DUCKDB = EngineUnderTest("duckdb")


@settings(max_examples=25)
@given(cases())
def test_row_order(case):
    check_row_order(*case, DUCKDB)


@settings(max_examples=25)
@given(cases())
def test_relabelled_ids(case):
    check_relabelled_ids(*case, DUCKDB)


@settings(max_examples=25)
@given(cases())
def test_feature_order(case):
    check_feature_order(*case, DUCKDB)


@settings(max_examples=25)
@given(cases())
def test_constant_offset(case):
    check_offset(*case, DUCKDB)


@settings(max_examples=25)
@given(cases())
def test_scale(case):
    check_scale(*case, DUCKDB)


@settings(max_examples=25)
@given(cases())
def test_duplicated_rows(case):
    check_duplicated_rows(*case, DUCKDB)


@settings(
    max_examples=3,  # six properties, two Spark runs each: about 5 s an example
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=cases())
def test_every_invariance_on_spark(spark_session, case):
    engine = EngineUnderTest("spark", {"connection": spark_session})
    for check in PROPERTIES:
        check(*case, engine)
