"""The null reference beside every share (``null=B``): B copies of a feature with its values permuted
across the rows, each copy's share computed as the feature's own. Held to its definition (the copies'
shares computed one by one through the public API with the permuted columns built here, from the md5
draw the docs give), to its purpose (a proxy of the model's input clears it, an independent column
does not, over 20 seeds), and to every engine giving the same figures."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import polars as pl
import pytest

import cohortsql
from cohortsql.errors import CohortError

KINDS = {"x0": "quantile:0.2", "x1": "quantile:0.2", "x2": "quantile:0.2", "proxy": "exact", "independent": "exact"}


def scored(rows: int, seed: int) -> pl.DataFrame:
    """A model's scores of x0, x1, x2 (it never saw the other columns): `proxy` tracks x0, its main
    input; `independent` is unrelated to everything."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 3)).round(2)
    proxy = (x[:, 0] + rng.normal(scale=0.7, size=rows) > 0).astype(np.int64)
    score = 1.5 * x[:, 0] + x[:, 1] - 0.5 * x[:, 2] + rng.normal(scale=0.1, size=rows)
    return pl.DataFrame(
        {
            "id": np.arange(rows) * 7 + 3,
            "x0": x[:, 0],
            "x1": x[:, 1],
            "x2": x[:, 2],
            "proxy": proxy,
            "independent": rng.integers(0, 2, rows),
            "score": score,
        }
    )


def permuted(frame: pl.DataFrame, column: str, copy: int, seed: int, id: str = "id") -> pl.DataFrame:
    """`column` permuted as copy `copy` of the null reference with `seed`: the row that is r-th in id order
    takes the value of the row that is r-th in the order of md5('<seed>:null:<copy>:' || id), then id."""
    ordered = frame.sort(id)
    ids = ordered[id].to_list()
    drawn = sorted(ids, key=lambda value: (hashlib.md5(f"{seed}:null:{copy}:{value}".encode()).hexdigest(), value))
    values = dict(zip(ordered[id].to_list(), ordered[column].to_list()))
    return frame.with_columns(pl.Series(column, [values[drawn[ids.index(value)]] for value in frame[id].to_list()]))


def share_of(effects: cohortsql.ShapleyEffects, feature: str) -> float:
    return float(effects.effects.filter(pl.col("feature") == feature)["share"].item())


def test_the_null_share_is_the_mean_of_the_copies_shares_through_the_public_api():
    frame = scored(60, 1)
    found = cohortsql.shapley_effects(
        frame, prediction="score", similarity=KINDS, id="id", null=4, null_features=["independent", "proxy"], seed=11
    )
    row = found.effects.filter(pl.col("feature") == "independent").row(0, named=True)
    copies = [
        share_of(
            cohortsql.shapley_effects(
                permuted(frame, "independent", copy, 11), prediction="score", similarity=KINDS, id="id"
            ),
            "independent",
        )
        for copy in range(1, 5)
    ]
    assert row["null_share"] == pytest.approx(np.mean(copies), abs=1e-12)
    np.testing.assert_allclose(found.null.copy_shares[0], copies, atol=1e-12)
    assert row["null_share_high"] == pytest.approx(np.quantile(copies, 0.95), abs=1e-12)
    assert row["p_value"] == (1 + sum(copy >= row["share"] for copy in copies)) / 5
    assert found.effects.filter(pl.col("feature") == "x0")["p_value"].item() is None  # not asked


@pytest.mark.filterwarnings("ignore")
def test_a_proxy_clears_its_null_and_an_independent_column_does_not_over_20_seeds():
    cleared = []
    for seed in range(20):
        found = cohortsql.shapley_effects(
            scored(150, seed),
            prediction="score",
            similarity=KINDS,
            id="id",
            null=19,
            null_features=["proxy", "independent"],
            seed=seed,
        )
        p = dict(zip(found.effects["feature"], found.effects["p_value"]))
        cleared.append((p["proxy"] <= 0.05, p["independent"] <= 0.05))
    assert sum(proxy for proxy, _ in cleared) >= 18
    assert sum(not independent for _, independent in cleared) >= 18


def test_every_engine_gives_the_same_null_figures(engine):
    frame = scored(40, 2)
    found = cohortsql.shapley_effects(
        frame,
        prediction="score",
        similarity=KINDS,
        id="id",
        null=3,
        null_features=["independent"],
        seed=5,
        **engine.options,
    )
    reference = cohortsql.shapley_effects(
        frame, prediction="score", similarity=KINDS, id="id", null=3, null_features=["independent"], seed=5
    )
    np.testing.assert_allclose(found.null.copy_shares, reference.null.copy_shares, atol=1e-12)
    assert found.effects["p_value"].to_list() == reference.effects["p_value"].to_list()


@pytest.mark.parametrize("method", ["permutation", "integrated"])
def test_every_method_gets_a_null_from_its_own_computation(method):
    frame = scored(40, 3)
    options = dict(prediction="score", similarity=KINDS, id="id", method=method, seed=2, max_permutations=20)
    if method == "integrated":
        options.pop("max_permutations")
    found = cohortsql.shapley_effects(frame, null=2, null_features=["independent"], **options)
    copies = [
        share_of(cohortsql.shapley_effects(permuted(frame, "independent", copy, 2), **options), "independent")
        for copy in (1, 2)
    ]
    np.testing.assert_allclose(found.null.copy_shares[0], copies, atol=1e-12)


def test_the_variance_game_and_cohort_shapley_get_it_too():
    frame = scored(50, 4)
    game = cohortsql.game_shapley(
        frame, game="cohort-variance", prediction="score", similarity=KINDS, id="id", null=3, seed=7
    )
    assert set(game.global_.columns) >= {"null_share", "null_share_high", "p_value"}
    copies = [
        cohortsql.game_shapley(
            permuted(frame, "proxy", copy, 7), game="cohort-variance", prediction="score", similarity=KINDS, id="id"
        )
        .global_.filter(pl.col("feature") == "proxy")["share"]
        .item()
        for copy in (1, 2, 3)
    ]
    proxy = game.global_.filter(pl.col("feature") == "proxy").row(0, named=True)
    assert proxy["null_share"] == pytest.approx(np.mean(copies), abs=1e-12)
    values = cohortsql.cohort_shapley(frame, prediction="score", similarity=KINDS, id="id", null=3, seed=7, sample=30)
    effects = cohortsql.shapley_effects(frame, prediction="score", similarity=KINDS, id="id", null=3, seed=7, sample=30)
    np.testing.assert_allclose(
        values.global_.sort("feature")["null_share"], effects.effects.sort("feature")["null_share"], atol=1e-12
    )


def test_the_audit_runs_a_null_by_default_and_names_a_floor_in_words():
    frame = scored(120, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = cohortsql.audit(
            frame,
            prediction="score",
            protected=["proxy", "independent"],
            similarity={"x0": "quantile:0.2", "x1": "quantile:0.2", "x2": "quantile:0.2"},
            id="id",
            bootstrap=10,
            seed=3,
        )
    assert found.cohort.null is not None and found.cohort.null.copies == 19
    p = dict(zip(found.attributes["protected"], found.attributes["p_value"]))
    assert p["proxy"] == 0.05 and p["independent"] > 0.05
    lines = found.summary()
    independent = next(line for line in lines if line.startswith("independent:"))
    proxy = next(line for line in lines if line.startswith("proxy:"))
    assert "indistinguishable from a shuffled copy of itself" in independent
    assert "above its null" in proxy and "indistinguishable" not in proxy
    off = cohortsql.audit(
        frame, prediction="score", protected="proxy", similarity=["x0"], id="id", bootstrap=0, null=0, seed=3
    )
    assert off.cohort.null is None and "p_value" not in off.attributes.columns


@pytest.mark.parametrize(
    ("options", "culprit"),
    [
        ({"null": -1}, "null must be at least 0"),
        ({"null": True}, "null must be a whole number"),
        ({"null": 2.5}, "null must be a whole number"),
        ({"null": 1000}, "null must be at most 999"),
        ({"null": 2, "null_features": ["nope"]}, "null_features names 'nope'"),
        ({"null": 2, "null_features": ["x0", "x0"]}, "names a feature twice"),
        ({"null": 2, "null_features": [3]}, "null_features names features"),
    ],
)
def test_bad_null_options_are_one_error_naming_them(options, culprit):
    with pytest.raises(CohortError, match=culprit):
        cohortsql.shapley_effects(scored(20, 0), prediction="score", similarity=KINDS, id="id", **options)


@pytest.fixture(scope="module")
def redlining_with_a_placebo() -> pl.DataFrame:
    """The redlining table (its model reads zip and income; group tracks zip) and ``placebo``, a column
    unrelated to everything."""
    table = cohortsql.datasets.redlining(rows=300)
    return table.with_columns(placebo=pl.Series(np.random.default_rng(4).integers(0, 2, table.height)))


def test_an_attribute_at_its_floor_is_never_said_like_one_above_it(redlining_with_a_placebo, tmp_path):
    """In the audit's words, its report and the command line: the placebo is indistinguishable from a
    shuffled copy of itself, and the model contrast ("the model's baseline Shapley gives it 0") is said
    only of the attribute that clears its null."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = cohortsql.audit(
            redlining_with_a_placebo,
            prediction="denial",
            protected=["group", "placebo"],
            similarity=["zip", "income"],
            id="id",
            model=cohortsql.datasets.redlining_model,
            model_input="polars",
            bootstrap=10,
            seed=2,
        )
    lines = {line.split(":")[0]: line for line in found.summary() if not line.startswith(" ")}
    assert "above its null" in lines["group"] and "the model's baseline Shapley gives it 0" in lines["group"]
    assert "indistinguishable from a shuffled copy of itself" in lines["placebo"]
    assert "baseline Shapley" not in lines["placebo"]
    report = tmp_path / "audit.html"
    found.report(report)
    html = report.read_text()
    assert "placebo: " in html and "indistinguishable from a shuffled copy of itself" in html
    assert "the model&#x27;s baseline Shapley gives it" in html


def test_the_command_line_marks_a_share_at_its_floor(redlining_with_a_placebo, tmp_path):
    from typer.testing import CliRunner

    from cohortsql.cli import app

    data = tmp_path / "redlining.parquet"
    redlining_with_a_placebo.write_parquet(data)
    common = [str(data), "--prediction", "denial", "--id", "id", "--seed", "2"]
    done = CliRunner().invoke(
        app,
        ["effects", *common, "--features", "zip,income,group,placebo", "--null", "19"]
        + ["--null-features", "group,placebo"],
    )
    assert done.exit_code == 0, done.output
    rows = {line.split()[0]: line for line in done.output.splitlines() if line.split()}
    assert rows["placebo"].rstrip().endswith("= a shuffled copy") and "0.05" in rows["group"]
    assert "shuffled copy" not in rows["group"]
    audit = CliRunner().invoke(
        app, ["audit", *common, "--features", "zip,income", "--protected", "group,placebo", "--bootstrap", "5"]
    )
    assert audit.exit_code == 0, audit.output
    assert "placebo: " in audit.output and "indistinguishable from a shuffled copy of itself" in audit.output


def test_the_effects_report_draws_each_floor_and_says_what_it_is(redlining_with_a_placebo, tmp_path):
    effects = cohortsql.shapley_effects(
        redlining_with_a_placebo,
        prediction="denial",
        similarity=["zip", "income", "group", "placebo"],
        id="id",
        null=5,
        null_features=["placebo"],
        seed=1,
    )
    path = tmp_path / "effects.html"
    effects.report(path)
    html = path.read_text()
    assert html.count('class="floor"') == 1 and "floor (shuffled copies)" in html and "indistinguishable" in html


@pytest.mark.parametrize("call", ["effects", "cohort_shapley", "audit"])
def test_the_copies_of_one_pass_equal_the_copies_run_one_by_one(call, monkeypatch):
    """A cohort run's copies come from one pass of the exact pairwise driver (every copy a mask bit, each
    copy's game a reduction of the players); with that pass turned off each copy is the run again: the
    same shares, with weights, groups and a sample of targets."""
    from cohortsql.run import null_copies

    frame = scored(70, 6).with_columns(w=pl.Series(np.random.default_rng(1).uniform(0.5, 2.0, 70)))
    options = dict(id="id", weight="w", null=3, seed=9, sample=50)
    if call == "effects":
        run = lambda: (
            cohortsql.shapley_effects(  # noqa: E731
                frame, prediction="score", similarity=KINDS, groups={"pair": ["x1", "x2"]}, **options
            ).null
        )
    elif call == "cohort_shapley":
        run = lambda: cohortsql.cohort_shapley(frame, prediction="score", similarity=KINDS, **options).null  # noqa: E731
    else:
        run = lambda: (
            cohortsql.audit(  # noqa: E731
                frame,
                prediction="score",
                protected=["proxy", "independent"],
                similarity=["x0", "x1"],
                bootstrap=0,
                **options,
            ).cohort.null
        )
    together = run()
    monkeypatch.setattr(null_copies, "ONE_PASS_ROWS", 0)
    alone = run()
    assert together.players == alone.players
    np.testing.assert_allclose(together.copy_shares, alone.copy_shares, atol=1e-12)
