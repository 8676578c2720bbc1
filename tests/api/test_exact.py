"""cohort_shapley against brute force, a hand-worked example, and the properties the paper proves."""

import zlib

import numpy as np
import polars as pl
import pytest
import reference
from conftest import EngineUnderTest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cohortsql

KINDS = {
    "exact": ("exact", reference.exact()),
    "abs": ("abs:0.3", reference.absolute(0.3)),
    "relative": ("relative:0.4", reference.relative(0.4)),
    "range": ("range:0.2", reference.range_window(0.2)),
    "quantile": ("quantile:0.25", reference.quantile_window(0.25)),
    "quantile_p": ("quantile:0.3:0.2", reference.quantile_window(0.3, 0.2)),
    "bins": ("bins:3", reference.bins(3)),
    "sql": ("sql:s.{c} - t.{c} BETWEEN -0.2 AND 0.35", reference.custom(lambda s, t: -0.2 <= s - t <= 0.35)),
}


def run(frame, kinds, engine=None, **options):
    similarity = {name: kind.format(c=name) for name, kind in kinds.items()}
    engine_options = {} if engine is None else engine.options
    return cohortsql.cohort_shapley(frame, prediction="y", similarity=similarity, **engine_options, **options)


def brute_force(frame, kinds, targets=None):
    names = list(kinds)
    targets = range(frame.height) if targets is None else targets
    return reference.cohort_shapley(
        [frame[name].to_list() for name in names], [kinds[name] for name in names], frame["y"].to_list(), list(targets)
    )


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_matches_brute_force(kind, engine):
    rng = np.random.default_rng(zlib.crc32(kind.encode()))  # a constant per kind (hash() varies by process)
    n = 40
    text, python = KINDS[kind]
    frame = pl.DataFrame(
        {
            # a discrete column so that exact and bins have ties, continuous ones for windows
            "a": rng.integers(0, 4, n).astype(float) if kind in ("exact", "bins") else rng.uniform(-1, 2, n),
            "b": rng.uniform(0, 1, n),
            "c": rng.uniform(0, 1, n),
            "y": rng.normal(size=n),
        }
    )
    kinds_text = {"a": text, "b": "abs:0.25", "c": "range:0.3"}
    kinds_python = {"a": python, "b": reference.absolute(0.25), "c": reference.range_window(0.3)}
    result = run(frame, kinds_text, engine)
    phi, phi2 = brute_force(frame, kinds_python)
    np.testing.assert_allclose(result.shapley, phi, atol=1e-12)
    np.testing.assert_allclose(result.shapley_squared, phi2, atol=1e-12)


# Small integer values make ties and window boundaries common: bounds must be inclusive.
cell = st.one_of(st.none(), st.integers(0, 4).map(float))
EXACT_ARITHMETIC_KINDS = {
    "exact": ("exact", reference.exact()),
    "abs": ("abs:1", reference.absolute(1)),
    "abs0": ("abs:0", reference.absolute(0)),
    "relative": ("relative:0.5", reference.relative(0.5)),
    "range": ("range:0.25", reference.range_window(0.25)),
    "quantile_minmax": ("quantile:0.5:0", reference.quantile_window(0.5, 0.0)),
    "bins": ("bins:3", reference.bins(3)),
    "sql": ("sql:s.{c} >= t.{c} + 2", reference.custom(lambda s, t: s >= t + 2)),
}


@st.composite
def tables(draw):
    n = draw(st.integers(1, 9))
    d = draw(st.integers(1, 4))
    names = [f"x{j}" for j in range(d)]
    chosen = [draw(st.sampled_from(sorted(EXACT_ARITHMETIC_KINDS))) for _ in names]
    columns = {name: draw(st.lists(cell, min_size=n, max_size=n)) for name in names}
    columns["y"] = draw(st.lists(st.integers(-5, 5).map(float), min_size=n, max_size=n))
    return pl.DataFrame(columns, schema={**{name: pl.Float64 for name in names}, "y": pl.Float64}), dict(
        zip(names, chosen)
    )


def check_against_brute_force(table, engine=None):
    frame, chosen = table
    result = run(frame, {name: EXACT_ARITHMETIC_KINDS[kind][0] for name, kind in chosen.items()}, engine)
    phi, phi2 = brute_force(frame, {name: EXACT_ARITHMETIC_KINDS[kind][1] for name, kind in chosen.items()})
    np.testing.assert_allclose(result.shapley, phi, atol=1e-12)
    np.testing.assert_allclose(result.shapley_squared, phi2, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(tables())
def test_random_tables_with_missing_values_match_brute_force(table):
    check_against_brute_force(table)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(table=tables())
def test_random_tables_with_missing_values_on_spark(spark_session, table):
    check_against_brute_force(table, EngineUnderTest("spark", {"connection": spark_session}))


def test_hand_worked_three_predictor_example(engine):
    """Target 0 = (1, 1, 1) among four subjects; ybar = 2.

    Cohort means minus ybar: v({}) = 0, v(a) = 0 (subjects 0-2), v(b) = 1 (0, 1), v(c) = 2 (0),
    v(ab) = 1, v(ac) = v(bc) = v(abc) = 2. Weights for d = 3: w(0) = 1/3, w(1) = 1/6, w(2) = 1/3.
    phi_a = 0
    phi_b = 1/3 (1 - 0) + 1/6 ((1 - 0) + (2 - 2)) + 1/3 (2 - 2) = 1/2
    phi_c = 1/3 (2 - 0) + 1/6 ((2 - 0) + (2 - 1)) + 1/3 (2 - 1) = 3/2        (sum 2 = v(abc))
    Squared game: 0, 0, 1, 4, 1, 4, 4, 4 ->
    phi2_a = 0, phi2_b = 1/3 + 1/6 = 1/2, phi2_c = 4/3 + 1/6 (4 + 3) + 1/3 (3) = 7/2  (sum 4)
    """
    frame = pl.DataFrame({"a": [1, 1, 1, 0], "b": [1, 1, 0, 0], "c": [1, 0, 0, 0], "y": [4.0, 2.0, 0.0, 2.0]})
    result = cohortsql.cohort_shapley(frame, prediction="y", similarity=["a", "b", "c"], targets=[0], **engine.options)
    np.testing.assert_allclose(result.shapley[0], [0.0, 0.5, 1.5], atol=1e-15)
    np.testing.assert_allclose(result.shapley_squared[0], [0.0, 0.5, 3.5], atol=1e-14)
    totals = result.totals.row(0, named=True)
    assert totals == {
        "id": 0,
        "prediction": 4.0,
        "cohort_size": 1,
        "cohort_mean": 4.0,
        "value": 2.0,
        "value_squared": 4.0,
    }


def test_identical_predictor_columns_get_equal_values(engine):
    rng = np.random.default_rng(7)
    x = rng.uniform(size=60)
    frame = pl.DataFrame({"x": x, "x_copy": x, "z": rng.uniform(size=60), "y": x + rng.normal(scale=0.1, size=60)})
    result = cohortsql.cohort_shapley(
        frame, prediction="y", similarity={"x": "abs:0.1", "x_copy": "abs:0.1", "z": "abs:0.1"}, **engine.options
    )
    np.testing.assert_allclose(result.shapley[:, 0], result.shapley[:, 1], atol=1e-12)
    np.testing.assert_allclose(result.shapley_squared[:, 0], result.shapley_squared[:, 1], atol=1e-12)


def test_values_add_up_to_the_cohort_value(engine):
    rng = np.random.default_rng(3)
    frame = pl.DataFrame({f"x{j}": rng.integers(0, 3, 200) for j in range(6)} | {"y": rng.normal(size=200)})
    result = cohortsql.cohort_shapley(frame, prediction="y", similarity=[f"x{j}" for j in range(6)], **engine.options)
    totals = result.totals
    np.testing.assert_allclose(result.shapley.sum(axis=1), totals["value"], atol=1e-12)
    np.testing.assert_allclose(result.shapley_squared.sum(axis=1), totals["value_squared"], atol=1e-12)
    assert result.mean == pytest.approx(frame["y"].mean())
    # the full cohort is every subject equal to the target on all six columns
    keys = frame.select(pl.concat_str([pl.col(f"x{j}").cast(pl.String) for j in range(6)], separator=","))
    sizes = keys.to_series().value_counts().rename({keys.columns[0]: "key"})
    expected = keys.to_series().to_frame("key").join(sizes, on="key", how="left", maintain_order="left")["count"]
    assert totals["cohort_size"].to_list() == expected.to_list()


def test_twenty_predictors_exact():
    """d = 20 keeps 2^20 cohort values per target; a few targets on a small table."""
    rng = np.random.default_rng(11)
    n, d = 300, 20
    frame = pl.DataFrame({f"x{j}": rng.integers(0, 2, n) for j in range(d)} | {"y": rng.normal(size=n)})
    result = cohortsql.cohort_shapley(frame, prediction="y", similarity=[f"x{j}" for j in range(d)], targets=[0, 1, 2])
    assert result.shapley.shape == (3, d)
    np.testing.assert_allclose(result.shapley.sum(axis=1), result.totals["value"], atol=1e-10)
    np.testing.assert_allclose(result.shapley_squared.sum(axis=1), result.totals["value_squared"], atol=1e-10)


@pytest.mark.parametrize("method", ["exact", "permutation"])
def test_refinement_paths_by_brute_force(method, engine):
    """Step k's cohort: subjects similar to the target on its k most important features."""
    rng = np.random.default_rng(21)
    frame = pl.DataFrame({f"x{j}": rng.uniform(size=60) for j in range(4)} | {"y": rng.normal(size=60)})
    windows = {f"x{j}": 0.1 + 0.1 * j for j in range(4)}
    result = cohortsql.cohort_shapley(
        frame,
        prediction="y",
        similarity={name: f"abs:{delta}" for name, delta in windows.items()},
        targets=[0, 7, 33],
        method=method,
        seed=1,
        **engine.options,
    )
    y = frame["y"].to_numpy()
    for row, target in enumerate([0, 7, 33]):
        steps = result.paths.filter(pl.col("id") == target).sort("step")
        assert steps["step"].to_list() == [0, 1, 2, 3, 4]
        assert steps["cohort_size"][0] == 60 and steps["cohort_mean"][0] == pytest.approx(y.mean())
        expected_order = [result.features[j] for j in np.argsort(-np.abs(result.shapley[row]), kind="stable")]
        assert steps["feature"].to_list()[1:] == expected_order
        members = np.ones(60, dtype=bool)
        for step, feature in enumerate(expected_order, start=1):
            column = frame[feature].to_numpy()
            members &= np.abs(column - column[target]) <= windows[feature]
            assert steps["cohort_size"][step] == members.sum()
            assert steps["cohort_mean"][step] == pytest.approx(y[members].mean(), abs=1e-12)
