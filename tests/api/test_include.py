"""``include=``: chosen ids explained beside a random sample of targets (``--target-ids`` beside
``--sample``). On Titanic with its shipped model's predictions, the included passengers get exactly
the values a run of them alone gives, while every average over targets (effects, their standard
errors and intervals, the audit's groups) stays the sample's, as if they had not been asked for."""

import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app

TITANIC = Path(__file__).parents[2] / "examples/data/titanic_predictions.parquet"
SIMILARITY = {"pclass": "exact", "sex": "exact", "age": "abs:5", "sibsp": "exact"}
CHOSEN = [5, 300, 900]
"""Passengers asked for by id; the sample of 120 (seed 4) draws none of them."""


@pytest.fixture(scope="module")
def titanic() -> pl.DataFrame:
    return pl.read_parquet(TITANIC).with_row_index("id").with_columns(pl.col("id").cast(pl.Int64))


def quietly(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cohortsql.CohortWarning)
        return function(*args, **kwargs)


def test_included_ids_are_explained_and_count_in_no_average(titanic, tmp_path):
    options = dict(prediction="prediction", similarity=SIMILARITY, id="id", sample=120, seed=4, bootstrap=20)
    sampled = quietly(cohortsql.cohort_shapley, titanic, **options)
    assert not set(CHOSEN) & set(sampled.ids.to_list())
    both = quietly(cohortsql.cohort_shapley, titanic, **options, include=CHOSEN)
    alone = quietly(
        cohortsql.cohort_shapley, titanic, prediction="prediction", similarity=SIMILARITY, id="id", targets=CHOSEN
    )
    assert sorted(both.ids.to_list()) == sorted(sampled.ids.to_list() + CHOSEN)
    rows = [both.ids.to_list().index(value) for value in alone.ids.to_list()]
    np.testing.assert_allclose(both.shapley[rows], alone.shapley, atol=1e-12)
    kept = np.array([value not in CHOSEN for value in both.ids.to_list()])
    np.testing.assert_allclose(both.shapley[kept], sampled.shapley, atol=1e-12)
    # every average is the sample's: effects, standard errors (T = 120) and bootstrap intervals
    assert_frame_equal(both.global_, sampled.global_, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)
    assert both.totals["in_sample"].to_list() == kept.tolist() and "in_sample" not in sampled.totals.columns
    assert both.target_variance == pytest.approx(sampled.target_variance, rel=1e-12)
    # a report of the chosen ids: their pages, and the effects said to be the sample's
    both.report(tmp_path / "r.html", targets=CHOSEN)
    page = (tmp_path / "r.html").read_text()
    assert "estimated from a random sample of 120 targets (with its standard error); 3 more asked for" in page
    assert "Mean |cohort Shapley value| per feature over the 120 targets of the sample." in page
    assert all(f'id="target-{value}"' in page for value in CHOSEN)


def test_an_audit_samples_and_keeps_the_chosen_ids(titanic, tmp_path):
    options = dict(
        prediction="prediction",
        protected="sex",
        similarity=["pclass", "age"],
        id="id",
        sample=120,
        seed=4,
        bootstrap=20,
    )
    sampled = quietly(cohortsql.audit, titanic, **options)
    both = quietly(cohortsql.audit, titanic, **options, include=CHOSEN)
    assert set(CHOSEN) <= set(both.cohort.ids.to_list())
    assert_frame_equal(both.groups, sampled.groups, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)
    assert_frame_equal(both.attributes, sampled.attributes, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)
    both.report(tmp_path / "audit.html", targets=CHOSEN)  # was: "report targets [...] are not targets of this result"
    assert "over this run's 120 randomly sampled targets" in (tmp_path / "audit.html").read_text()


def test_the_command_line_takes_target_ids_beside_a_sample(titanic, tmp_path):
    data = tmp_path / "titanic.parquet"
    titanic.write_parquet(data)
    common = [str(data), "--prediction", "prediction", "--features", "pclass,sex,sibsp", "--id", "id"]
    sample = ["--sample", "50", "--seed", "4", "--target-ids", ",".join(map(str, CHOSEN))]
    result = CliRunner().invoke(app, ["shapley", *common, *sample, "--out", str(tmp_path / "v.parquet")])
    assert result.exit_code == 0, result.output
    written = pl.read_parquet(tmp_path / "v.parquet")
    assert set(CHOSEN) <= set(written["id"].to_list()) and written["id"].n_unique() == 50 + len(CHOSEN)
    assert "53 targets (50 of a random sample, averaged; 3 more asked for beside it) x 3 features" in result.output
    refused = CliRunner().invoke(app, ["effects", *common, *sample])
    assert refused.exit_code != 0 and "only commands that show each target's values do" in refused.output


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"include": CHOSEN}, "include= adds ids to a random sample (sample=)"),
        ({"include": [5, 99999], "sample": 10}, "include ids not found in the id column 'id': 99999"),
        ({"include": 5, "sample": 10}, "include takes a list of ids, got 5"),
        ({"include": [], "sample": 10}, "include is an empty list"),
        ({"targets": CHOSEN, "sample": 10}, "to explain chosen ids beside a sample, give them as include="),
    ],
)
def test_include_refuses_in_words(titanic, options, message):
    with pytest.raises(cohortsql.CohortError, match=message.replace("(", r"\(").replace(")", r"\)")):
        quietly(cohortsql.cohort_shapley, titanic, prediction="prediction", similarity=SIMILARITY, id="id", **options)


def test_effects_take_no_include(titanic):
    with pytest.raises(cohortsql.CohortError, match="unknown argument 'include'"):
        cohortsql.shapley_effects(titanic, prediction="prediction", similarity=SIMILARITY, sample=10, include=CHOSEN)


def test_an_included_id_of_a_level_the_sample_lacks_makes_no_group(titanic):
    """Passenger 957 is the only one with 8 siblings aboard; included beside a sample that did not draw
    it, it gets its values but no group of its own (a group of no sampled target has no mean), and the
    quantile groups of a number are the sample's: the audit's tables are the sample-only audit's."""
    frame = titanic.with_columns(pl.col("sibsp").cast(pl.String))
    assert frame.filter(pl.col("sibsp") == "8")["id"].to_list() == [957]
    options = dict(
        prediction="prediction",
        protected=["sibsp", "age"],
        similarity={"pclass": "exact", "sex": "exact"},
        id="id",
        sample=50,
        seed=3,
        bootstrap=10,
    )
    sampled = quietly(cohortsql.audit, frame, **options)
    assert 957 not in sampled.cohort.ids.to_list()
    both = quietly(cohortsql.audit, frame, **options, include=[957])
    assert 957 in both.cohort.ids.to_list()
    assert_frame_equal(both.groups, sampled.groups, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)
    assert_frame_equal(both.proxies, sampled.proxies, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)
    assert any(line.startswith("  sibsp = '4'") for line in both.summary())


def test_by_groups_the_sampled_targets_only(titanic):
    """`by` averages over the targets that count: passenger 957 (8 siblings aboard), included beside a
    sample that did not draw it, makes no group of its own, and every group is the sample-only run's."""
    frame = titanic.with_columns(pl.col("sibsp").cast(pl.String))
    options = dict(prediction="prediction", similarity={"pclass": "exact", "sex": "exact"}, id="id", sample=50, seed=3)
    sampled = quietly(cohortsql.cohort_shapley, frame, **options, bootstrap=10)
    both = quietly(cohortsql.cohort_shapley, frame, **options, bootstrap=10, include=[957])
    assert "8" not in both.by("sibsp")["sibsp"].to_list()
    assert_frame_equal(both.by("sibsp"), sampled.by("sibsp"), check_exact=False, rel_tol=1e-12, abs_tol=1e-15)


def test_include_on_every_engine(engine, titanic):
    """Every engine draws the same sample, reads the included ids beside it and gives them weight 0:
    values, effects and their intervals equal DuckDB's."""
    options = dict(
        prediction="prediction", similarity=SIMILARITY, id="id", sample=60, seed=4, bootstrap=8, include=CHOSEN
    )
    found = quietly(cohortsql.cohort_shapley, titanic, **options, **engine.options)
    reference = quietly(cohortsql.cohort_shapley, titanic, **options)
    assert found.ids.to_list() == reference.ids.to_list() and set(CHOSEN) <= set(found.ids.to_list())
    np.testing.assert_allclose(found.shapley, reference.shapley, atol=1e-9)
    assert found.totals["in_sample"].to_list() == reference.totals["in_sample"].to_list()
    assert_frame_equal(found.global_, reference.global_, check_exact=False, rel_tol=1e-9, abs_tol=1e-12)
