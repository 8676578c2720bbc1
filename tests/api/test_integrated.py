"""Integrated gradient cohort Shapley (``method="integrated"``) and the insertion and deletion tests,
against their definitions: the authors' toy and its analytic values; a brute-force evaluation of the
definition (the soft cohort of every subject, the quotient rule's gradient of nu, a fine composite
rule) on real data; completeness; the authors' own Riemann scheme, implemented from its definition;
the insertion and deletion curves as cohort means of prefix sets; and every engine equal to DuckDB."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import reference
from polars.testing import assert_frame_equal
from reference import comparable, reference_kind

import cohortsql
from cohortsql.run.pairwise import pair_tests

BOSTON = "examples/data/boston_predictions.parquet"
TITANIC = "examples/data/titanic_predictions.parquet"


def toy() -> pl.DataFrame:
    """The authors' toy (their tests): 4 rows, 2 features, similar within 10% of the range."""
    return pl.DataFrame(
        {"id": [0, 1, 2, 3], "a": [0.0, 0.0, 1.0, 1.0], "b": [0.0, 1.0, 0.0, 2.0], "y": [0.0, 1.0, 1.0, 2.0]}
    )


def test_the_authors_toy_equals_its_analytic_values():
    found = cohortsql.cohort_shapley(
        toy(), prediction="y", similarity={"a": "range:0.1", "b": "range:0.1"}, id="id", method="integrated"
    )
    root = math.sqrt(7)
    arctangents = math.atan(1 / root) - math.atan(5 / root)
    np.testing.assert_allclose(found.shapley[0], [-0.5, -0.5], atol=1e-12)
    np.testing.assert_allclose(
        found.shapley[3], [3 / 7 + 2 / (7 * root) * arctangents, 4 / 7 - 2 / (7 * root) * arctangents], atol=1e-12
    )
    assert found.method == "integrated" and found.settings["integration_nodes"] > 0


def columns_and_tests(frame: pl.DataFrame, kinds: dict[str, str]):
    """The features' values as the library compares them, and their brute-force similarity tests."""
    columns = [[comparable(value) for value in frame[name].to_list()] for name in kinds]
    return columns, [reference_kind(kind, frame.schema[name]) for name, kind in kinds.items()]


def similar_to(frame: pl.DataFrame, kinds: dict[str, str], target: int) -> np.ndarray:
    """S_ij for every subject and feature, by the reference's tests (NULL similar to NULL only)."""
    return reference.similar_matrix(*columns_and_tests(frame, kinds), target)


def brute_force(frame: pl.DataFrame, kinds: dict[str, str], prediction: str, target: int, weight=None) -> np.ndarray:
    """IGCS of one target by its definition (`reference.integrated_gradients`)."""
    y = frame[prediction].cast(pl.Float64).to_numpy()
    weights = None if weight is None else frame[weight].cast(pl.Float64).to_numpy()
    return reference.integrated_gradients(*columns_and_tests(frame, kinds), y, [target], weights, panels=400)[0]


@pytest.mark.parametrize(
    "path, kinds, targets, weight",
    [
        (
            BOSTON,
            {"lstat": "quantile:0.1", "rm": "quantile:0.1", "crim": "range:0.1", "chas": "exact", "age": "abs:10"},
            [0, 7, 204],
            None,
        ),
        (TITANIC, {"age": "abs:5", "sex": "exact", "pclass": "exact", "parch": "relative:0.5"}, [2, 40, 300], None),
    ],
    ids=["boston", "titanic-with-missing-ages"],
)
def test_values_equal_a_brute_force_evaluation_of_the_definition(path, kinds, targets, weight):
    frame = pl.read_parquet(path).with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
    prediction = "prediction" if "prediction" in frame.columns else frame.columns[-1]
    found = cohortsql.cohort_shapley(
        frame, prediction=prediction, similarity=kinds, id="row", targets=targets, method="integrated"
    )
    for row, target in enumerate(targets):
        np.testing.assert_allclose(
            found.shapley[row], brute_force(frame, kinds, prediction, target), rtol=0, atol=1e-10
        )
    full = found.cohort_mean - found.mean
    np.testing.assert_allclose(found.shapley.sum(axis=1), full, atol=1e-12)  # completeness
    np.testing.assert_allclose(found.shapley_squared.sum(axis=1), full**2, atol=1e-12)


def test_the_authors_riemann_scheme_differs_by_its_own_discretisation_error():
    """The authors' code averages the gradient at the 501 points a = 0, 1/500, ..., 1 (a Riemann mean
    with both ends): implemented here from that definition, its difference from the exact integral is
    first order in the step (halving the step about halves it) and no larger than its own change from
    500 to 1,000 steps, times the extrapolation factor of a first-order rule."""
    frame = pl.read_parquet(BOSTON).with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
    kinds = {"lstat": "quantile:0.1", "rm": "quantile:0.1", "crim": "range:0.1", "age": "abs:10"}
    exact = cohortsql.cohort_shapley(
        frame, prediction="prediction", similarity=kinds, id="row", targets=[7], method="integrated"
    ).shapley[0]
    similar = similar_to(frame, kinds, 7)
    y = frame["prediction"].to_numpy()

    def riemann(steps: int) -> np.ndarray:
        gradients = []
        for a in np.linspace(0, 1, steps + 1):
            factors = 1 + a * (similar - 1)
            s = factors.prod(axis=1)
            d_s = np.stack(
                [-(1 - similar[:, j]) * np.prod(np.delete(factors, j, axis=1), axis=1) for j in range(len(kinds))], 1
            )
            gradients.append((y @ d_s * s.sum() - (s * y).sum() * d_s.sum(axis=0)) / s.sum() ** 2)
        return np.mean(gradients, axis=0)

    coarse, fine = riemann(500), riemann(1000)
    error_coarse, error_fine = np.abs(coarse - exact).max(), np.abs(fine - exact).max()
    assert error_coarse > 1e-8  # the scheme is visibly off ...
    assert 1.6 < error_coarse / error_fine < 2.4  # ... by a first-order error ...
    assert error_coarse <= 1.1 * 2 * np.abs(coarse - fine).max()  # ... which its own refinement measures


def test_a_table_wider_than_the_permutation_methods_reach():
    """200 binary features (refused before: at most 128): the values add up, the features the
    prediction reads come first, and method="auto" takes the integrated method, saying so."""
    rng = np.random.default_rng(8)
    n, d = 400, 200
    x = rng.integers(0, 2, (n, d))
    y = x[:, :3] @ np.array([1.0, 0.6, 0.3]) + rng.normal(scale=0.05, size=n)
    frame = pl.DataFrame({f"x{j}": x[:, j] for j in range(d)}).with_columns(y=pl.Series(y)).with_row_index("id")
    similarity = {f"x{j}": "exact" for j in range(d)}
    with pytest.warns(cohortsql.CohortWarning, match="chose the integrated gradient approximation"):
        found = cohortsql.cohort_shapley(
            frame, prediction="y", similarity=similarity, id="id", targets=12, seed=2, method="auto"
        )
    assert found.method == "integrated" and found.shapley.shape == (12, d)
    np.testing.assert_allclose(found.shapley.sum(axis=1), found.cohort_mean - found.mean, atol=1e-12)
    assert found.global_["feature"].head(3).to_list() == ["x0", "x1", "x2"]
    with pytest.raises(cohortsql.CohortError, match="at most 128 features.*method='integrated'"):
        cohortsql.cohort_shapley(
            frame, prediction="y", similarity=similarity, id="id", targets=[0, 1], method="permutation"
        )


def test_effects_average_the_squared_variant():
    frame = pl.read_parquet(BOSTON)
    kinds = {"lstat": "quantile:0.1", "rm": "quantile:0.1", "crim": "range:0.1"}
    local = cohortsql.cohort_shapley(frame, prediction="prediction", similarity=kinds, method="integrated")
    effects = cohortsql.shapley_effects(frame, prediction="prediction", similarity=kinds, method="integrated")
    expected = local.shapley_squared.mean(axis=0)
    found = effects.effects.sort("feature")["shapley_effect"].to_numpy()
    np.testing.assert_allclose(found, expected[np.argsort(list(kinds))], atol=1e-12)
    assert effects.method == "integrated"
    assert effects.explained == pytest.approx(np.mean((local.cohort_mean - local.mean) ** 2), abs=1e-12)


def test_weights_groups_outcomes_and_replicates():
    """Case weights weigh every sum; a group is one player (not similar on it: on any member); two
    outcomes are two games of one histogram; bootstrap intervals are percentiles of the replicates'
    values and contain the estimate here."""
    frame = (
        pl.read_parquet(TITANIC)
        .with_row_index("row")
        .with_columns(
            pl.col("row").cast(pl.Int64), w=(pl.col("row") % 3 + 1).cast(pl.Float64), y2=pl.col("prediction") ** 2
        )
    )
    kinds = {"age": "abs:5", "sex": "exact", "pclass": "exact"}
    weighted = cohortsql.cohort_shapley(
        frame, prediction="prediction", similarity=kinds, id="row", targets=[3, 9], weight="w", method="integrated"
    )
    for row, target in enumerate([3, 9]):
        expected = brute_force(frame, kinds, "prediction", target, weight="w")
        np.testing.assert_allclose(weighted.shapley[row], expected, atol=1e-10)
    grouped = cohortsql.cohort_shapley(
        frame,
        prediction="prediction",
        similarity=kinds,
        id="row",
        targets=[3],
        groups={"who": ["sex", "age"]},
        method="integrated",
    )
    merged = frame.with_columns(who=pl.concat_str([pl.col("sex"), pl.col("age").cast(pl.String)], ignore_nulls=False))
    assert grouped.features == ("who", "pclass")
    np.testing.assert_allclose(grouped.shapley.sum(axis=1), grouped.cohort_mean - grouped.mean, atol=1e-12)
    assert merged.height == frame.height
    both = cohortsql.cohort_shapley(
        frame, prediction=["prediction", "y2"], similarity=kinds, id="row", targets=[3], method="integrated"
    )
    alone = cohortsql.cohort_shapley(
        frame, prediction="y2", similarity=kinds, id="row", targets=[3], method="integrated"
    )
    np.testing.assert_allclose(both["y2"].shapley, alone.shapley, atol=1e-12)
    boot = cohortsql.cohort_shapley(
        frame,
        prediction="prediction",
        similarity=kinds,
        id="row",
        targets=[3, 9],
        bootstrap=30,
        seed=4,
        method="integrated",
    )
    local = boot.local
    assert (local["shapley_ci_low"] <= local["shapley_ci_high"]).all()
    np.testing.assert_allclose(
        boot.shapley,
        cohortsql.cohort_shapley(
            frame, prediction="prediction", similarity=kinds, id="row", targets=[3, 9], method="integrated"
        ).shapley,
        atol=1e-12,
    )


@pytest.mark.parametrize(
    "options, fragment",
    [
        ({"interactions": True}, "interactions=True needs the lattice"),
        ({"anchored": 2}, "anchored=2 needs the lattice"),
    ],
)
def test_what_the_integrated_method_cannot_give_is_one_error(options, fragment):
    with pytest.raises(cohortsql.CohortError, match=fragment):
        cohortsql.cohort_shapley(toy(), prediction="y", similarity=["a", "b"], id="id", method="integrated", **options)


def test_every_engine_computes_what_duckdb_computes(engine):
    frame = pl.read_parquet(TITANIC).with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
    kinds = {"age": "abs:5", "sex": "exact", "pclass": "exact", "parch": "range:0.2"}
    options = dict(prediction="prediction", similarity=kinds, id="row", targets=[1, 5, 77, 300], method="integrated")
    found = cohortsql.cohort_shapley(frame, **options, **engine.options)
    expected = cohortsql.cohort_shapley(frame, **options)
    np.testing.assert_allclose(found.shapley, expected.shapley, atol=1e-9)
    np.testing.assert_allclose(found.path_mean, expected.path_mean, atol=1e-9)
    tests = cohortsql.insertion_deletion(
        frame, prediction="prediction", similarity=kinds, id="row", attributions=expected, **engine.options
    )
    reference = cohortsql.insertion_deletion(
        frame, prediction="prediction", similarity=kinds, id="row", attributions=expected
    )
    np.testing.assert_allclose(tests.abc["insertion_abc"], reference.abc["insertion_abc"], atol=1e-9)
    np.testing.assert_allclose(tests.abc["deletion_abc"], reference.abc["deletion_abc"], atol=1e-9)


# -- the insertion and deletion tests -----------------------------------------------------------------


def direct_curves(frame, kinds, prediction, target, attribution):
    """The authors' definition: cohort means of the prefix sets of the order by attribution (ties in
    feature order), and their ABC (trapezoid areas against the line between the ends)."""
    similar = similar_to(frame, kinds, target).astype(bool)
    y = frame[prediction].cast(pl.Float64).to_numpy()
    order = np.argsort(-np.asarray(attribution), kind="stable")
    d = len(order)
    insertion = [y[similar[:, order[:m]].all(axis=1)].mean() for m in range(d + 1)]
    deletion = [y[similar[:, order[m:]].all(axis=1)].mean() for m in range(d + 1)]

    def abc(points):
        points = np.asarray(points)
        auc = (points.sum() - (points[0] + points[-1]) / 2) / d
        return auc - (points[0] + points[-1]) / 2

    return insertion, deletion, abc(insertion), -abc(deletion)


def test_the_tests_equal_their_definition_for_a_result_and_for_a_users_table():
    frame = pl.read_parquet(BOSTON).with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
    kinds = {"lstat": "quantile:0.1", "rm": "quantile:0.1", "crim": "range:0.1", "chas": "exact", "nox": "bins:4"}
    result = cohortsql.cohort_shapley(frame, prediction="prediction", similarity=kinds, id="row", targets=[0, 50, 204])
    rng = np.random.default_rng(1)
    users = pl.DataFrame(
        {"id": np.repeat([0, 50, 204], 5), "feature": list(kinds) * 3, "value": np.round(rng.normal(size=15), 1)}
    ).with_columns(pl.when(pl.col("feature") == "chas").then(0.0).otherwise(pl.col("value")).alias("value"))
    for attributions in (result, users):
        tests = cohortsql.insertion_deletion(
            frame, prediction="prediction", similarity=kinds, id="row", attributions=attributions
        )
        for target in (0, 50, 204):
            if attributions is result:
                values = result.shapley[list(result.ids).index(target)]
            else:
                values = users.filter(pl.col("id") == target)["value"].to_numpy()
            insertion, deletion, inserted, deleted = direct_curves(frame, kinds, "prediction", target, values)
            curves = tests.curves.filter(pl.col("id") == target).sort("step")
            np.testing.assert_allclose(curves["insertion"], insertion, atol=1e-12)
            np.testing.assert_allclose(curves["deletion"], deletion, atol=1e-12)
            row = tests.abc.filter(pl.col("id") == target).row(0, named=True)
            assert row["insertion_abc"] == pytest.approx(inserted, abs=1e-12)
            assert row["deletion_abc"] == pytest.approx(deleted, abs=1e-12)


@pytest.mark.parametrize(
    "change, fragment",
    [
        (
            lambda table: table.filter(~((pl.col("id") == 50) & (pl.col("feature") == "rm"))),
            "no value of feature 'rm' for target 50",
        ),
        (lambda table: table.with_columns(pl.col("id").replace(204, 99_999)), "99999"),
        (lambda table: table.with_columns(pl.col("feature").replace("crim", "nope")), "'nope'"),
        (lambda table: table.rename({"value": "score"}), "columns id, feature and value"),
        (lambda table: pl.concat([table, table.head(1)]), "more than once"),
    ],
    ids=["a missing feature", "a missing target", "an unknown feature", "no value column", "a repeated value"],
)
def test_an_attribution_table_that_does_not_fit_is_one_error_naming_what(change, fragment):
    frame = pl.read_parquet(BOSTON).with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
    kinds = {"lstat": "quantile:0.1", "rm": "quantile:0.1", "crim": "range:0.1"}
    table = pl.DataFrame({"id": np.repeat([0, 50, 204], 3), "feature": list(kinds) * 3, "value": np.arange(9.0)})
    with pytest.raises(cohortsql.CohortError, match=fragment):
        cohortsql.insertion_deletion(
            frame, prediction="prediction", similarity=kinds, id="row", attributions=change(table)
        )


def test_a_better_attribution_scores_better():
    """Cohort Shapley's own order beats its reverse on both tests (the paper's sanity check)."""
    frame = pl.read_parquet(BOSTON).with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
    kinds = {"lstat": "quantile:0.1", "rm": "quantile:0.1", "crim": "range:0.1", "ptratio": "quantile:0.1"}
    result = cohortsql.cohort_shapley(frame, prediction="prediction", similarity=kinds, id="row", targets=40, seed=3)
    reverse = result.local.select("id", "feature", (-pl.col("shapley")).alias("value"))
    good = cohortsql.insertion_deletion(frame, prediction="prediction", similarity=kinds, id="row", attributions=result)
    bad = cohortsql.insertion_deletion(frame, prediction="prediction", similarity=kinds, id="row", attributions=reverse)
    assert good.abc["insertion_abc"].mean() > bad.abc["insertion_abc"].mean()
    assert good.abc["deletion_abc"].mean() > bad.abc["deletion_abc"].mean()


@pytest.mark.parametrize("numba", [True, False], ids=["compiled", "numpy"])
def test_the_histograms_built_here_equal_the_engines_sql(monkeypatch, numba):
    """On DuckDB the integrated histograms are built in this process from the streamed subjects
    (`cohortsql.numeric.dissimilar`); every kind's numeric test, missing values, text, weights and groups
    give what the engine's SQL gives, compiled or in numpy."""
    from cohortsql.numeric import kernels
    from cohortsql.run import integrated
    from cohortsql.run.kernel_subjects import KernelSubjects

    frame = (
        pl.read_parquet(TITANIC)
        .with_row_index("row")
        .with_columns(pl.col("row").cast(pl.Int64), w=(pl.col("row") % 4 + 1).cast(pl.Float64), order=pl.col("row") * 3)
    )
    kinds = {
        "age": "abs:5",
        "sex": "exact",
        "pclass": "exact",
        "sibsp": "bins:3",
        "parch": "relative:0.5",
        "order": "range:0.1",
    }
    options = dict(
        prediction="prediction", similarity=kinds, id="row", targets=[0, 5, 17, 200, 333], method="integrated"
    )
    if not numba:
        monkeypatch.setattr(kernels, "available", lambda: False)
        monkeypatch.setattr(
            integrated,
            "kernel_subjects",
            lambda engine, prepared, weighted, targets: KernelSubjects(
                engine, prepared, weighted, pair_tests(prepared, masks=False), targets
            ),
        )
    built = [
        cohortsql.cohort_shapley(frame, **options, **extra)
        for extra in ({}, {"weight": "w"}, {"groups": {"family": ["sibsp", "parch"]}})
    ]
    tests_built = cohortsql.insertion_deletion(
        frame, prediction="prediction", similarity=kinds, id="row", attributions=built[0]
    )
    monkeypatch.setattr(integrated, "kernel_subjects", lambda *arguments: None)
    by_sql = [
        cohortsql.cohort_shapley(frame, **options, **extra)
        for extra in ({}, {"weight": "w"}, {"groups": {"family": ["sibsp", "parch"]}})
    ]
    tests_sql = cohortsql.insertion_deletion(
        frame, prediction="prediction", similarity=kinds, id="row", attributions=built[0]
    )
    for here, there in zip(built, by_sql):
        np.testing.assert_allclose(here.shapley, there.shapley, atol=1e-12)
        np.testing.assert_allclose(here.path_mean, there.path_mean, atol=1e-12)
        np.testing.assert_allclose(here.feature_cohort_size, there.feature_cohort_size, atol=1e-12)
    assert tests_built.curves.equals(tests_sql.curves) or np.allclose(
        tests_built.curves["deletion"].to_numpy(), tests_sql.curves["deletion"].to_numpy(), atol=1e-12
    )


def _spied_subjects(monkeypatch) -> list:
    """Every `KernelSubjects` the integrated path makes, as it makes them."""
    from cohortsql.run import integrated, kernel_subjects

    made, original = [], kernel_subjects.kernel_subjects  # the module's own, whatever a test set before

    def spy(*arguments):
        made.append(original(*arguments))
        return made[-1]

    monkeypatch.setattr(integrated, "kernel_subjects", spy)
    return made


@pytest.mark.parametrize("budget", [None, 1_000], ids=["kept", "streamed each pass"])
def test_subjects_that_fit_are_read_from_the_engine_once_per_call(monkeypatch, budget):
    """The kernel's subjects are read from DuckDB once and kept for every later pass (each batch's
    histogram and refinement curves, the insertion and deletion curves) when they fit the batch
    budget, and read again on each pass when they do not; the values are the SQL path's either way."""
    from cohortsql.numeric import kernels
    from cohortsql.run import integrated, preparation

    if not kernels.available():
        pytest.skip("the compiled kernel is not installed")
    frame = pl.read_parquet(TITANIC).with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
    kinds = {"age": "abs:5", "sex": "exact", "pclass": "exact", "sibsp": "bins:3", "parch": "relative:0.5"}
    options = dict(prediction="prediction", similarity=kinds, id="row", targets=list(range(40)), method="integrated")
    if budget is not None:
        monkeypatch.setattr(preparation, "BATCH_MEMORY_BYTES", budget)
    made = _spied_subjects(monkeypatch)
    here = cohortsql.cohort_shapley(frame, **options)
    tested = cohortsql.insertion_deletion(frame, prediction="prediction", similarity=kinds, id="row", attributions=here)
    distinct = frame.head(40).select(list(kinds)).unique().height  # one batch each: its histogram and curve
    assert [subjects.passes for subjects in made] == ([1, 1] if budget is None else [2 * distinct, 2])
    monkeypatch.setattr(integrated, "kernel_subjects", lambda *arguments: None)
    by_sql = cohortsql.cohort_shapley(frame, **options)
    np.testing.assert_allclose(here.shapley, by_sql.shapley, atol=1e-12)
    np.testing.assert_allclose(here.path_mean, by_sql.path_mean, atol=1e-12)
    again = cohortsql.insertion_deletion(frame, prediction="prediction", similarity=kinds, id="row", attributions=here)
    np.testing.assert_allclose(tested.abc["deletion_abc"], again.abc["deletion_abc"], atol=1e-12)


def test_byte_columns_give_the_sql_values(monkeypatch):
    """Subjects kept in memory hold integers as bytes when every integer column streams as int8 or
    boolean (`exact` keeps the column's type), with missing values: every test falls as in SQL; an
    unsigned byte column keeps them 64-bit (255 would wrap to -1 in a byte)."""
    from cohortsql.run import integrated

    rng = np.random.default_rng(5)
    rows = 400
    frame = pl.DataFrame(
        {
            "row": np.arange(rows),
            "tiny": pl.Series(rng.integers(-3, 3, rows), dtype=pl.Int8).set(pl.Series(np.arange(rows) % 11 == 0), None),
            "flag": pl.Series(rng.integers(0, 2, rows) == 1),
            "byte": pl.Series(rng.integers(250, 256, rows), dtype=pl.UInt8),
            "y": rng.normal(size=rows),
        }
    )
    for kinds, dtype in (({"tiny": "exact", "flag": "exact"}, np.int8), ({"tiny": "exact", "byte": "exact"}, np.int64)):
        options = dict(prediction="y", similarity=kinds, id="row", targets=[0, 3, 11, 200], method="integrated")
        made = _spied_subjects(monkeypatch)
        here = cohortsql.cohort_shapley(frame, **options)
        if made[0] is not None:  # the compiled kernel installed
            (features, _), *_ = made[0].kept
            assert features.ints.dtype == dtype and features.floats.shape == (2, 0)
        monkeypatch.setattr(integrated, "kernel_subjects", lambda *arguments: None)
        by_sql = cohortsql.cohort_shapley(frame, **options)
        np.testing.assert_allclose(here.shapley, by_sql.shapley, atol=1e-12)
        np.testing.assert_allclose(here.feature_cohort_size, by_sql.feature_cohort_size, atol=1e-12)


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "spark"])
def test_the_printed_integrated_query_gives_the_values_where_it_runs(dialect, request):
    """`sql_query(variant="integrated")` for each dialect, run by that engine: its (target, k) histogram,
    integrated in numpy, is `cohort_shapley(method="integrated")`'s values, to 1e-9."""
    from cohortsql.numeric.integrated import integrate
    from cohortsql.queries.standalone import INTEGRATED_MEASURES
    from cohortsql.run.integrated import integrated_histogram

    frame = pl.read_parquet(TITANIC).with_row_index("pid").with_columns(pl.col("pid").cast(pl.Int64))
    frame = frame.filter(pl.col("pid") < 200)
    kinds = {"age": "abs:5", "sex": "exact", "pclass": "exact", "parch": "range:0.2"}
    options = dict(prediction="prediction", similarity=kinds, id="pid", targets="pid < 6")
    sql = cohortsql.sql_query(frame, table="passengers", dialect=dialect, variant="integrated", **options)
    if dialect == "duckdb":
        import duckdb

        connection = duckdb.connect()
        connection.register("passengers", frame.to_arrow())
        result = pl.from_arrow(connection.sql(sql).to_arrow_table())
    elif dialect == "postgres":
        from postgres import fetch, load_table

        postgres = request.getfixturevalue("postgres")
        load_table(postgres, "passengers", frame)
        result = fetch(postgres, sql)
    else:
        session = request.getfixturevalue("spark_session")
        session.createDataFrame(frame.to_arrow()).createOrReplaceTempView("passengers")
        result = pl.DataFrame([row.asDict() for row in session.sql(sql).collect()])
    ids = sorted(result["target"].unique().to_list())
    position = {identifier: index for index, identifier in enumerate(ids)}
    columns = {name: result[name].to_numpy() for name in result.columns if name not in ("prediction", "features")}
    columns["target"] = np.array([position[value] for value in result["target"].to_list()])
    histogram, _ = integrated_histogram(columns, len(ids), len(kinds), INTEGRATED_MEASURES)
    values = integrate(histogram).shapley[:, 0]
    expected = cohortsql.cohort_shapley(frame, method="integrated", **options)
    assert ids == expected.ids.to_list()
    np.testing.assert_allclose(values, expected.shapley, atol=1e-9)


@pytest.mark.parametrize("method", ["exact", "integrated", "permutation"])
def test_a_results_own_tests_equal_the_function_on_every_engine(engine, method):
    """``res.insertion_deletion(data)`` is `cohortsql.insertion_deletion(data, ..., attributions=res)` with
    the run's own explained column, kinds and id, exactly, on every engine; a model's baseline Shapley
    values take the kinds given."""
    frame = pl.read_parquet(TITANIC).with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
    kinds = {"age": "abs:5", "sex": "exact", "pclass": "exact"}
    options = dict(prediction="prediction", similarity=kinds, id="row", targets=[1, 5, 77], seed=3)
    result = cohortsql.cohort_shapley(frame, **options, method=method, max_permutations=20, **engine.options)
    own = result.insertion_deletion(frame, **engine.options)
    called = cohortsql.insertion_deletion(
        frame, prediction="prediction", similarity=kinds, id="row", attributions=result, **engine.options
    )
    # the same query: equal but for the last bit of the engine's parallel sums, which two calls of the
    # function itself may also differ in (2.2e-16 in 1 of 15 runs of this test on DuckDB)
    for mine, theirs in ((own.abc, called.abc), (own.curves, called.curves)):
        assert_frame_equal(mine, theirs, check_exact=False, rel_tol=1e-13, abs_tol=1e-15)
    if engine.name == "duckdb" and method == "exact":
        loans = cohortsql.datasets.loans()
        baseline = cohortsql.baseline_shapley(
            loans,
            model=cohortsql.datasets.loans_model,
            model_input="polars",
            prediction="score",
            features=["income", "region"],
        )
        similarity = {"income": "abs:15", "region": "exact"}
        tested = baseline.insertion_deletion(loans, similarity=similarity, prediction="score")
        expected = cohortsql.insertion_deletion(loans, prediction="score", similarity=similarity, attributions=baseline)
        assert tested.abc.equals(expected.abc)
