"""k-anonymity Shapley, the game added in the shape of every game (one class, one public function),
against its definition v_k(t, u) = 1[|C_{t,u}| <= k] - 1[n <= k] by brute force."""

import numpy as np
import polars as pl
import pytest
import reference

import cohortsql
from cohortsql.games.anonymity import KAnonymityGame


def records(seed: int, rows: int = 24) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "id": np.arange(rows),
            "zip": rng.integers(0, 3, rows),
            "age": rng.integers(20, 60, rows),
            "sex": rng.choice(["f", "m"], rows),
        }
    )


@pytest.mark.parametrize("k", [1, 3, 8])
@pytest.mark.parametrize("path", ["pairwise", "grouping_sets"])
def test_kanonymity_equals_the_definition(engine, k, path):
    data = records(k)
    similarity = {"zip": "exact", "age": "abs:6" if path == "pairwise" else "bins:3", "sex": "exact"}
    result = cohortsql.kanonymity_shapley(data, similarity=similarity, id="id", k=k, path=path, **engine.options)
    kinds = [reference.exact(), reference.absolute(6) if path == "pairwise" else reference.bins(3), reference.exact()]
    columns = [data[name].to_list() for name in similarity]
    n = data.height
    for t in range(n):
        sizes = reference.cohort_sizes(columns, kinds, t)
        value = {u: float(size <= k) - float(n <= k) for u, size in sizes.items()}
        np.testing.assert_allclose(result.shapley[t], reference.shapley(value, 3), atol=1e-12)
        assert result.value[t] == value[frozenset(range(3))]
        assert result.cohort_size[t] == sizes[frozenset(range(3))]
    assert result.path == path and result.game == f"k-anonymity (k = {k})"
    assert result.global_["mean_shapley"].sum() == pytest.approx(result.value.mean())


def test_kanonymity_in_groups_gives_owen_values_that_add_up_to_the_groups():
    data = records(4)
    similarity = {"zip": "exact", "age": "abs:6", "sex": "exact"}
    grouped = cohortsql.kanonymity_shapley(
        data, similarity=similarity, id="id", k=3, groups={"place": ["zip", "age"]}, group_values="owen"
    )
    assert grouped.features == ("place", "sex")
    np.testing.assert_allclose(grouped.owen[:, :2].sum(axis=1), grouped.shapley[:, 0], atol=1e-12)


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "3"])
def test_k_must_be_a_whole_number_of_rows(k):
    with pytest.raises(cohortsql.CohortError, match="k must be a whole number of rows"):
        KAnonymityGame(k)
