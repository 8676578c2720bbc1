"""Uniqueness Shapley against the brute-force definition v_U(t, u) = -log(|C_{t,u}| / n)."""

import math
import warnings

import numpy as np
import polars as pl
import pytest
import reference

import cohortsql


def records(seed: int, rows: int = 30) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "id": np.arange(rows),
            "zip": rng.integers(0, 4, rows),
            "age": rng.integers(20, 60, rows),
            "sex": rng.choice(["f", "m"], rows),
            "w": rng.integers(0, 3, rows),
        }
    )


@pytest.mark.parametrize("path", ["pairwise", "grouping_sets"])
def test_uniqueness_equals_the_definition_and_adds_up(engine, path):
    data = records(1)
    similarity = {"zip": "exact", "age": "bins:4", "sex": "exact"}
    if path == "pairwise":
        similarity["age"] = "abs:5"
    result = cohortsql.uniqueness_shapley(data, similarity=similarity, id="id", path=path, **engine.options)
    kinds = [reference.exact(), reference.bins(4) if path != "pairwise" else reference.absolute(5), reference.exact()]
    columns = [data[name].to_list() for name in similarity]
    expected, sizes = reference.uniqueness_shapley(columns, kinds, list(range(data.height)))
    np.testing.assert_allclose(result.shapley, expected, atol=1e-12)
    np.testing.assert_allclose(result.cohort_size, sizes)
    np.testing.assert_allclose(result.shapley.sum(axis=1), -np.log(result.cohort_size / data.height), atol=1e-12)
    assert result.path == path
    unique = result.cohort_size == 1
    assert result.diagnostics["unique_share"] == pytest.approx(unique.mean())
    np.testing.assert_allclose(result.value[unique], math.log(data.height))
    local = result.local
    assert local.columns == ["id", "feature", "feature_value", "shapley"]
    assert local.height == data.height * 3
    assert result.global_["mean_shapley"].sum() == pytest.approx(result.value.mean())


def test_uniqueness_weights_are_repeated_rows(engine):
    data = records(2)
    copies = data.filter(pl.col("w") > 0).select(pl.all().repeat_by(pl.col("w")).explode())
    copies = copies.with_columns(copy=pl.int_range(pl.len(), dtype=pl.Int64))
    similarity = {"zip": "exact", "age": "abs:5", "sex": "exact"}
    weighted = cohortsql.uniqueness_shapley(data, similarity=similarity, id="id", weight="w", **engine.options)
    plain = cohortsql.uniqueness_shapley(copies, similarity=similarity, id="copy", **engine.options)
    first_copy = copies.group_by("id", maintain_order=True).agg(pl.col("copy").first()).sort("id")
    positions = {copy: index for index, copy in enumerate(plain.ids.to_list())}
    rows = [positions[copy] for copy in first_copy["copy"]]
    assert weighted.ids.to_list() == first_copy["id"].to_list()
    np.testing.assert_allclose(weighted.shapley, plain.shapley[rows], atol=1e-12)
    np.testing.assert_allclose(weighted.cohort_size, plain.cohort_size[rows])
    np.testing.assert_allclose(weighted.global_["mean_shapley"], plain.global_["mean_shapley"], atol=1e-12)


def test_uniqueness_needs_no_prediction_and_writes_its_table(tmp_path):
    data = records(3)
    result = cohortsql.uniqueness_shapley(data, similarity=["zip", "sex"], targets=[0, 5])
    assert result.ids.to_list() == [0, 5]
    path = tmp_path / "uniqueness.parquet"
    result.write_parquet(path)
    assert pl.read_parquet(path).equals(result.local)
    namespace = data.cohort.uniqueness(similarity=["zip", "sex"], targets=[0, 5])
    np.testing.assert_allclose(namespace.shapley, result.shapley)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "unique" in repr(result)
