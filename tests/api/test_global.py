"""Shapley effects: two computations that must agree, the grouping-sets path, sampling, group audits."""

import itertools

import numpy as np
import polars as pl
import pytest
import reference

import cohortsql


def window_table(seed, n=120):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, 4))
    y = x[:, 0] + 2 * x[:, 1] * x[:, 2] + rng.normal(scale=0.1, size=n)
    return pl.DataFrame({f"x{j}": x[:, j] for j in range(4)} | {"y": y})


WINDOWS = {"x0": "abs:0.1", "x1": "range:0.15", "x2": "quantile:0.2", "x3": "relative:0.3"}


@pytest.mark.parametrize("seed", [0, 1])
def test_effects_of_v_var_equal_mean_squared_cohort_shapley(seed, engine):
    frame = window_table(seed)
    effects = cohortsql.variance_shapley(frame, prediction="y", similarity=WINDOWS, **engine.options)
    local = cohortsql.cohort_shapley(frame, prediction="y", similarity=WINDOWS, **engine.options)
    np.testing.assert_allclose(effects.effects["shapley_effect"], local.global_["shapley_effect"], atol=1e-10)
    assert effects.explained == pytest.approx(local.totals["value_squared"].mean(), abs=1e-12)
    assert effects.effects["shapley_effect_se"].to_list() == [0.0] * 4  # every row is a target: exact


def test_v_var_by_definition(engine):
    """v_var(u) = (1/n) sum_t (ybar_{t,u} - ybar)^2 with cohorts recomputed from scratch, then Shapley."""
    frame = window_table(3, n=30)
    effects = cohortsql.variance_shapley(
        frame, prediction="y", similarity={"x0": "abs:0.2", "x1": "abs:0.3"}, **engine.options
    )
    x0, x1, y = frame["x0"].to_numpy(), frame["x1"].to_numpy(), frame["y"].to_numpy()
    tests = {0: np.abs(x0[:, None] - x0[None, :]) <= 0.2, 1: np.abs(x1[:, None] - x1[None, :]) <= 0.3}

    def v_var(u):
        members = np.ones((30, 30), dtype=bool)
        for j in u:
            members &= tests[j]
        return np.mean([(y[members[:, t]].mean() - y.mean()) ** 2 for t in range(30)])

    game = {u: v_var(u) for size in range(3) for u in itertools.combinations(range(2), size)}
    phi0 = 0.5 * (game[(0,)] - game[()]) + 0.5 * (game[(0, 1)] - game[(1,)])
    phi1 = 0.5 * (game[(1,)] - game[()]) + 0.5 * (game[(0, 1)] - game[(0,)])
    np.testing.assert_allclose(effects.effects["shapley_effect"], [phi0, phi1], atol=1e-12)
    assert effects.explained == pytest.approx(game[(0, 1)], abs=1e-12)


def test_shares_add_up_to_explained_over_variance():
    frame = window_table(4)
    effects = cohortsql.variance_shapley(frame, prediction="y", similarity=WINDOWS)
    assert effects.variance == pytest.approx(frame["y"].var(ddof=0))
    assert effects.effects["share"].sum() == pytest.approx(effects.explained / effects.variance, abs=1e-12)
    assert effects.explained_share == pytest.approx(effects.explained / effects.variance)


def equivalence_table(seed, n=400):
    rng = np.random.default_rng(seed)
    frame = pl.DataFrame(
        {
            "a": rng.integers(0, 3, n),
            "b": pl.Series(rng.choice(["x", "y", "z", None], n).tolist(), dtype=pl.String),
            "c": rng.uniform(0, 10, n),
            "d": rng.normal(size=n),
        }
    ).with_columns(d=pl.when(pl.Series(rng.uniform(size=n)) < 0.1).then(None).otherwise(pl.col("d")))
    return frame.with_columns(y=pl.col("a") + (pl.col("b") == "x").cast(pl.Float64).fill_null(0.5) + pl.col("c") / 5)


EQUIVALENCES = {"a": "exact", "b": "exact", "c": "bins:4", "d": "bins:3"}


@pytest.mark.parametrize("seed", [0, 1])
def test_grouping_sets_path_equals_pairwise_path(seed, engine):
    frame = equivalence_table(seed)
    explain = lambda path, **options: cohortsql.cohort_shapley(
        frame, prediction="y", similarity=EQUIVALENCES, path=path, **options, **engine.options
    )
    pairwise, grouped = explain("pairwise"), explain("grouping_sets")
    assert (pairwise.path, grouped.path) == ("pairwise", "grouping_sets")
    np.testing.assert_allclose(grouped.shapley, pairwise.shapley, atol=1e-12)
    np.testing.assert_allclose(grouped.shapley_squared, pairwise.shapley_squared, atol=1e-12)
    np.testing.assert_allclose(grouped.totals["cohort_mean"], pairwise.totals["cohort_mean"], atol=1e-12)
    assert grouped.totals["cohort_size"].to_list() == pairwise.totals["cohort_size"].to_list()
    # a few requested targets, as they come
    some = explain("grouping_sets", targets=[5, 3, 77])
    np.testing.assert_allclose(some.shapley, pairwise.shapley[[3, 5, 77]], atol=1e-12)
    effects = {
        path: cohortsql.variance_shapley(frame, prediction="y", similarity=EQUIVALENCES, path=path, **engine.options)
        for path in ("pairwise", "grouping_sets")
    }
    np.testing.assert_allclose(
        effects["grouping_sets"].effects["shapley_effect"], effects["pairwise"].effects["shapley_effect"], atol=1e-10
    )
    assert effects["grouping_sets"].explained == pytest.approx(effects["pairwise"].explained, abs=1e-12)


def test_auto_path_takes_grouping_sets_for_equivalences_with_many_targets():
    frame = equivalence_table(2)
    assert cohortsql.variance_shapley(frame, prediction="y", similarity=EQUIVALENCES).path == "grouping_sets"
    assert cohortsql.cohort_shapley(frame, prediction="y", similarity=EQUIVALENCES, targets=[1]).path == "pairwise"
    assert cohortsql.variance_shapley(frame, prediction="y", similarity={"a": "exact", "c": "abs:1"}).path == "pairwise"


def test_grouping_sets_match_brute_force_on_small_tables(engine):
    frame = equivalence_table(5, n=25)
    result = cohortsql.cohort_shapley(
        frame, prediction="y", similarity=EQUIVALENCES, path="grouping_sets", **engine.options
    )
    kinds = [reference.exact(), reference.exact(), reference.bins(4), reference.bins(3)]
    phi, phi2 = reference.cohort_shapley([frame[c].to_list() for c in "abcd"], kinds, frame["y"].to_list(), range(25))
    np.testing.assert_allclose(result.shapley, phi, atol=1e-12)
    np.testing.assert_allclose(result.shapley_squared, phi2, atol=1e-12)


def test_unused_but_correlated_column_gets_a_value():
    """The model uses only `income`; `zip_code` is never an input but tracks income (redlining)."""
    rng = np.random.default_rng(8)
    n = 300
    zip_code = rng.integers(0, 4, n)
    income = zip_code * 10 + rng.normal(scale=3, size=n)
    frame = pl.DataFrame({"income": income, "zip_code": zip_code, "score": 0.05 * income})
    result = cohortsql.cohort_shapley(
        frame, prediction="score", similarity={"income": "range:0.1", "zip_code": "exact"}
    )
    zip_effect = result.global_.filter(pl.col("feature") == "zip_code")["shapley_effect"].item()
    assert zip_effect > 0.05 * result.variance
    assert np.abs(result.shapley[:, 1]).mean() > 0.05


def test_sampled_standard_errors_are_honest():
    """Over 150 seeds, the sampled effect lies within 1.96 standard errors of the exact one about 95% of the time."""
    frame = window_table(9, n=300)
    similarity = {"x0": "abs:0.1", "x1": "abs:0.2"}
    exact = (
        cohortsql.variance_shapley(frame, prediction="y", similarity=similarity).effects["shapley_effect"].to_numpy()
    )
    covered, total = 0, 0
    for seed in range(150):
        sampled = cohortsql.variance_shapley(frame, prediction="y", similarity=similarity, targets=0.2, seed=seed)
        assert sampled.targets == 60
        estimate = sampled.effects["shapley_effect"].to_numpy()
        error = sampled.effects["shapley_effect_se"].to_numpy()
        assert (error > 0).all()
        covered += int((np.abs(estimate - exact) <= 1.96 * error).sum())
        total += len(estimate)
    assert 0.88 <= covered / total <= 0.99


def test_samples_are_reproducible_and_sized(engine):
    frame = window_table(10)
    first = cohortsql.cohort_shapley(frame, prediction="y", similarity=WINDOWS, targets=25, seed=3, **engine.options)
    second = cohortsql.cohort_shapley(frame, prediction="y", similarity=WINDOWS, targets=25, seed=3)
    assert first.ids.to_list() == second.ids.to_list() and len(first.ids) == 25
    assert first.population == 120
    assert first.global_["shapley_effect_se"].min() > 0


def test_by_groups_any_column(engine):
    frame = equivalence_table(6).with_columns(segment=pl.Series(np.arange(400) % 3))
    result = cohortsql.cohort_shapley(frame, prediction="y", similarity={"a": "exact", "c": "bins:4"}, **engine.options)
    grouped = result.by("segment")  # not a model input
    assert grouped.columns == [
        "segment",
        "feature",
        "targets",
        "shapley",
        "shapley_se",
        "shapley_squared",
        "shapley_squared_se",
    ]
    assert grouped.height == 3 * 2
    values = result.wide().with_columns(segment=frame["segment"])
    for segment in range(3):
        members = values.filter(pl.col("segment") == segment)["a"].to_numpy()
        row = grouped.filter((pl.col("segment") == segment) & (pl.col("feature") == "a")).row(0, named=True)
        assert row["targets"] == len(members)
        assert row["shapley"] == pytest.approx(members.mean())
        assert row["shapley_se"] == pytest.approx(members.std(ddof=1) / np.sqrt(len(members)))
    with pytest.raises(cohortsql.CohortError, match="by\\('nope'\\): no such column"):
        result.by("nope")


def test_result_keeps_the_target_rows(engine):
    frame = equivalence_table(7)
    result = cohortsql.cohort_shapley(frame, prediction="y", similarity=["a"], targets="a = 2", **engine.options)
    assert result.targets.columns == frame.columns
    assert result.targets["a"].to_list() == [2] * len(result.ids)


def test_duplicating_every_row_changes_nothing(engine):
    """Identical subjects are collapsed and identical targets computed once; the answers must not move."""
    frame = window_table(11, n=60)
    doubled = pl.concat([frame, frame])
    once = cohortsql.cohort_shapley(frame, prediction="y", similarity=WINDOWS)
    twice = cohortsql.cohort_shapley(doubled, prediction="y", similarity=WINDOWS, **engine.options)
    np.testing.assert_allclose(twice.shapley, np.vstack([once.shapley, once.shapley]), atol=1e-12)
    np.testing.assert_allclose(twice.totals["cohort_size"], 2 * np.tile(once.totals["cohort_size"], 2))
    effects_once = cohortsql.variance_shapley(frame, prediction="y", similarity=WINDOWS)
    effects_twice = cohortsql.variance_shapley(doubled, prediction="y", similarity=WINDOWS)
    np.testing.assert_allclose(
        effects_twice.effects["shapley_effect"], effects_once.effects["shapley_effect"], atol=1e-12
    )


def wide_table(informative: int = 12, constant: int = 18, rows: int = 200, seed: int = 31) -> pl.DataFrame:
    """`informative` three-level features that drive y, and `constant` features that hold one value:
    every subject is similar to every target on them, so the cohorts, and the effects of the
    informative features, are those of the table without them."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, (rows, informative))
    y = x[:, 0] + 0.5 * x[:, 1] * x[:, 2] + 0.3 * x[:, 3] + rng.normal(scale=0.2, size=rows)
    columns = {f"x{j}": x[:, j] for j in range(informative)} | {f"c{j}": np.zeros(rows) for j in range(constant)}
    return pl.DataFrame(columns | {"y": y})


def test_effects_by_permutation_at_d30_agree_with_exact_effects_at_d12(engine):
    """30 features, 18 of them constant: the same game as its 12 informative features, computed exactly."""
    frame = wide_table()
    informative = {f"x{j}": "exact" for j in range(12)}
    every = informative | {f"c{j}": "exact" for j in range(18)}
    exact = cohortsql.shapley_effects(frame.select(*informative, "y"), prediction="y", similarity=informative)
    with pytest.raises(cohortsql.CohortError, match="at most 24 features .* method='permutation'"):
        cohortsql.shapley_effects(frame, prediction="y", similarity=every)
    estimated = cohortsql.shapley_effects(
        frame, prediction="y", similarity=every, method="auto", seed=4, max_permutations=60, **engine.options
    )
    assert estimated.method == "permutation" and estimated.settings["method"] == "permutation"
    table = estimated.effects.filter(pl.col("feature").is_in(list(informative)))
    error = table["shapley_effect_se"].to_numpy()
    assert (error > 0).all()
    gap = np.abs(table["shapley_effect"].to_numpy() - exact.effects["shapley_effect"].to_numpy())
    assert (gap <= 3 * error).all(), gap / error
    constant = estimated.effects.filter(pl.col("feature").str.starts_with("c"))
    np.testing.assert_allclose(constant["shapley_effect"], 0.0, atol=1e-15)  # it never changes a cohort
    assert estimated.explained == pytest.approx(exact.explained, abs=1e-12)  # each chain ends at v_var(1:d)
    assert estimated.effects["shapley_effect"].sum() == pytest.approx(exact.explained, abs=1e-12)


def test_permutation_effects_average_the_targets_estimates():
    """By linearity the effects are the (weighted) mean of the targets' squared values, for a sample
    of targets, with case weights, for several columns at once."""
    frame = window_table(12, n=80).with_columns(w=pl.Series(np.arange(80) % 3 + 1.0), z=pl.col("y") ** 2)
    options = dict(similarity=WINDOWS, method="permutation", seed=7, max_permutations=20, targets=30, weight="w")
    local = cohortsql.cohort_shapley(frame, prediction=["y", "z"], **options)
    effects = cohortsql.shapley_effects(frame, prediction=["y", "z"], **options)
    for outcome in ("y", "z"):
        weights = local[outcome].weights
        expected = dict(zip(local[outcome].features, weights @ local[outcome].shapley_squared / weights.sum()))
        table = effects[outcome].effects
        np.testing.assert_allclose(table["shapley_effect"], [expected[name] for name in table["feature"]], atol=1e-12)
        assert (effects[outcome].effects["shapley_effect_se"] > 0).all()
    with pytest.raises(cohortsql.CohortError, match="bootstrap intervals need method='exact'"):
        cohortsql.shapley_effects(frame, prediction="y", similarity=WINDOWS, method="permutation", bootstrap=20)


def test_unseeded_permutation_effects_record_the_seed_that_repeats_them():
    frame = window_table(13, n=60)
    options = dict(prediction="y", similarity=WINDOWS, method="permutation", max_permutations=10)
    first = cohortsql.shapley_effects(frame, **options)
    seed = first.settings["seed"]
    again = cohortsql.shapley_effects(frame, **options, seed=seed)
    assert again.effects.equals(first.effects)


def test_targets_that_share_an_estimate_share_its_error():
    """Two targets with one estimate (one group) carry its error with their joint weight, not as two
    independent draws: the standard error is that of one target of weight 2 beside one of weight 1."""
    from cohortsql.results.effects import ShapleyEffects

    common = dict(features=("a",), variance=1.0, subjects=3, population=3, diagnostics={}, settings={})
    shared = ShapleyEffects.from_estimates(
        squared_values=np.array([[0.5], [0.5], [0.2]]),
        distinct_errors=np.array([[0.1], [0.3]]),
        group=np.array([0, 0, 1]),
        target_weights=np.ones(3),
        method="permutation",
        path="pairwise",
        replicate_effects=None,
        confidence=0.95,
        **common,
    )
    expected = np.sqrt((2 / 3 * 0.1) ** 2 + (1 / 3 * 0.3) ** 2)  # every row is a target: no sampling error
    assert shared.effects["shapley_effect_se"][0] == pytest.approx(expected, rel=1e-12)
    assert shared.effects["shapley_effect"][0] == pytest.approx(0.4)


def test_tables_by_importance_keep_the_feature_order_within_rounding_noise():
    """Equal effects that differ by rounding noise (another engine) keep the features' order; a real
    difference reorders them; missing values come last."""
    from cohortsql.formats.tables import by_importance

    table = pl.DataFrame({"feature": list("abcde"), "effect": [0.5, 2.0, 2.0 * (1 + 1e-15), None, 3.0]})
    assert by_importance(table, "effect")["feature"].to_list() == ["e", "b", "c", "a", "d"]
    noisy = table.with_columns(pl.Series("effect", [0.5, 2.0 * (1 + 1e-15), 2.0, float("nan"), 3.0]))
    assert by_importance(noisy, "effect")["feature"].to_list() == ["e", "b", "c", "a", "d"]
    assert by_importance(table.clear(), "effect").height == 0
