"""`cohortsql.fairness` against fairlearn's `MetricFrame` and metric functions on Titanic with its
shipped model's predictions, on every engine, and refusing what it cannot read in words."""

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app

fairlearn_metrics = pytest.importorskip("fairlearn.metrics", reason="fairlearn is a test-only peer (dev extra)")

DATA = Path(__file__).parents[2] / "examples/data/titanic_predictions.parquet"
RATES = {
    "selection_rate": fairlearn_metrics.selection_rate,
    "true_positive_rate": fairlearn_metrics.true_positive_rate,
    "false_positive_rate": fairlearn_metrics.false_positive_rate,
}
BETWEEN = {
    "demographic_parity_difference": fairlearn_metrics.demographic_parity_difference,
    "demographic_parity_ratio": fairlearn_metrics.demographic_parity_ratio,
    "equalized_odds_difference": fairlearn_metrics.equalized_odds_difference,
}


@pytest.fixture(scope="module")
def titanic() -> pl.DataFrame:
    """A real model's scores of real passengers, the outcome they had, and a case weight."""
    table = pl.read_parquet(DATA).with_row_index("passenger")
    return table.with_columns(
        survived=(pl.col("survived") == "survived").cast(pl.Int64),
        weight=1.0 + (pl.col("passenger") % 5).cast(pl.Float64) / 2,
    )


def fairlearn_frame(table: pl.DataFrame, protected: str, threshold: float, weight: str | None):
    y_true = table["survived"].to_numpy()
    y_pred = (table["prediction"].to_numpy() >= threshold).astype(int)
    params = None if weight is None else {name: {"sample_weight": table[weight].to_numpy()} for name in RATES}
    frame = fairlearn_metrics.MetricFrame(
        metrics=RATES,
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=table[protected].to_numpy(),
        sample_params=params,
    )
    weights = {} if weight is None else {"sample_weight": table[weight].to_numpy()}
    between = {
        name: function(y_true, y_pred, sensitive_features=table[protected].to_numpy(), **weights)
        for name, function in BETWEEN.items()
    }
    return frame.by_group, between


@pytest.mark.parametrize("weight", [None, "weight"])
def test_the_metrics_equal_fairlearns_metric_frame(titanic, weight):
    """Every group's rates and every metric between groups equal fairlearn's to 1e-12, unweighted and
    with case weights, for a text attribute (sex) and one with three levels (pclass)."""
    found = cohortsql.fairness(
        titanic,
        prediction="prediction",
        protected=["sex", "pclass"],
        threshold=0.5,
        observed="survived",
        weight=weight,
        bootstrap=0,
    )
    for name in ("sex", "pclass"):
        by_group, between = fairlearn_frame(titanic, name, 0.5, weight)
        groups = found.groups.filter(pl.col("protected") == name)
        assert groups["level"].to_list() == [str(level) for level in by_group.index]
        for rate in RATES:
            np.testing.assert_allclose(groups[rate].to_numpy(), by_group[rate].to_numpy(), rtol=0, atol=1e-12)
        metrics = found.metrics.filter(pl.col("protected") == name)
        assert metrics["metric"].to_list() == list(BETWEEN)
        np.testing.assert_allclose(metrics["value"].to_numpy(), list(between.values()), rtol=0, atol=1e-12)
        assert groups["rows"].to_list() == titanic.group_by(name).len().sort(name)["len"].to_list()


def test_every_engine_counts_the_same_cells(titanic, engine):
    """DuckDB, Spark and PostgreSQL count the same cells, so every number and every interval (drawn from
    the cells with the seed) is the same; every interval holds its estimate."""
    options = dict(prediction="prediction", protected="sex", threshold=0.5, observed="survived", bootstrap=50, seed=4)
    here = cohortsql.fairness(titanic, **options)
    there = cohortsql.fairness(titanic, **options, **engine.options)
    for mine, theirs in ((here.groups, there.groups), (here.metrics, there.metrics)):
        assert mine.columns == theirs.columns
        for column in mine.columns:
            if mine[column].dtype.is_float():
                np.testing.assert_allclose(theirs[column].to_numpy(), mine[column].to_numpy(), rtol=0, atol=1e-12)
            else:
                assert theirs[column].to_list() == mine[column].to_list()
    for rate in RATES:
        assert (here.groups[f"{rate}_ci_low"] <= here.groups[rate]).all()
        assert (here.groups[rate] <= here.groups[f"{rate}_ci_high"]).all()
    assert (
        (here.metrics["ci_low"] <= here.metrics["value"]) & (here.metrics["value"] <= here.metrics["ci_high"])
    ).all()


def test_decisions_without_a_threshold_and_booleans(titanic):
    """A 0/1 decision column (or booleans) needs no threshold; the outcome may be booleans; without an
    outcome only selection rates and demographic parity are given."""
    decided = titanic.with_columns(
        approved=(pl.col("prediction") >= 0.5), survived_flag=pl.col("survived").cast(pl.Boolean)
    )
    as_booleans = cohortsql.fairness(
        decided, prediction="approved", protected="sex", observed="survived_flag", bootstrap=0
    )
    as_scores = cohortsql.fairness(
        decided, prediction="prediction", protected="sex", threshold=0.5, observed="survived", bootstrap=0
    )
    assert as_booleans.groups.equals(as_scores.groups) and as_booleans.metrics.equals(as_scores.metrics)
    alone = cohortsql.fairness(
        decided.with_columns(pl.col("approved").cast(pl.Int8)), prediction="approved", protected="sex", bootstrap=0
    )
    assert alone.metrics["metric"].to_list() == ["demographic_parity_difference", "demographic_parity_ratio"]
    assert "true_positive_rate" not in alone.groups.columns


def test_groups_follow_the_cohorts_equality_and_the_callers_bins(titanic):
    """A numeric attribute: NaN and NULL are missing, -0.0 is 0.0 (as in `audit`), quartiles of the
    rows by default or the caller's edges (``protected_bins``); the text 'null' is a level of its own."""
    values = np.array([np.nan, -0.0, 0.0, np.inf, 5.0] * (titanic.height // 5) + [1.0] * (titanic.height % 5))
    marked = titanic.with_columns(
        score=pl.Series(values),
        tag=pl.when(pl.col("passenger") % 3 == 0)
        .then(pl.lit("null"))
        .when(pl.col("passenger") % 3 == 1)
        .then(None)
        .otherwise(pl.lit("x")),
    )
    found = cohortsql.fairness(
        marked,
        prediction="prediction",
        protected=["score", "tag"],
        threshold=0.5,
        bootstrap=0,
        protected_bins={"score": [1.0]},
    )
    scores = found.groups.filter(pl.col("protected") == "score")
    assert scores["label"].to_list() == ["< 1", ">= 1", "missing"]
    assert scores["rows"].to_list() == [int((values < 1).sum()), int((values >= 1).sum()), int(np.isnan(values).sum())]
    tags = found.groups.filter(pl.col("protected") == "tag")
    assert tags["label"].to_list() == ["'null'", "'x'", "missing"]
    assert tags["rows"].to_list() == [
        len(range(0, titanic.height, 3)),
        len(range(2, titanic.height, 3)),
        len(range(1, titanic.height, 3)),
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"threshold": None}, "prediction column 'prediction' holds values other than 0 and 1"),
        ({"threshold": float("nan")}, "threshold must be a finite number"),
        ({"observed": "pclass"}, "observed column 'pclass' holds text values"),
        ({"observed": "age"}, "observed column 'age' holds values other than 0 and 1"),
        ({"observed": "survivd"}, "observed column 'survivd' is not in the data"),
        ({"protected_bins": {"sexx": 3}}, "protected_bins names 'sexx', which is not a protected attribute"),
        ({"protected": "sexx"}, "'sexx'"),
        ({"bootstrap": -1}, "bootstrap"),
    ],
)
def test_what_cannot_be_read_is_refused_in_words(titanic, change, message):
    options = dict(prediction="prediction", protected="sex", threshold=0.5, observed="survived", bootstrap=0) | change
    with pytest.raises(cohortsql.CohortError, match=message):
        cohortsql.fairness(titanic, **options)
    if change == {"threshold": None}:  # Python's spelling of the option
        with pytest.raises(cohortsql.CohortError, match=r"selected \(threshold=\)"):
            cohortsql.fairness(titanic, **options)


def test_the_command_line_prints_the_metrics_and_writes_both_tables(titanic, tmp_path):
    titanic.write_parquet(tmp_path / "titanic.parquet")
    common = [str(tmp_path / "titanic.parquet"), "--prediction", "prediction", "--protected", "sex"]
    done = CliRunner().invoke(
        app,
        [
            "fairness",
            *common,
            "--threshold",
            "0.5",
            "--observed",
            "survived",
            "--seed",
            "1",
            "--out",
            str(tmp_path / "fair.parquet"),
        ],
    )
    assert done.exit_code == 0, done.output
    assert "sex: demographic-parity difference 0.8916 (" in done.output and "sex = 'female': 94.3% (" in done.output
    assert pl.read_parquet(tmp_path / "fair_metrics.parquet")["metric"].to_list() == list(BETWEEN)
    refused = CliRunner().invoke(app, ["fairness", *common])
    assert refused.exit_code == 2 and "selected (--threshold)" in refused.output, refused.output
    hostile = titanic.rename({"sex": 'se"x; DROP', "survived": "out come"})
    hostile.write_parquet(tmp_path / "hostile.parquet")
    named = CliRunner().invoke(
        app,
        [
            "fairness",
            str(tmp_path / "hostile.parquet"),
            "--prediction",
            "prediction",
            "--protected",
            'se"x; DROP',
            "--threshold",
            "0.5",
            "--observed",
            "out come",
            "--bootstrap",
            "0",
        ],
    )
    assert named.exit_code == 0 and """se"x; DROP = 'female': 94.3% selected""" in named.output, named.output


def test_the_audit_gives_the_fairness_metrics_beside_it(tmp_path, browser):
    """``audit(..., threshold=, observed=)``: the same metrics as `fairness` with the audit's replicates
    and seed, in its words, its files (``--out`` writes ``_fairness`` and ``_metrics``) and its report."""
    table = cohortsql.datasets.redlining().with_columns(repaid=(pl.col("id") % 3 != 0).cast(pl.Int64))
    options = dict(prediction="denial", protected="group", bootstrap=20, seed=2)
    found = cohortsql.audit(table, similarity=["zip", "income"], id="id", threshold=0.5, observed="repaid", **options)
    alone = cohortsql.fairness(table, threshold=0.5, observed="repaid", **options)
    assert found.fairness is not None
    assert found.fairness.groups.equals(alone.groups) and found.fairness.metrics.equals(alone.metrics)
    words = "\n".join(found.summary())
    assert "fairness of the decisions (denial >= 0.5; observed outcome repaid), over every row:" in words
    assert "group: demographic-parity difference" in words and "equalized-odds difference" in words
    assert cohortsql.audit(table, similarity=["zip", "income"], id="id", **options).fairness is None
    table.write_parquet(tmp_path / "loans.parquet")
    arguments = ["audit", str(tmp_path / "loans.parquet"), "--prediction", "denial", "--protected", "group"]
    arguments += ["--features", "zip,income", "--id", "id", "--bootstrap", "20", "--seed", "2"]
    arguments += ["--threshold", "0.5", "--observed", "repaid", "--out", str(tmp_path / "audit.parquet")]
    arguments += ["--report", str(tmp_path / "audit.html")]
    done = CliRunner().invoke(app, arguments)
    assert done.exit_code == 0, done.output
    assert "fairness of the decisions (denial >= 0.5; observed outcome repaid)" in done.output
    assert pl.read_parquet(tmp_path / "audit_metrics.parquet").equals(alone.metrics)
    assert (
        pl.read_parquet(tmp_path / "audit_fairness.parquet")["selection_rate"].to_list()
        == alone.groups["selection_rate"].to_list()
    )
    browser.get((tmp_path / "audit.html").as_uri())
    section = browser.find_element("id", "audit").text
    assert "Fairness of the decisions (denial >= 0.5; observed outcome repaid), over every row" in section
    assert "group = 'b'" in section and "true positive rate" in section


def test_every_interval_lies_between_0_and_1():
    """A group of four rows, one selected: the bias correction carried the selection rate's lower end
    to -0.016 (in 158 of 300 seeds); rates, their differences and ratio lie in [0, 1], and so do their
    intervals."""
    rows = pl.DataFrame({"g": ["a"] * 501 + ["b"] * 4, "p": [0.0] * 500 + [1.0] + [0.0] * 3 + [1.0]})
    found = cohortsql.fairness(rows, prediction="p", protected="g", threshold=0.5, bootstrap=200, seed=1)
    groups = found.groups
    assert (groups["selection_rate_ci_low"] >= 0).all() and (groups["selection_rate_ci_high"] <= 1).all(), groups
    assert (found.metrics["ci_low"] >= 0).all() and (found.metrics["ci_high"] <= 1).all(), found.metrics
    assert (found.groups["selection_rate_ci_low"] <= found.groups["selection_rate"]).all()


def test_the_audit_refuses_a_bad_threshold_before_its_run(monkeypatch):
    """threshold= and observed= of an audit were checked by the fairness call after the cohort run (a
    sampled audit can take minutes): they are checked before it now."""
    import cohortsql.api.audit as audit_module

    def never(*arguments, **options):
        raise AssertionError("the cohort run started")

    monkeypatch.setattr(audit_module, "cohort_shapley_and", never)
    table = cohortsql.datasets.redlining()
    options = dict(prediction="denial", protected="group", similarity=["zip"], id="id")
    with pytest.raises(cohortsql.CohortError, match="threshold must be a finite number"):
        cohortsql.audit(table, threshold=float("nan"), **options)
    with pytest.raises(cohortsql.CohortError, match="observed names the column"):
        cohortsql.audit(table, threshold=0.5, observed=3, **options)


def test_fairness_needs_no_row_positions_on_a_spark_frame_or_a_warehouse_table(titanic, request):
    """Counts by group read no row by itself: a Spark DataFrame (no promised row order) and a table of
    PostgreSQL by name are read without an id, which `fairness` does not take."""
    options = dict(prediction="prediction", protected="sex", threshold=0.5, observed="survived", bootstrap=20, seed=4)
    here = cohortsql.fairness(titanic, **options)
    spark = request.getfixturevalue("spark_session")
    signed = titanic.with_columns(pl.col("passenger").cast(pl.Int64))  # Spark and PostgreSQL have no unsigned type
    frame = spark.createDataFrame(signed.to_arrow()).repartition(3)
    on_spark = cohortsql.fairness(frame, **options)
    postgres = request.getfixturevalue("postgres")
    from postgres import load_table

    load_table(postgres, "fairness_scores", signed)
    in_warehouse = cohortsql.fairness(
        "fairness_scores", connection=request.getfixturevalue("adbc_postgres"), engine="adbc", **options
    )
    for found in (on_spark, in_warehouse):
        np.testing.assert_allclose(found.metrics["value"], here.metrics["value"], atol=1e-12)
        assert found.groups["rows"].to_list() == here.groups["rows"].to_list()


def test_replicates_are_drawn_a_few_groups_at_a_time_and_the_same_whatever_the_chunks(monkeypatch):
    """fairness(bootstrap=100_000) over 1,000 groups drew every replicate of every cell at once (2.96 GiB);
    the draws now come a chunk of groups at a time, each group from a generator of its own, so the
    intervals do not depend on the chunk size, and no chunk holds more than its budget of draws."""
    from cohortsql.numeric import fairness as metrics_module

    rng = np.random.default_rng(0)
    table = pl.DataFrame(
        {"g": rng.integers(0, 40, 4_000), "score": rng.uniform(size=4_000), "obs": rng.integers(0, 2, 4_000)}
    )
    options = dict(prediction="score", protected="g", threshold=0.5, observed="obs", bootstrap=300, seed=2)
    options |= {"protected_bins": {"g": 40}}
    whole = cohortsql.fairness(table, **options)
    drawn = []
    original = metrics_module.replicate_weights

    def counted(cells, replicates, seed, group):
        weights = original(cells, replicates, seed, group)
        drawn.append(weights.size)
        return weights

    monkeypatch.setattr(metrics_module, "REPLICATE_ENTRIES", 1_000)
    monkeypatch.setattr(metrics_module, "replicate_weights", counted)
    chunked = cohortsql.fairness(table, **options)
    assert chunked.groups.equals(whole.groups) and chunked.metrics.equals(whole.metrics)
    assert max(drawn) <= 4 * 300  # one group's cells (at most 4: decision x outcome) at a time here
