"""Threshold calibration (paper, Appendix 5) against a direct test of every point and reference row."""

import numpy as np
import polars as pl
import pytest

import cohortsql
from cohortsql.numeric.realism import nearest_scaled_distance, realistic_shares, window_widths


def points(seed: int, rows: int):
    rng = np.random.default_rng(seed)
    windows = np.round(rng.uniform(0, 10, size=(rows, 2)), 1)
    windows[rng.integers(0, rows, 2), 1] = np.nan
    exact = rng.integers(0, 3, size=(rows, 1))
    return windows, exact


def directly_realistic(point, reference, widths, threshold) -> bool:
    windows, exact = point
    for row_windows, row_exact in zip(*reference):
        if (row_exact != exact).any():
            continue
        close = True
        for value, other, width in zip(windows, row_windows, widths):
            if np.isnan(value) or np.isnan(other):
                close &= bool(np.isnan(value) and np.isnan(other))
            else:
                close &= bool(abs(value - other) <= threshold * width)
        if close:
            return True
    return False


@pytest.mark.parametrize("kind", ["range", "quantile"])
def test_realistic_shares_equal_the_direct_test(kind):
    windows, exact = points(1, 40)
    reference = (windows[10:], exact[10:])
    widths = window_widths(reference[0], kind)
    present = reference[0][~np.isnan(reference[0][:, 1]), 1]
    assert widths[1] == pytest.approx(
        present.max() - present.min() if kind == "range" else np.subtract(*np.quantile(present, [0.95, 0.05]))
    )
    thresholds = np.array([0.01, 0.05, 0.1, 0.3])
    distances = nearest_scaled_distance((windows[:10], exact[:10]), reference, widths)
    expected = [
        np.mean([directly_realistic((windows[i], exact[i]), reference, widths, r) for i in range(10)])
        for r in thresholds
    ]
    np.testing.assert_allclose(realistic_shares(distances, thresholds), expected)


def test_calibrate_recommends_the_smallest_threshold_that_keeps_held_out_rows_realistic(tmp_path):
    rng = np.random.default_rng(2)
    data = pl.DataFrame({"x": rng.normal(size=300), "y": rng.normal(size=300), "group": rng.choice(["a", "b"], 300)})
    result = cohortsql.calibrate(data, features=["x", "y", "group"], runs=5, seed=3, marginal_samples=200)
    again = cohortsql.calibrate(data, features=["x", "y", "group"], runs=5, seed=3, marginal_samples=200)
    np.testing.assert_array_equal(result.holdout, again.holdout)
    assert result.window_features == ("x", "y") and result.exact_features == ("group",)
    means = result.holdout.mean(axis=1)
    passing = (means >= 0.95).all(axis=0)
    assert result.recommended == result.thresholds[np.argmax(passing)]
    assert not passing[: np.argmax(passing)].any()
    assert (np.diff(means, axis=1) >= 0).all()  # more tolerance, more realistic points
    assert result.marginal.shape == (5, 20)
    rates = result.rates
    assert rates["points"].unique(maintain_order=True).to_list() == [
        "holdout 10%",
        "holdout 20%",
        "holdout 30%",
        "marginal",
    ]
    result.write_parquet(tmp_path / "rates.parquet")
    assert pl.read_parquet(tmp_path / "rates.parquet").equals(rates)
    assert "recommended" in repr(result)


def test_independent_columns_make_marginal_points_as_real_as_rows():
    """With independent columns, a marginal draw is a real combination: both shares are alike."""
    rng = np.random.default_rng(4)
    data = pl.DataFrame({"x": rng.uniform(size=2000), "y": rng.uniform(size=2000)})
    result = cohortsql.calibrate(data, features=["x", "y"], runs=3, seed=1, thresholds=[0.02, 0.05])
    assert np.abs(result.marginal.mean(axis=0) - result.holdout[0].mean(axis=0)).max() < 0.05


def test_correlated_columns_make_marginal_points_unrealistic():
    rng = np.random.default_rng(5)
    x = rng.uniform(size=1000)
    data = pl.DataFrame({"x": x, "y": x + rng.normal(scale=0.005, size=1000)})
    result = cohortsql.calibrate(data, features=["x", "y"], runs=3, seed=1, thresholds=[0.02])
    assert result.holdout[:, :, 0].mean() > 0.9 > 0.3 > result.marginal.mean()


def test_bad_calibration_arguments_are_named():
    data = pl.DataFrame({"x": np.arange(30.0), "y": np.arange(30.0) % 3})
    for options, message in [
        ({"features": ["x"], "kind": "median"}, "kind"),
        ({"features": ["x"], "thresholds": []}, "thresholds"),
        ({"features": ["x"], "holdouts": [0.5, 1.0]}, "holdouts"),
        ({"features": ["x"], "exact": ["y"]}, "not among the features"),
        ({"features": "x"}, "lists of column names"),
        ({"features": ["x"], "runs": 0}, "runs"),
        ({"features": ["nope"]}, "nope"),
    ]:
        with pytest.raises(cohortsql.CohortError, match=message):
            cohortsql.calibrate(data, **options)
    with pytest.raises(cohortsql.CohortError, match="at least 10 rows"):
        cohortsql.calibrate(data.head(5), features=["x"])


def test_large_tables_are_calibrated_on_a_sample():
    data = pl.DataFrame({"x": np.arange(500.0)})
    result = cohortsql.calibrate(data, features=["x"], runs=2, seed=1, max_rows=100, thresholds=[0.1])
    assert result.rows == 100
