"""Features that are the explained column in disguise are named in a warning: a copy of the outcome
(Boston's observed medv beside a model of it) and the label a probability was fitted to (Titanic's
`survived` beside models of survival), while real predictors, strong ones included (`sex`), are not."""

import warnings

import numpy as np
import polars as pl
import pytest
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

import cohortsql
from cohortsql.results.copies import (
    COPY_CHECK_FEWEST,
    COPY_CHECK_ROWS,
    COPY_SHARE,
    LABEL_MIN_ROWS,
    copy_check_rows,
    fitted_label,
    outcome_copies,
)

TITANIC = "examples/data/titanic_predictions.parquet"  # 1,046 passengers, a logistic regression's probability


def _copy_warnings(call, *args, **kwargs) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", cohortsql.CohortWarning)
        call(*args, **kwargs)
    return [
        str(w.message) for w in caught if "probably a copy" in str(w.message) or "probably the label" in str(w.message)
    ]


def test_a_copy_of_the_outcome_among_the_features_is_named():
    """similarity="all" on Boston takes medv, the observed value the model predicts, as a feature; it
    alone accounts for 96% of the prediction's variation (rank correlation), and is named as a probable
    copy of the outcome. The thirteen real predictors are not."""
    boston = pl.read_parquet("examples/data/boston_predictions.parquet")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", cohortsql.CohortWarning)
        cohortsql.cohort_shapley(boston, prediction="prediction", similarity="all", targets=40, seed=1)
    copies = [str(warning.message) for warning in caught if "probably a copy" in str(warning.message)]
    assert len(copies) == 1 and copies[0].startswith("'medv' alone accounts for 9") and "'prediction'" in copies[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", cohortsql.CohortWarning)
        features = [name for name in boston.columns if name not in ("medv", "prediction")]
        cohortsql.cohort_shapley(boston, prediction="prediction", similarity=features, targets=40, seed=1)
    assert not any("probably a copy" in str(warning.message) for warning in caught)
    # a rounded copy, of few levels: the share of variance between its levels
    rounded = boston.with_columns(band=pl.col("prediction").round(0))
    assert outcome_copies(rounded, ["band", "chas"], rounded["prediction"].to_numpy()).keys() == {"band"}


def _modelled(model) -> pl.DataFrame:
    """Titanic with `model`'s probability of survival from class, sex, age, siblings and parents."""
    titanic = pl.read_parquet(TITANIC).drop("prediction")
    inputs = titanic.select("pclass", "sex", "age", "sibsp", "parch").to_dummies(["pclass", "sex"]).to_numpy()
    survived = (titanic["survived"] == "survived").to_numpy()
    return titanic.with_columns(prediction=model.fit(inputs, survived).predict_proba(inputs)[:, 1])


@pytest.mark.parametrize(
    "model",
    [None, GradientBoostingClassifier(random_state=0), RandomForestClassifier(min_samples_leaf=5, random_state=0)],
    ids=["logistic", "boosted", "forest"],
)
def test_the_label_a_probability_was_fitted_to_is_named_and_a_strong_predictor_is_not(model):
    """similarity="all" takes the observed `survived` as a feature beside the probability of survival
    it was fitted to: it alone (0.4-0.6 of the variance between its two levels) is below the copy rule,
    so the label rule names it, in cohort_shapley and in shapley_effects. `sex` predicts survival as
    well (the probability is 0.04 from its rate and 0.16 from it in a tenth of the passengers on
    average, under the logistic model) and is not named when `survived` is left out."""
    titanic = pl.read_parquet(TITANIC) if model is None else _modelled(model)
    for call in (cohortsql.cohort_shapley, cohortsql.shapley_effects):
        said = _copy_warnings(call, titanic, prediction="prediction", similarity="all")
        assert len(said) == 1 and said[0].startswith("'survived' is probably the label 'prediction' was fitted to")
        assert "survived = 'survived'" in said[0]
        predictors = ["pclass", "sex", "age", "sibsp", "parch"]
        assert _copy_warnings(call, titanic, prediction="prediction", similarity=predictors) == []
    found = fitted_label(titanic, ["sex", "survived", "pclass"], titanic["prediction"].to_numpy())
    assert found is not None and (found.name, found.level) == ("survived", "survived")
    assert abs(found.rate - found.mean) < 0.015 and found.calibration < 0.075


def test_the_label_rule_needs_a_probability_calibrated_to_the_level_and_enough_rows():
    """Each condition on its own: a probability shifted by 0.05 is no longer the label's (its mean is
    0.05 from the rate); the same shape squeezed toward its mean is miscalibrated though its mean is
    right; a score outside [0, 1] is no probability; and too few rows say nothing."""
    titanic = pl.read_parquet(TITANIC)
    p = titanic["prediction"].to_numpy()
    assert fitted_label(titanic, ["survived"], p) is not None
    assert fitted_label(titanic, ["survived"], np.clip(p + 0.05, 0, 1)) is None
    assert fitted_label(titanic, ["survived"], p.mean() + 0.2 * (p - p.mean())) is None
    assert fitted_label(titanic, ["survived"], 10 * p) is None
    few = titanic.head(LABEL_MIN_ROWS - 1)
    assert fitted_label(few, ["survived"], few["prediction"].to_numpy()) is None
    # a label with missing values is judged on the rows that have one
    holes = titanic.with_columns(survived=pl.when(pl.int_range(pl.len()) % 7 == 0).then(None).otherwise("survived"))
    holes = holes.with_columns(survived=pl.when(pl.col("survived").is_null()).then(None).otherwise(titanic["survived"]))
    assert fitted_label(holes, ["survived"], p) is not None


def test_a_wide_tables_check_reads_fewer_rows_and_still_names_a_label():
    """A narrow table's check reads 20,000 rows; at 1,024 features it reads 5,000 (the cells, not the
    rows, cost), never fewer; and 5,000 rows of a calibrated probability name its label on 40 of 40
    draws (at 2,000 rows, the rate's noise hides it on 2 of the same 40)."""
    assert copy_check_rows(10) == COPY_CHECK_ROWS and copy_check_rows(1_024) == COPY_CHECK_FEWEST == 5_000
    assert copy_check_rows(100_000) == COPY_CHECK_FEWEST and copy_check_rows(0) == COPY_CHECK_ROWS
    for seed in range(40):
        draw = np.random.default_rng(seed)
        probability = draw.beta(1, 4, COPY_CHECK_FEWEST)
        rows = pl.DataFrame(
            {
                "deny": (draw.random(COPY_CHECK_FEWEST) < probability).astype(np.int8),
                "x": draw.normal(size=COPY_CHECK_FEWEST),
            }
        )
        found = fitted_label(rows, ["x", "deny"], probability)
        assert found is not None and (found.name, found.level) == ("deny", 1)


def test_the_command_line_names_the_label_and_marks_it():
    """`--features all` on the Titanic table: the warning is printed, and the label's row is marked `!`."""
    from typer.testing import CliRunner

    from cohortsql.cli import app

    result = CliRunner().invoke(app, ["effects", TITANIC, "--prediction", "prediction", "--features", "all"])
    assert result.exit_code == 0, result.output
    assert "'survived' is probably the label 'prediction' was fitted to" in result.output
    assert any(line.lstrip().startswith("! survived") for line in result.output.splitlines())


def test_a_few_targets_prove_no_copy():
    """Three targets of Boston: among three rows any feature ranks them as the prediction does, and the
    check once named most features as copies; it reads the data's rows (a sample), where only medv is
    one. A table of three rows supports no claim at all."""
    boston = pl.read_parquet("examples/data/boston_predictions.parquet").with_row_index("row")
    features = [name for name in boston.columns if name not in ("row", "prediction")]
    found = _copy_warnings(
        cohortsql.cohort_shapley, boston, prediction="prediction", similarity=features, id="row", targets=[3, 117, 204]
    )
    assert len(found) == 1 and found[0].startswith("'medv' alone accounts for"), found
    three = pl.DataFrame({"id": [1, 2, 3], "a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"], "p": [0.1, 0.5, 0.9]})
    assert _copy_warnings(cohortsql.cohort_shapley, three, prediction="p", similarity=["a", "b"], id="id") == []


def _shares_by_definition(frame: pl.DataFrame, y: np.ndarray) -> dict[str, float]:
    """Each feature's share of y's variation by its definition, one polars query per feature: eta^2
    between its levels (null a level) for few levels, else the squared Spearman correlation."""
    shares = {}
    for name in frame.columns:
        pair = pl.DataFrame({"x": frame[name], "y": y}).filter(pl.col("y").is_finite())
        if pair["x"].n_unique() <= pair.height // 5:
            means = pair.group_by("x").agg(mean=pl.col("y").mean(), count=pl.len())
            between = (means["count"] * (means["mean"] - pair["y"].mean()) ** 2).sum() / pair.height
            shares[name] = float(between) / float(np.var(pair["y"].to_numpy()))
        elif pair["x"].dtype.is_numeric():
            ranked = pair.filter(pl.col("x").is_not_null() & pl.col("x").cast(pl.Float64).is_finite())
            shares[name] = float(np.corrcoef(ranked["x"].rank().to_numpy(), ranked["y"].rank().to_numpy())[0, 1] ** 2)
    return shares


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_copies_are_found_by_every_features_share_as_defined(seed, monkeypatch):
    """The shares the copy check compares with `COPY_SHARE` (every feature's levels coded in one query)
    are each feature's eta^2 or squared rank correlation by definition, for floats with NaN, -0.0 and
    nulls, text with the text 'null' beside nulls, booleans and narrow integers (coded by value),
    integers with nulls or a wide range, dates, decimals and uint64 (ranked); a rescaled copy of y is
    named and the others are not."""
    import datetime
    import decimal

    from cohortsql.results import copies

    rng = np.random.default_rng(seed)
    n = 400
    y = rng.normal(size=n)
    y[:3] = np.nan  # rows the check leaves out
    text = [None if row in (5, 6) else str(value) for row, value in enumerate(rng.choice(["a", "b", "null"], size=n))]
    frame = pl.DataFrame(
        {
            "noise": np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n)),
            "signed_zero": rng.choice([0.0, -0.0, 1.0], size=n),
            "text": text,
            "flag": rng.random(n) < 0.5,
            "small": pl.Series(rng.integers(-3, 4, n), dtype=pl.Int16),
            "with_nulls": pl.Series([None if k == 0 else int(k) for k in rng.integers(0, 6, n)], dtype=pl.Int32),
            "wide_range": pl.Series(rng.integers(-(2**30), 2**30, n), dtype=pl.Int32),
            "day": [datetime.date(2020, 1, 1 + int(k)) for k in rng.integers(0, 20, n)],
            "money": pl.Series([decimal.Decimal(int(k)) / 4 for k in rng.integers(0, 10, n)], dtype=pl.Decimal(10, 2)),
            "big": pl.Series(rng.integers(0, 8, n).astype(np.uint64) + np.uint64(2**63)),
            "band": [f"level {k}" for k in np.digitize(y, [-1.0, 0.0, 1.0])],
            "rescaled": np.nan_to_num(y, nan=0.0) * 1e9,
        }
    )
    expected = _shares_by_definition(frame, y)
    assert set(copies.outcome_copies(frame, frame.columns, y)) == {"rescaled"}
    assert copies.outcome_copies(frame, ["a group of features"], y) == {}  # players that are no column
    monkeypatch.setattr(copies, "COPY_SHARE", -np.inf)  # every feature's share, not only the copies'
    every = copies.outcome_copies(frame, frame.columns, y)
    assert every.keys() == expected.keys() == set(frame.columns)
    for name, share in every.items():
        assert share == pytest.approx(expected[name], rel=1e-12, abs=1e-15), name


def test_every_engine_reads_the_same_sample_for_the_check(engine, monkeypatch):
    """The check's rows are drawn on each row's own hash with the call's seed, the same on every engine:
    with 120 of 400 rows read, a copy of the outcome is named with the same share everywhere."""
    import cohortsql.results.copies as copies

    monkeypatch.setattr(copies, "COPY_CHECK_FEWEST", 120)
    monkeypatch.setattr(copies, "COPY_CHECK_ROWS", 120)
    rng = np.random.default_rng(4)
    x = rng.normal(size=(400, 2))
    score = x[:, 0] + 0.5 * x[:, 1]
    frame = pl.DataFrame(
        {
            "id": np.arange(400),
            "x0": x[:, 0],
            "x1": x[:, 1],
            "copy": score + rng.normal(scale=0.05, size=400),
            "y": score,
        }
    )
    kinds = {"x0": "abs:0.5", "x1": "abs:0.5", "copy": "abs:0.1"}
    found = _copy_warnings(
        cohortsql.cohort_shapley, frame, prediction="y", similarity=kinds, id="id", targets=[0, 1], **engine.options
    )
    reference = _copy_warnings(
        cohortsql.cohort_shapley, frame, prediction="y", similarity=kinds, id="id", targets=[0, 1]
    )
    assert len(found) == 1 and found[0].startswith("'copy' alone accounts for") and found == reference


@pytest.mark.parametrize("ids", ["integers", "text"])
def test_the_checks_sample_is_the_rows_whose_hash_is_below_the_fraction(ids, engine, monkeypatch):
    """The rows the check reads are those whose md5('<seed>:row:<id>') begins, as a big-endian 32-bit
    number, below the fraction of 2^32 (120 of 400 rows: 0.3), as hashlib computes it, on every engine."""
    import hashlib

    import cohortsql.api.local as local
    import cohortsql.results.copies as copies

    monkeypatch.setattr(copies, "COPY_CHECK_FEWEST", 120)
    monkeypatch.setattr(copies, "COPY_CHECK_ROWS", 120)
    read: list[pl.DataFrame] = []
    monkeypatch.setattr(local, "warn_about_copies", lambda rows, *arguments: read.append(rows))
    rng = np.random.default_rng(6)
    identifiers = [k * 7 - 900 for k in range(400)] if ids == "integers" else [f"r{k}'s" for k in range(400)]
    frame = pl.DataFrame({"id": identifiers, "x": rng.normal(size=400), "y": rng.normal(size=400)})
    cohortsql.cohort_shapley(
        frame, prediction="y", similarity={"x": "abs:0.5"}, id="id", targets=[identifiers[0]], **engine.options
    )
    kept = [
        value
        for value in identifiers
        if int.from_bytes(hashlib.md5(f"0:row:{value}".encode()).digest()[:4], "big") < 0.3 * 2**32
    ]
    assert 90 < len(kept) < 150 and read[0]["id"].to_list() == sorted(kept)


@pytest.mark.parametrize("source", ["frame", "file"])
def test_weighted_datas_check_reads_its_rows_of_positive_weight_only(
    source, engine, local_files, tmp_path, monkeypatch
):
    """Rows of weight 0 are no subjects: the check reads none of them, and a table of 40 subjects among
    6,000 rows reads 40 rows (every row of the input was read when the subjects were at most the rows the
    check reads)."""
    import cohortsql.api.local as local

    read: list[pl.DataFrame] = []
    monkeypatch.setattr(local, "warn_about_copies", lambda rows, *arguments: read.append(rows))
    rng = np.random.default_rng(8)
    rows = 6_000
    frame = pl.DataFrame(
        {
            "id": np.arange(rows),
            "x": rng.normal(size=rows),
            "y": rng.normal(size=rows),
            "w": np.where(np.arange(rows) % 150 == 0, 2.0, 0.0),
        }
    )
    data: object = frame
    if source == "file":
        data = str(tmp_path / "rows.parquet")
        frame.write_parquet(data)
    cohortsql.cohort_shapley(
        data, prediction="y", similarity={"x": "abs:0.5"}, id="id", weight="w", targets=[0, 150], **engine.options
    )
    assert read[0]["id"].to_list() == list(range(0, rows, 150))


def test_rank_copies_are_the_columns_whose_squared_spearman_reaches_the_share():
    """Numeric columns of many values are ranked together and correlated in one product: each share is
    scipy's Spearman correlation squared, over the rows where the column is finite (a column with missing
    or infinite values, one of float32, integers, decimals, a monotone copy and a constant among them)."""
    from decimal import Decimal

    from scipy.stats import spearmanr

    rng = np.random.default_rng(21)
    n = 300
    y = rng.normal(size=n)
    near = y + rng.normal(size=n) * 0.08  # a noisy copy: just above or below the share
    frame = pl.DataFrame(
        {
            "monotone": np.exp(y),
            "near": near,
            "noise": rng.normal(size=n),
            "constant": np.full(n, 2.5),
            "integers": np.argsort(np.argsort(y)) * 3 - 100,
            "narrow": pl.Series(y + rng.normal(size=n) * 0.3, dtype=pl.Float32),
            "money": pl.Series([Decimal(int(v * 100)) / 100 for v in y], dtype=pl.Decimal(12, 2)),
            "gaps": pl.Series([None if i % 6 == 0 else float(v) for i, v in enumerate(y)]),
            "infinite": np.where(np.arange(n) % 10 == 0, np.inf, near),
        }
    )
    found = outcome_copies(frame, frame.columns, y)
    expected = {}
    for name in frame.columns:
        values = frame[name].cast(pl.Float64).to_numpy()
        kept = np.isfinite(values)
        if np.ptp(values[kept]) > 0:
            share = spearmanr(values[kept], y[kept]).statistic ** 2
            if share >= COPY_SHARE:
                expected[name] = share
    assert found.keys() == expected.keys() and {"monotone", "integers", "money", "gaps"} <= found.keys()
    assert all(found[name] == pytest.approx(expected[name], abs=1e-12) for name in found)
