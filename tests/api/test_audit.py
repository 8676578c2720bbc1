"""`cohortsql.audit` against its definitions: on a synthetic lending table whose model never sees the
protected attribute but reads a zip code that tracks it (`cohortsql.datasets.redlining`), every number
of the audit is recomputed by brute force (cohorts found by their definition, Shapley and interaction
values by their formulas) and against the library's other functions."""

import itertools
import math
import re
import warnings

import numpy as np
import polars as pl
import pytest
from oracles import anchored_shapley_values
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app
from cohortsql.numeric.bootstrap import bias_corrected_interval

FEATURES = ["zip", "income", "group"]
"""The audit's features: the model's inputs, then the protected attribute."""
AUDIT = {"prediction": "denial", "protected": "group", "similarity": ["zip", "income"], "id": "id", "null": 0}
"""The audit of the lending table: its model's inputs as the similarity, its group as protected (its
null reference is tested in test_null.py: here, every other part of the audit on every engine)."""


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    return cohortsql.datasets.redlining()


def brute_force(table: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every target's cohort Shapley values of v and of v^2 (targets, d) and interaction values in
    shap's convention (targets, d, d), from v(u) = mean of y over the rows equal to the target on u,
    less the mean."""
    y = table["denial"].to_numpy()
    columns = [table[name].to_numpy() for name in FEATURES]
    d = len(FEATURES)
    values, squared, interactions = [], [], []
    for row in range(table.height):
        same = [column == column[row] for column in columns]
        game = np.empty(1 << d)
        for u in range(1 << d):
            cohort = np.ones(len(y), dtype=bool)
            for j in range(d):
                if u >> j & 1:
                    cohort &= same[j]
            game[u] = y[cohort].mean() - y.mean()
        phi = anchored_shapley_values(game)
        pairs = np.zeros((d, d))
        for i, k in itertools.combinations(range(d), 2):
            rest = [j for j in range(d) if j not in (i, k)]
            index = 0.0
            for size in range(len(rest) + 1):
                weight = math.factorial(size) * math.factorial(d - size - 2) / math.factorial(d - 1)
                for chosen in itertools.combinations(rest, size):
                    s = sum(1 << j for j in chosen)
                    index += weight * (game[s | 1 << i | 1 << k] - game[s | 1 << i] - game[s | 1 << k] + game[s])
            pairs[i, k] = pairs[k, i] = index / 2
        np.fill_diagonal(pairs, phi - pairs.sum(axis=1))
        values.append(phi)
        squared.append(anchored_shapley_values(game**2))
        interactions.append(pairs)
    return np.array(values), np.array(squared), np.array(interactions)


def test_the_audit_equals_its_definitions(table, engine):
    found = cohortsql.audit(table, **AUDIT, bootstrap=30, seed=3, **engine.options)
    phi, phi_squared, interactions = brute_force(table)
    group = table["group"].to_numpy()
    y = table["denial"].to_numpy()
    a = FEATURES.index("group")
    assert found.cohort.features == tuple(FEATURES)
    np.testing.assert_allclose(found.cohort.shapley, phi, atol=1e-12)
    # share: the attribute's Shapley effect over the variance, as shapley_effects gives it (every row a target)
    effects = cohortsql.shapley_effects(table, prediction="denial", similarity=FEATURES, id="id", **engine.options)
    attribute = found.attributes.row(0, named=True)
    expected = effects.effects.filter(pl.col("feature") == "group").row(0, named=True)
    assert attribute["share"] == pytest.approx(expected["share"], abs=1e-9)
    effect = np.mean(phi_squared[:, a])  # the Shapley effect: the mean Shapley value of v^2
    assert attribute["effect"] == pytest.approx(effect, abs=1e-12)
    assert attribute["rank"] == 1 + int(np.sum(np.mean(phi_squared, axis=0) > effect + 1e-12))
    assert attribute["share_ci_low"] <= attribute["share"] <= attribute["share_ci_high"]
    groups = found.groups.sort("level")
    assert groups["level"].to_list() == ["a", "b"] and groups["grouping"].unique().to_list() == ["level"]
    draws = exponential_draws(table["id"].to_list(), 30, 3)
    for row in groups.iter_rows(named=True):
        members = group == row["level"]
        assert row["count"] == row["rows"] == members.sum()
        assert row["value"] == pytest.approx(phi[members, a].mean(), abs=1e-9)
        assert row["gap"] == pytest.approx(y[members].mean() - y.mean(), abs=1e-9)
        # the gap's replicates reweigh every row by the run's own draws, on every engine
        replicate_gaps = replicate_means(draws[members], y[members]) - replicate_means(draws, y)
        low, high = bias_corrected_interval(replicate_gaps, row["gap"], 0.95, 0)
        assert (row["gap_ci_low"], row["gap_ci_high"]) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
        assert row["share_of_gap"] == pytest.approx(row["value"] / row["gap"], abs=1e-9)
        assert row["value_alone"] == pytest.approx(interactions[members, a, a].mean(), abs=1e-9)
        assert row["value_ci_low"] <= row["value"] <= row["value_ci_high"]
        proxies = found.proxies.filter(pl.col("level") == row["level"])
        for proxy in proxies.iter_rows(named=True):
            k = FEATURES.index(proxy["feature"])
            assert proxy["interaction"] == pytest.approx(interactions[members, a, k].mean(), abs=1e-9)
        # the attribute's value is its main term plus its interactions
        assert row["value"] == pytest.approx(row["value_alone"] + proxies["interaction"].sum(), abs=1e-9)
    reference = groups.filter(pl.col("count") == groups["count"].max()).row(0, named=True)
    assert groups["reference"].unique().to_list() == [reference["level"]]
    b = groups.filter(pl.col("level") == "b").row(0, named=True)
    assert b["difference"] == pytest.approx(b["value"] - reference["value"], abs=1e-12)
    assert b["difference_ci_low"] <= b["difference"] <= b["difference_ci_high"]


def test_the_proxy_is_found_and_its_sign_reads_as_documented(table):
    """Zip carries what group says: once zip is in the cohort, group adds little, so for group b (whose
    cohort mean group alone raises) Phi(group, zip) is negative, for group a positive, and it is the
    strongest of each level; income, independent of group, barely interacts with it."""
    found = cohortsql.audit(table, **AUDIT, bootstrap=0)
    for level, sign in (("a", -1), ("b", 1)):
        value = found.groups.filter(pl.col("level") == level)["value"][0]
        proxies = found.proxies.filter(pl.col("level") == level)
        assert np.sign(value) == sign
        assert proxies["feature"][0] == "zip" and np.sign(proxies["interaction"][0]) == -sign
        assert abs(proxies.filter(pl.col("feature") == "income")["interaction"][0]) < 0.01 * abs(value)
    assert "value_ci_low" not in found.groups.columns and "share_ci_low" not in found.attributes.columns


def test_a_model_that_never_reads_the_attribute_gets_zero_from_the_baseline_methods(table):
    found = cohortsql.audit(
        table,
        **AUDIT,
        bootstrap=10,
        seed=1,
        model=cohortsql.datasets.redlining_model,
        model_input="polars",
        model_targets=40,
        baseline_sample=10,
    )
    attribute = found.attributes.row(0, named=True)
    assert attribute["share"] > 0.1  # cohort Shapley credits it through the zip code
    assert attribute["baseline_mean_abs"] == pytest.approx(0.0, abs=1e-12)
    assert attribute["all_baseline_mean_abs"] == pytest.approx(0.0, abs=1e-12)
    assert "the model's baseline Shapley gives it 0 on average (all-baseline 0)" in found.summary()[0]


def test_numbers_are_read_in_quantile_groups_of_the_targets(table):
    draws = np.random.default_rng(5)
    aged = table.with_columns(age=pl.Series(np.round(draws.normal(45, 12, table.height))))
    found = cohortsql.audit(aged, **(AUDIT | {"protected": ["group", "age"]}), bootstrap=0)
    ages = found.groups.filter(pl.col("protected") == "age")
    assert ages["grouping"].unique().to_list() == ["quantile group"] and ages.height == 4
    assert ages["count"].sum() == table.height
    a = found.cohort.features.index("age")
    values = aged["age"].to_numpy()
    for row in ages.iter_rows(named=True):
        low, high = (float(part) for part in row["level"].strip("[])").split(", "))
        inside = (values >= low) & ((values <= high) if row["level"].endswith("]") else (values < high))
        assert row["count"] == inside.sum()
        assert row["value"] == pytest.approx(found.cohort.shapley[inside, a].mean(), abs=1e-12)
    assert found.attributes["protected"].to_list() == ["group", "age"]


def test_a_numeric_attribute_is_grouped_by_the_callers_edges_or_quantiles(table, tmp_path):
    """``protected_bins``: the caller's edges (under 30, 30 to 50, 50 and over: every target in the
    group its value falls in, NaN missing, infinities in the end groups) or a number of quantile
    groups; the same from the command line. It could only be split in quartiles of the targets."""
    draws = np.random.default_rng(5)
    ages = np.round(draws.normal(45, 12, table.height))
    ages[:3] = [np.nan, -np.inf, np.inf]
    aged = table.with_columns(age=pl.Series(ages))
    options = AUDIT | {"protected": ["group", "age"], "bootstrap": 0}
    options["similarity"] = {"zip": "exact", "income": "exact", "age": "exact"}
    found = cohortsql.audit(aged, **options, protected_bins={"age": [30, 50]})
    groups = found.groups.filter(pl.col("protected") == "age")
    assert groups["grouping"].unique().to_list() == ["bins"]
    assert groups["label"].to_list() == ["< 30", "[30, 50)", ">= 50", "missing"]
    a = found.cohort.features.index("age")
    values = aged["age"].to_numpy()
    expected = [values < 30, (values >= 30) & (values < 50), values >= 50, np.isnan(values)]
    for row, inside in zip(groups.iter_rows(named=True), expected):
        assert row["count"] == inside.sum()
        assert row["value"] == pytest.approx(found.cohort.shapley[inside, a].mean(), abs=1e-12)
    assert "  age < 30: " in "\n".join(found.summary()) and "  age in [30, 50): " in "\n".join(found.summary())
    deciles = cohortsql.audit(aged, **options, protected_bins={"age": 10}).groups.filter(pl.col("protected") == "age")
    assert deciles["grouping"][0] == "quantile group" and deciles.height == 11  # and the missing ages
    aged.write_parquet(tmp_path / "aged.parquet")
    common = [str(tmp_path / "aged.parquet"), "--prediction", "denial", "--protected", "group", "--protected", "age"]
    common += ["--similar", "*=exact", "--id", "id", "--bootstrap", "0"]
    done = CliRunner().invoke(app, ["audit", *common, "--protected-bins", "age=30,50"])
    assert done.exit_code == 0, done.output
    assert "  age < 30: " in done.output and "  age >= 50: " in done.output
    refused = {
        ("--protected-bins", "age=young"): "neither numbers separated by commas nor quantiles:N",
        ("--protected-bins", "age=50,30"): "edges must be finite and increasing",
        ("--protected-bins", "aeg=30"): "protected_bins names 'aeg', which is not a protected attribute",
        ("--protected-bins", "age=quantiles:1"): "must be at least 2",
    }
    for flags, message in refused.items():
        done = CliRunner().invoke(app, ["audit", *common, *flags])
        assert done.exit_code == 2 and message in done.output, done.output
    with pytest.raises(cohortsql.CohortError, match="edges for 'group', which holds"):
        cohortsql.audit(aged, **options, protected_bins={"group": [1]})


def test_the_audit_refuses_in_words(table):
    options = {"prediction": "denial", "similarity": ["zip", "income"], "id": "id", "bootstrap": 0}
    with pytest.raises(cohortsql.CohortError, match="'race' is not in the data"):
        cohortsql.audit(table, protected="race", **options)
    with pytest.raises(cohortsql.CohortError, match="protected names the protected attribute"):
        cohortsql.audit(table, protected=[], **options)
    with pytest.raises(cohortsql.CohortError, match="protected names a column twice"):
        cohortsql.audit(table, protected=["group", "group"], **options)
    with pytest.raises(cohortsql.CohortError, match="unknown argument 'interactions'"):
        cohortsql.audit(table, protected="group", interactions=True, **options)


def test_the_polars_namespace_audits_the_frame(table):
    options = {"prediction": "denial", "protected": "group", "similarity": ["zip", "income"], "bootstrap": 0}
    assert table.cohort.audit(**options).groups.equals(cohortsql.audit(table, **options).groups)


def test_the_command_line_prints_the_audit_in_words_and_writes_its_report(table, tmp_path, browser):
    from selenium.webdriver.common.by import By

    data = tmp_path / "lending.parquet"
    table.write_parquet(data)
    report = tmp_path / "audit.html"
    arguments = ["audit", str(data), "--prediction", "denial", "--protected", "group", "--features", "zip,income"]
    arguments += [
        "--id",
        "id",
        "--bootstrap",
        "30",
        "--seed",
        "3",
        "--report",
        str(report),
        "--out",
        str(tmp_path / "a.parquet"),
    ]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, result.output
    found = cohortsql.audit(table, **AUDIT, bootstrap=30, seed=3)
    share = found.attributes["share"][0]
    assert f"group: {100 * share:.1f}% of the variance explained (" in result.output
    b = found.groups.filter(pl.col("level") == "b").row(0, named=True)
    assert (
        f"group = 'b': {b['value']:+.4g} on average, {100 * b['share_of_gap']:.1f}%"
        f" ({100 * b['share_of_gap_ci_low']:.1f}% to {100 * b['share_of_gap_ci_high']:.1f}%) of the group's gap"
        in result.output
    )
    # the same numbers to rounding: DuckDB's threads may add a replicate's sums in another order
    assert_frame_equal(
        pl.read_parquet(tmp_path / "a_groups.parquet"), found.groups, check_exact=False, rel_tol=1e-9, abs_tol=1e-12
    )
    browser.get(report.as_uri())
    assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []
    section = browser.find_element(By.ID, "audit")
    assert section.is_displayed() and "of the variance explained" in section.text
    assert len(section.find_elements(By.CSS_SELECTOR, "svg circle")) == 2  # each group's value, with its interval
    assert len(section.find_elements(By.CSS_SELECTOR, "svg line.whisker")) == 2
    rows = section.find_elements(By.CSS_SELECTOR, "table tbody tr")
    assert [row.text.split()[:2] for row in rows] == [["group", "'a'"], ["group", "'b'"]]
    assert "with zip" in section.text


def test_the_audit_has_a_dry_run_and_states_its_defaults(table, tmp_path):
    """``audit --dry-run`` plans the audit's own run (the protected attribute among the features,
    200 replicates unless told) and writes nothing; the help states the defaults it runs with."""
    from cohortsql.request.options import AUDIT_BASELINES as BASELINES
    from cohortsql.request.options import AUDIT_REPLICATES as BOOTSTRAP

    data = tmp_path / "lending.parquet"
    table.write_parquet(data)
    out = tmp_path / "a.parquet"
    arguments = ["audit", str(data), "--prediction", "denial", "--protected", "group", "--features", "zip,income"]
    result = CliRunner().invoke(app, [*arguments, "--id", "id", "--dry-run", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"3 features, exact method (8 cohorts per target), {BOOTSTRAP} bootstrap replicates" in result.output
    assert "estimate: about" in result.output and not out.exists()
    plan = cohortsql.estimate_audit(table, **AUDIT)
    assert (plan.features, plan.replicates) == (3, BOOTSTRAP)
    shown = " ".join(CliRunner().invoke(app, ["audit", "--help"], terminal_width=200).output.split())
    assert f"by default {BOOTSTRAP} Bayesian-bootstrap replicates" in shown and f"{BASELINES} baselines" in shown
    assert "--dry-run" in shown


def test_a_level_holding_every_target_has_no_share_of_a_gap(table):
    """One level (every target in it): its gap is rounding noise around 0 (3.9e-16), whose 'share'
    read -4.8%; it is missing, and the summary says no share."""
    found = cohortsql.audit(
        table.with_columns(everyone=pl.lit("x")), **(AUDIT | {"protected": "everyone"}), bootstrap=5, seed=1
    )
    row = found.groups.row(0, named=True)
    assert row["count"] == table.height and abs(row["gap"]) < 1e-12 and row["share_of_gap"] is None
    assert found.summary()[1] == "  everyone = 'x': 0 on average (600 targets)"


def test_a_star_gives_the_protected_attribute_its_kind(table):
    """``{"*": "exact"}`` gives every column not named otherwise, the protected one included, its kind:
    the audit's values are `cohort_shapley`'s under the same similarity (not a default window)."""
    frame = table.with_columns(score=pl.col("income").replace_strict({"low": 1.0, "mid": 2.5, "high": 4.0}) * 1.1)
    found = cohortsql.audit(
        frame.select("id", "zip", "score", "denial"),
        prediction="denial",
        protected="score",
        similarity={"*": "exact"},
        id="id",
        bootstrap=0,
    )
    direct = cohortsql.cohort_shapley(
        frame.select("id", "zip", "score", "denial"), prediction="denial", similarity={"*": "exact"}, id="id"
    )
    assert str(found.cohort.kinds["score"]) == "exact"
    order = [direct.features.index(feature) for feature in found.cohort.features]
    np.testing.assert_allclose(found.cohort.shapley, direct.shapley[:, order], atol=1e-12)


def test_an_audit_of_several_predictions_is_one_error_naming_them(table):
    with pytest.raises(cohortsql.CohortError, match=r"one prediction column, got \['denial', 'denial2'\]"):
        cohortsql.audit(
            table.with_columns(denial2=pl.col("denial") * 2),
            prediction=["denial", "denial2"],
            protected="group",
            similarity=["zip"],
            id="id",
        )


def test_the_share_interval_is_of_the_share_itself():
    """Two rows, each feature telling them apart: every reweighting splits the variance in halves, so
    the share's interval is [1/2, 1/2] (an effect's interval over the estimate's variance read
    [0.072, 0.499], excluding its own estimate)."""
    two = pl.DataFrame({"id": [1, 2], "g": ["a", "b"], "x": [0, 1], "p": [0.0, 1.0]})
    found = cohortsql.audit(two, prediction="p", protected="g", similarity=["x"], id="id", bootstrap=50, seed=1)
    row = found.attributes.row(0, named=True)
    assert row["share"] == pytest.approx(0.5, abs=1e-12)
    assert row["share_ci_low"] == pytest.approx(0.5, abs=1e-9) and row["share_ci_high"] == pytest.approx(0.5, abs=1e-9)
    assert "50.0% of the variance explained (50.0% to 50.0%)" in found.summary()[0]
    assert found.summary()[1].endswith("(1 target: too few to read alone, under 30)")


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda frame: frame.with_columns(group=pl.lit("a")), "group: 0% of the variance explained (0% to 0%)"),
        (lambda frame: frame.with_columns(denial=pl.lit(0.5)), "group: no variance to explain"),
        (lambda frame: frame.head(1), "group: no variance to explain"),
    ],
    ids=["one level", "a constant prediction", "one row"],
)
def test_degenerate_audits_say_so_in_words(table, change, expected):
    found = cohortsql.audit(change(table), **AUDIT, bootstrap=5, seed=1)
    first = found.summary()[0]
    assert first.startswith(expected), first
    assert "nan" not in " ".join(found.summary()) and "e-" not in first


@pytest.mark.parametrize("scale", [1e-13, 1e-7, 1e9])
def test_the_audit_reads_the_same_at_any_scale(table, scale):
    """Multiplying the prediction by any c > 0 multiplies every value by c and changes no share, rank
    or word: nothing is cut at an absolute size (values of 3e-14 once printed as 0, and at 1e-7 the
    ranks fell back to the features' order)."""
    plain = cohortsql.audit(table, **AUDIT, bootstrap=10, seed=2)
    scaled = cohortsql.audit(table.with_columns(denial=pl.col("denial") * scale), **AUDIT, bootstrap=10, seed=2)
    assert scaled.attributes["rank"].to_list() == plain.attributes["rank"].to_list()
    np.testing.assert_allclose(scaled.attributes["share"], plain.attributes["share"], rtol=1e-9)
    np.testing.assert_allclose(scaled.groups["value"], scale * plain.groups["value"], rtol=1e-9)

    def words(lines):  # the values' digits differ by the scale's: compare what is said, not the digits
        return [re.sub(r"[+-]?\d[\d.]*(e[+-]?\d+)?", "#", line) for line in lines]

    assert words(scaled.summary()) == words(plain.summary())
    assert "0 on average" not in " ".join(scaled.summary())
    effects = cohortsql.shapley_effects(table, prediction="denial", similarity=FEATURES, id="id")
    scaled_effects = cohortsql.shapley_effects(
        table.with_columns(denial=pl.col("denial") * scale), prediction="denial", similarity=FEATURES, id="id"
    )
    assert scaled_effects.effects["feature"].to_list() == effects.effects["feature"].to_list()


def test_a_share_of_a_gap_that_may_be_zero_is_not_given_and_small_groups_are_flagged():
    """Titanic's shipped model audited for the number of siblings aboard: the 36 passengers with two
    have a gap of +0.013 whose interval spans 0, against a value of -0.025, which read as "-186% of the
    group's gap"; the share is now left out with the reason, and groups under 30 targets are flagged."""
    from pathlib import Path

    titanic = pl.read_parquet(Path(__file__).parents[2] / "examples/data/titanic_predictions.parquet")
    titanic = titanic.with_row_index("id").with_columns(pl.col("sibsp").cast(pl.String))
    similarity = {"pclass": "exact", "sex": "exact", "age": "abs:5"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cohortsql.CohortWarning)
        found = cohortsql.audit(
            titanic, prediction="prediction", protected="sibsp", similarity=similarity, id="id", bootstrap=50, seed=1
        )
    two = found.groups.filter(pl.col("level") == "2").row(0, named=True)
    assert two["count"] == 36 and two["gap_ci_low"] < 0 < two["gap_ci_high"] and two["share_of_gap"] is None
    one = found.groups.filter(pl.col("level") == "1").row(0, named=True)
    assert one["gap_ci_low"] > 0 and one["share_of_gap"] == pytest.approx(one["value"] / one["gap"])
    words = {line.split(":")[0].strip(): line for line in found.summary()}
    assert "may be 0, so no share of it is given (36 targets)" in words["sibsp = '2'"]
    assert words["sibsp = '8'"].endswith("(1 target: too few to read alone, under 30)")


def exponential_draws(ids: list[int], replicates: int, seed: int) -> np.ndarray:
    """The Bayesian-bootstrap draws e_b(id), (ids, replicates), from their definition in
    ``sql/replicate_draws.sql``: md5('<seed>:<g>:<id>'), g = (b - 1) div 4, its 32-bit part
    (b - 1) mod 4 read little-endian as U = (part + 1/2) / 2^32, and e = -ln(U)."""
    import hashlib

    draws = np.empty((len(ids), replicates))
    for row, identifier in enumerate(ids):
        for replicate in range(replicates):
            digest = hashlib.md5(f"{seed}:{replicate // 4}:{identifier}".encode()).digest()
            part = int.from_bytes(digest[4 * (replicate % 4) : 4 * (replicate % 4) + 4], "little")
            draws[row, replicate] = -math.log((part + 0.5) / 2.0**32)
    return draws


def replicate_means(draws: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each replicate's mean of `y` with the rows weighed by their draws (rows, replicates)."""
    return (draws * y[:, None]).sum(axis=0) / draws.sum(axis=0)


def test_a_sampled_audit_reads_its_groups_sizes_and_gaps_over_every_row():
    """Titanic's shipped model audited on 150 sampled passengers: each group's value is the mean over its
    sampled targets, but its size in rows and its gap (its mean prediction less the mean) are over all
    1,046 rows, which hold a prediction each; the gap's interval comes from every row reweighed by the
    run's own draws, so that the share of the gap has an interval paired with the value's."""
    from pathlib import Path

    titanic = pl.read_parquet(Path(__file__).parents[2] / "examples/data/titanic_predictions.parquet")
    titanic = titanic.with_row_index("id").with_columns(pl.col("id").cast(pl.Int64))
    similarity = {"pclass": "exact", "sibsp": "exact", "parch": "exact"}
    replicates, seed = 24, 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cohortsql.CohortWarning)
        found = cohortsql.audit(
            titanic,
            prediction="prediction",
            protected=["sex", "age"],
            similarity=similarity,
            id="id",
            sample=150,
            bootstrap=replicates,
            seed=seed,
            protected_bins={"age": (18.0, 60.0)},
        )
    assert len(found.cohort.ids) == 150
    y = titanic["prediction"].to_numpy()
    draws = exponential_draws(titanic["id"].to_list(), replicates, seed)
    ages = titanic["age"].to_numpy()
    members = {
        ("sex", "'female'"): titanic["sex"].to_numpy() == "female",
        ("sex", "'male'"): titanic["sex"].to_numpy() == "male",
        ("age", "< 18"): ages < 18,
        ("age", "[18, 60)"): (ages >= 18) & (ages < 60),
        ("age", ">= 60"): ages >= 60,
    }
    sampled = titanic.filter(pl.col("id").is_in(found.cohort.ids.to_list()))
    assert found.groups.height == len(members)
    for row in found.groups.iter_rows(named=True):
        rows = members[(row["protected"], row["label"])]
        targets = rows[sampled["id"].to_numpy()]
        assert row["rows"] == rows.sum() and row["count"] == targets.sum() < row["rows"]
        assert row["gap"] == pytest.approx(y[rows].mean() - y.mean(), abs=1e-12)
        replicate_gaps = replicate_means(draws[rows], y[rows]) - replicate_means(draws, y)
        low, high = bias_corrected_interval(replicate_gaps, row["gap"], 0.95, 0)
        assert (row["gap_ci_low"], row["gap_ci_high"]) == (
            pytest.approx(low, abs=1e-12),
            pytest.approx(high, abs=1e-12),
        )
        if row["share_of_gap"] is not None:
            assert row["share_of_gap"] == pytest.approx(row["value"] / row["gap"], abs=1e-12)
            assert row["share_of_gap_ci_low"] <= row["share_of_gap"] <= row["share_of_gap_ci_high"]
        else:
            assert row["gap_ci_low"] <= 0 <= row["gap_ci_high"] and row["share_of_gap_ci_low"] is None
    words = {line.split(":")[0].strip(): line for line in found.summary()}
    females = members[("sex", "'female'")]
    assert f"of {females.sum():,} rows" in words["sex = 'female'"]


def test_an_audit_reads_a_stream_once(table):
    """A RecordBatchReader can be scanned once: the groups' gaps over every row and the fairness metrics
    are read in the cohort run's own session, not by opening the data again."""
    import pyarrow as pa

    options = dict(AUDIT, bootstrap=8, seed=2, sample=120, threshold=0.5)
    arrow = table.to_arrow()
    streamed = cohortsql.audit(pa.RecordBatchReader.from_batches(arrow.schema, arrow.to_batches()), **options)
    direct = cohortsql.audit(table, **options)
    assert_frame_equal(streamed.groups, direct.groups, check_exact=False, rel_tol=1e-12, abs_tol=1e-14)
    assert streamed.fairness is not None and direct.fairness is not None
    assert_frame_equal(streamed.fairness.groups, direct.fairness.groups, check_exact=False, rel_tol=1e-12)


def test_an_audit_with_a_model_reads_a_stream_too(table):
    """With a model, the model's baseline games read the rows again: a stream is read into memory once."""
    import pyarrow as pa

    options = dict(AUDIT, bootstrap=4, seed=2, model=cohortsql.datasets.redlining_model, model_input="polars")
    arrow = table.to_arrow()
    streamed = cohortsql.audit(pa.RecordBatchReader.from_batches(arrow.schema, arrow.to_batches()), **options)
    direct = cohortsql.audit(table, **options)
    assert_frame_equal(streamed.attributes, direct.attributes, check_exact=False, rel_tol=1e-12, abs_tol=1e-14)


def test_a_group_line_gives_the_gap_in_units_and_the_intervals_caveat_once(table):
    """A share of a group's gap names the gap it is a share of, in the explained column's units; with the
    decisions' fairness beside the audit, the intervals are explained once, at the end."""
    found = cohortsql.audit(table, **dict(AUDIT, bootstrap=8, seed=2, sample=120, threshold=0.5))
    lines = found.summary()
    b = found.groups.filter(pl.col("level") == "b").row(0, named=True)
    line = next(line for line in lines if line.startswith("  group = 'b'"))
    assert f"of the group's gap of {b['gap']:+.4g} in denial" in line, line
    assert [line.startswith("(intervals:") for line in lines].count(True) == 1
    assert lines[-1].startswith("(intervals:") and "replicates" in lines[-1]
