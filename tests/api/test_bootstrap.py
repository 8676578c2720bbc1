"""Bayesian-bootstrap intervals: the draws, the replicates (true reweighted runs, the same on every
engine and path), the intervals' coverage on a population with known effects, and paired group
differences."""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import polars as pl
import pytest
from draws import draws, evaluated
from typer.testing import CliRunner

import cohortsql
from cohortsql import queries
from cohortsql.cli import app
from cohortsql.engines.duckdb import DuckDBEngine
from cohortsql.numeric import bootstrap
from cohortsql.request import arguments as arguments_module
from cohortsql.run import pairwise, preparation, replicates
from cohortsql.run.replicates import weigh_replicates

SIMILARITY = {"a": "exact", "b": "bins:3"}


def table(seed: int, rows: int = 60) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, rows)
    b = rng.uniform(0, 1, rows)
    y = a + 2 * b + rng.normal(scale=0.5, size=rows)
    return pl.DataFrame(
        {"id": np.arange(rows), "a": a, "b": b, "c": rng.normal(size=rows), "y": y, "z": (y > 2).astype(float)}
    )


def quietly(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cohortsql.CohortWarning)
        return function(*args, **kwargs)


def test_the_draws_are_exponential_independent_and_the_same_on_every_engine(engine):
    values = draws(engine, range(400), range(1, 6), seed=5)
    assert values.min() > 0
    assert values.mean() == pytest.approx(1.0, abs=0.06)  # 2,000 Exp(1) draws: standard error 0.022
    assert values.var() == pytest.approx(1.0, abs=0.2)
    correlations = np.corrcoef(values.T)[np.triu_indices(5, 1)]
    assert np.abs(correlations).max() < 0.15  # 400 pairs: standard error 0.05
    reference = draws(type(engine)("duckdb"), range(400), range(1, 6), seed=5)
    np.testing.assert_allclose(values, reference, rtol=1e-15)
    with engine.open() as running:
        dialect = running.dialect
    hashes = evaluated(  # a hash group given by a column hashes the same text as a literal group
        engine,
        range(5),
        {
            "literal": queries.measures.draw_hash(3, 5, dialect),
            "column": queries.measures.draw_hash("(1 + 2)", 5, dialect),
        },
    )
    assert list(hashes["literal"]) == list(hashes["column"])


def test_a_replicate_is_the_run_weighted_by_its_draws(engine):
    data = table(1, rows=40).with_columns(w=pl.Series(np.random.default_rng(2).integers(1, 4, 40)))
    similarity = {"a": "exact", "b": "abs:0.2", "c": "abs:0.5"}
    result = quietly(
        cohortsql.cohort_shapley,
        data,
        prediction="y",
        similarity=similarity,
        id="id",
        weight="w",
        bootstrap=4,
        seed=9,
        **engine.options,
    )
    assert result.bootstrap is not None and result.bootstrap.shapley is not None
    drawn = draws(engine, range(40), range(1, 5), seed=9)
    for replicate in range(4):
        reweighted = data.with_columns(w=pl.col("w") * pl.Series(drawn[:, replicate]))
        direct = quietly(
            cohortsql.cohort_shapley, reweighted, prediction="y", similarity=similarity, id="id", weight="w"
        )
        np.testing.assert_allclose(result.bootstrap.shapley[:, replicate], direct.shapley, atol=2e-6)  # float32
        np.testing.assert_allclose(result.bootstrap.target_weights[:, replicate], reweighted["w"], rtol=1e-12)
    unweighted = quietly(
        cohortsql.cohort_shapley, data, prediction="y", similarity=similarity, id="id", weight="w", **engine.options
    )
    np.testing.assert_allclose(result.shapley, unweighted.shapley, atol=1e-12)  # replicate 0 is the estimate


def test_replicates_agree_across_engines_paths_and_runs(engine):
    data = table(3)
    options = dict(prediction=["y", "z"], similarity=SIMILARITY, id="id", bootstrap=30, seed=4)
    pairwise = quietly(cohortsql.cohort_shapley, data, path="pairwise", **options, **engine.options)
    lattice = quietly(cohortsql.cohort_shapley, data, path="grouping_sets", **options, **engine.options)
    again = quietly(cohortsql.cohort_shapley, data, path="pairwise", **options)
    for outcome in ("y", "z"):
        for other in (lattice, again):
            for table_of, column in (
                (lambda r: r.local, "shapley_ci_low"),
                (lambda r: r.global_, "shapley_effect_ci_high"),
            ):
                np.testing.assert_allclose(
                    table_of(pairwise[outcome])[column], table_of(other[outcome])[column], atol=1e-10
                )
    effects = [
        quietly(cohortsql.shapley_effects, data, path=path, **options, **engine.options)
        for path in ("pairwise", "grouping_sets")
    ]
    for column in ("shapley_effect", "shapley_effect_ci_low", "shapley_effect_ci_high"):
        np.testing.assert_allclose(effects[0].effects[column], effects[1].effects[column], atol=1e-10)


@pytest.mark.parametrize("collapsed", [False, True])
def test_replicates_in_a_row_per_group_equal_a_column_per_replicate(engine, monkeypatch, collapsed):
    data = table(6, rows=50).with_columns(w=pl.Series(np.random.default_rng(3).integers(1, 4, 50)))
    if collapsed:  # repeated predictor rows are collapsed before the join
        data = data.with_columns(pl.col("b").round(1), pl.col("c").round(0))
    options = dict(
        prediction=["y", "z"],
        similarity={"a": "exact", "b": "abs:0.2", "c": "abs:0.5"},
        id="id",
        weight="w",
        bootstrap=10,  # groups of four: the last group holds two replicates
        seed=8,
        path="pairwise",
        **engine.options,
    )
    wide = quietly(cohortsql.cohort_shapley, data, **options)
    monkeypatch.setattr(replicates, "ENGINE_SUM_BYTES", preparation.ENGINE_MEMORY_BYTES)  # any sums are too many
    called = []
    monkeypatch.setattr(pairwise, "weigh_replicates", lambda *args: called.append(1) or weigh_replicates(*args))
    long = quietly(cohortsql.cohort_shapley, data, **options)
    assert called
    for outcome in ("y", "z"):
        first, second = wide[outcome], long[outcome]
        for name in ("shapley", "shapley_squared", "cohort_size", "cohort_mean"):
            np.testing.assert_allclose(getattr(second, name), getattr(first, name), rtol=1e-12, atol=1e-12)
        for name in ("shapley_low", "shapley_high", "shapley_squared_high", "effects", "target_weights", "shapley"):
            np.testing.assert_allclose(
                getattr(second.bootstrap, name), getattr(first.bootstrap, name), rtol=1e-6, atol=1e-12
            )


def test_no_query_grows_with_the_replicates_under_a_memory_limit(monkeypatch):
    """20,000 replicates under memory_limit=200MB peaked at 2.5 GB before DuckDB ran out of memory: every
    query summed a column per replicate. Now their queries are as wide for 4,000 replicates as for 40."""
    longest = {}
    for method in ("fetch_arrow", "fetch_few_rows", "create"):
        original = getattr(DuckDBEngine, method)

        def recorded(self, select, *args, _original=original, **kwargs):
            longest[drawn] = max(longest.get(drawn, 0), len(select))
            return _original(self, select, *args, **kwargs)

        monkeypatch.setattr(DuckDBEngine, method, recorded)
    data = table(9, rows=30)
    for drawn in (40, 4000):
        options = dict(prediction="y", similarity={"a": "exact", "b": "abs:0.2"}, bootstrap=drawn, seed=2)
        result = quietly(
            cohortsql.cohort_shapley,
            data,
            id="id",
            path="pairwise",
            engine=cohortsql.DuckDB(memory_limit="20MB"),
            **options,
        )
        assert result.bootstrap.shapley_low.shape == (30, 2)
    assert longest[4000] == longest[40]


def test_intervals_surround_the_estimates_and_narrow_with_more_data():
    small = quietly(
        cohortsql.shapley_effects, table(5, rows=80), prediction="y", similarity=SIMILARITY, bootstrap=200, seed=1
    )
    large = quietly(
        cohortsql.shapley_effects, table(5, rows=800), prediction="y", similarity=SIMILARITY, bootstrap=200, seed=1
    )
    for effects in (small.effects, large.effects):
        assert (effects["shapley_effect_ci_low"] <= effects["shapley_effect"]).all()
        assert (effects["shapley_effect"] <= effects["shapley_effect_ci_high"]).all()
    widths = [
        (e["shapley_effect_ci_high"] - e["shapley_effect_ci_low"]).to_numpy() for e in (small.effects, large.effects)
    ]
    assert (widths[1] < widths[0]).all()
    local = quietly(
        cohortsql.cohort_shapley, table(5, rows=80), prediction="y", similarity=SIMILARITY, bootstrap=200, seed=1
    ).local
    assert (local["shapley_ci_low"] <= local["shapley_ci_high"]).all()
    assert local.select(pl.col("^shapley.*$").is_nan().any()).row(0) == (False,) * 6


def test_effect_intervals_cover_the_population_value():
    """1,000 replicates on each of 100 samples from a population whose Shapley effects are known
    (computed on the whole population): the 95% intervals cover them in 90-99% of the samples."""
    rng = np.random.default_rng(5)
    size = 200_000
    a, b = rng.integers(0, 2, size), rng.integers(0, 2, size)
    y = a + 0.5 * b + 0.7 * a * b + rng.normal(size=size)
    population = pl.DataFrame({"a": a, "b": b, "y": y})
    similarity = {"a": "exact", "b": "exact"}
    truth = cohortsql.shapley_effects(population, prediction="y", similarity=similarity).effects.sort("feature")
    covered = []
    for repeat in range(100):
        sample = population.sample(300, seed=repeat)
        effects = cohortsql.shapley_effects(sample, prediction="y", similarity=similarity, bootstrap=1000, seed=repeat)
        ordered = effects.effects.sort("feature")  # a sample may rank the features otherwise
        low, high = ordered["shapley_effect_ci_low"], ordered["shapley_effect_ci_high"]
        covered.append(((low <= truth["shapley_effect"]) & (truth["shapley_effect"] <= high)).to_numpy())
    coverage = np.mean(covered, axis=0)
    assert ((0.90 <= coverage) & (coverage <= 0.99)).all(), coverage


def test_group_differences_are_paired_replicate_by_replicate(engine):
    data = table(6, rows=90).with_columns(group=pl.Series(np.random.default_rng(1).integers(0, 3, 90)))
    result = quietly(
        cohortsql.cohort_shapley,
        data,
        prediction="y",
        similarity=SIMILARITY,
        id="id",
        bootstrap=50,
        seed=2,
        **engine.options,
    )
    table_by = result.by("group", reference=1)
    assert table_by.columns[:3] == ["group", "feature", "targets"]
    replicates = result.bootstrap
    groups = data["group"].to_numpy()
    for group in (0, 2):
        for index, feature in enumerate(SIMILARITY):
            differences = []
            for replicate in range(50):
                weights, values = replicates.target_weights[:, replicate], replicates.shapley[:, replicate, index]
                means = [np.average(values[groups == g], weights=weights[groups == g]) for g in (group, 1)]
                differences.append(means[0] - means[1])
            row = table_by.filter((pl.col("group") == group) & (pl.col("feature") == feature)).row(0, named=True)
            estimate = result.shapley[:, index]
            difference = estimate[groups == group].mean() - estimate[groups == 1].mean()
            assert row["shapley_difference"] == pytest.approx(difference)
            # the percentile interval of the paired differences, shifted by their bootstrap bias
            bias = np.mean(differences) - difference
            low, high = np.quantile(differences, [0.025, 0.975]) - bias
            assert row["shapley_difference_ci_low"] == pytest.approx(low, abs=1e-5)
            assert row["shapley_difference_ci_high"] == pytest.approx(high, abs=1e-5)
    reference_rows = table_by.filter(pl.col("group") == 1)
    assert (reference_rows["shapley_difference"] == 0).all()
    with pytest.raises(cohortsql.CohortError, match=r"reference=7\): no such group; the groups are \[0, 1, 2\]"):
        result.by("group", reference=7)


def test_by_without_kept_replicates_says_why(monkeypatch):
    monkeypatch.setattr(bootstrap, "KEEP_REPLICATES_BYTES", 10)
    result = quietly(cohortsql.cohort_shapley, table(7), prediction="y", similarity=SIMILARITY, bootstrap=20, seed=1)
    assert result.bootstrap.shapley is None
    assert "shapley_ci_low" in result.local.columns  # the intervals themselves do not need them
    with pytest.raises(cohortsql.CohortError, match=r"by\('a'\) intervals need each target's replicate values"):
        result.by("a")


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(bootstrap=1), "bootstrap=1 gives no interval"),
        (dict(bootstrap=-3), "bootstrap must be at least 0"),
        (dict(bootstrap=20, confidence=1.5), "confidence must be a number between 0 and 1"),
        (dict(bootstrap=20, method="permutation"), "bootstrap intervals need method='exact'"),
        # a billion replicates of 40 rows took the machine's 24 GB and were killed; an audit of 9,000 stopped
        # the process (DuckDB's SIGFPE from 16,384 sums in one aggregate)
        (dict(bootstrap=8_001), "bootstrap must be at most 8,000 replicates .* got 8,001"),
    ],
)
def test_bootstrap_arguments_are_checked(arguments, message):
    with pytest.raises(cohortsql.CohortError, match=message):
        cohortsql.cohort_shapley(table(8), prediction="y", similarity=SIMILARITY, **arguments)


def test_the_most_replicates_are_refused_alike_by_the_audit_and_the_command_line(tmp_path):
    with pytest.raises(cohortsql.CohortError, match="bootstrap must be at most 8,000 replicates"):
        cohortsql.audit(table(8), prediction="y", protected="a", similarity=SIMILARITY, bootstrap=9_000)
    table(8).write_parquet(tmp_path / "rows.parquet")
    arguments = ["shapley", str(tmp_path / "rows.parquet"), "--prediction", "y", "--features", "a,b"]
    done = CliRunner().invoke(app, [*arguments, "--bootstrap", "20000"])
    assert done.exit_code == 2 and "bootstrap must be at most 8,000 replicates" in done.output
    assert arguments_module.bootstrap_arguments(8_000, 0.95) == (8_000, 0.95)


WIDE_REPLICATES = textwrap.dedent(
    """
    import warnings
    import numpy as np, polars as pl
    import cohortsql

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(8)
    a, b = rng.integers(0, 3, 30), rng.uniform(0, 1, 30)
    frame = pl.DataFrame({"a": a, "b": b, "y": a + b, "y2": a - b, "y3": a * b})
    options = dict(prediction=["y", "y2", "y3"], similarity={"a": "exact", "b": "bins:3"}, seed=1, interactions=True)
    found = cohortsql.cohort_shapley(frame, bootstrap=4_100, **options)
    assert np.allclose(found["y"].shapley, cohortsql.cohort_shapley(frame, **options)["y"].shapley, atol=1e-12)
    print(found["y"].interactions is not None, found["y3"].bootstrap is not None)
    """
)


def test_interactions_of_many_replicates_and_outcomes_take_a_row_per_group_of_replicates():
    """Interactions (the dense path) of 3 outcomes x 4,100 replicates queried 16,404 sums, a column per
    weighting and outcome, whatever the memory: DuckDB stopped the process (SIGFPE in its hash
    aggregate). The dense path now reads subjects in a row per group of four replicates where the
    pairwise path does (`replicates.long_replicates`), and beyond `MOST_QUERY_SUMS` whatever the memory."""
    done = subprocess.run([sys.executable, "-c", WIDE_REPLICATES], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "True"]


def test_the_seed_of_a_bootstrap_is_recorded():
    result = quietly(cohortsql.cohort_shapley, table(9), prediction="y", similarity=SIMILARITY, bootstrap=10)
    seed = result.settings["seed"]
    assert result.bootstrap.seed == seed and result.settings["bootstrap"] == 10
    again = quietly(cohortsql.cohort_shapley, table(9), prediction="y", similarity=SIMILARITY, bootstrap=10, seed=seed)
    np.testing.assert_allclose(again.bootstrap.shapley_low, result.bootstrap.shapley_low)


def test_effect_intervals_hold_their_estimates_on_a_real_fit():
    """Titanic's shipped model, exact ages: most cohorts on all five features are one or two passengers,
    so the replicates of a squared quantity sit above it; the plain percentile interval of age was
    [0.01276, 0.01536] around an effect of 0.01146, and of sex [0.04428, 0.04917] around 0.04948. The
    bias-corrected interval holds each estimate, and keeps the percentile interval's width."""
    from pathlib import Path

    titanic = pl.read_parquet(Path(__file__).parents[2] / "examples/data/titanic_predictions.parquet").with_row_index(
        "id"
    )
    similarity = {"pclass": "exact", "sex": "exact", "age": "exact", "sibsp": "exact", "parch": "exact"}
    effects = quietly(
        cohortsql.shapley_effects,
        titanic,
        prediction="prediction",
        similarity=similarity,
        id="id",
        bootstrap=100,
        seed=1,
    ).effects
    low, estimate, high = (
        effects[name].to_numpy() for name in ("shapley_effect_ci_low", "shapley_effect", "shapley_effect_ci_high")
    )
    assert ((low <= estimate) & (estimate <= high)).all(), effects
    age = effects.filter(pl.col("feature") == "age").row(0, named=True)
    assert age["shapley_effect_ci_high"] - age["shapley_effect_ci_low"] == pytest.approx(0.01536 - 0.01276, abs=2e-5)
