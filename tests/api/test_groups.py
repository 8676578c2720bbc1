"""groups= (each group one player, its members' similarities joined by AND) and group_values="owen"
(each feature's Owen value within its group) against their definitions by brute force, on every engine."""

import numpy as np
import polars as pl
import pytest
import reference

import cohortsql
from cohortsql.errors import CohortError

KINDS = {"a": "exact", "b": "abs:0.3", "c": "range:0.2", "d": "quantile:0.3"}
PYTHON = {
    "a": reference.exact(),
    "b": reference.absolute(0.3),
    "c": reference.range_window(0.2),
    "d": reference.quantile_window(0.3),
}
GROUPS = {"ab": ["a", "b"], "cd": ["c", "d"]}
UNIONS = [[0, 1], [2, 3]]
TARGETS = [0, 4, 9, 13]


def table(n=30, seed=2):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n).astype(float)
    b, c, d = rng.uniform(0, 1, n), rng.uniform(0, 1, n), rng.uniform(-1, 1, n)
    b[3] = None  # a NULL inside a group: similar to NULL only, so the group's cohort of row 3 needs it too
    y = a * (np.nan_to_num(b) > 0.5) + c * d + rng.normal(scale=0.1, size=n)
    return pl.DataFrame({"a": a, "b": b, "c": c, "d": d, "y": y}).with_columns(pl.col("b").fill_nan(None))


def columns(frame):
    return [frame[name].to_list() for name in KINDS]


def group_columns(frame):
    """Each group as one column of tuples of its members' values (the brute force's conjunction)."""
    return [
        list(zip(frame["a"].to_list(), frame["b"].to_list())),
        list(zip(frame["c"].to_list(), frame["d"].to_list())),
    ]


GROUP_KINDS = [reference.conjunction(PYTHON["a"], PYTHON["b"]), reference.conjunction(PYTHON["c"], PYTHON["d"])]


def test_groups_are_players_whose_similarity_is_the_conjunction(engine):
    frame = table()
    result = cohortsql.cohort_shapley(
        frame, prediction="y", similarity=KINDS, groups=GROUPS, targets=TARGETS, **engine.options
    )
    phi, phi2 = reference.cohort_shapley(group_columns(frame), GROUP_KINDS, frame["y"].to_list(), TARGETS)
    assert result.features == ("ab", "cd")
    assert result.groups == {"ab": ("a", "b"), "cd": ("c", "d")}
    assert result.similarity == {"ab": "a=exact AND b=abs:0.3", "cd": "c=range:0.2 AND d=quantile:0.3"}
    np.testing.assert_allclose(result.shapley, phi, atol=1e-12)
    np.testing.assert_allclose(result.shapley_squared, phi2, atol=1e-12)
    uniqueness = cohortsql.uniqueness_shapley(frame, similarity=KINDS, groups=GROUPS, targets=TARGETS, **engine.options)
    expected, sizes = reference.uniqueness_shapley(group_columns(frame), GROUP_KINDS, TARGETS)
    np.testing.assert_allclose(uniqueness.shapley, expected, atol=1e-12)
    np.testing.assert_array_equal(uniqueness.cohort_size, sizes)


def test_owen_values_match_the_definition_over_orders_that_keep_groups_together(engine):
    frame = table()
    result = cohortsql.cohort_shapley(
        frame, prediction="y", similarity=KINDS, groups=GROUPS, group_values="owen", targets=TARGETS, **engine.options
    )
    y = frame["y"].to_list()
    expected = np.array(
        [
            reference.owen_values(reference.cohort_values(columns(frame), list(PYTHON.values()), y, t), UNIONS)
            for t in TARGETS
        ]
    )
    np.testing.assert_allclose(result.owen, expected, atol=1e-12)
    # each group's members add up to the group's value as one player (the quotient game's Shapley value)
    np.testing.assert_allclose(result.owen[:, :2].sum(axis=1), result.shapley[:, 0], atol=1e-12)
    np.testing.assert_allclose(result.owen[:, 2:].sum(axis=1), result.shapley[:, 1], atol=1e-12)
    table_ = result.owen_table
    assert table_.columns == ["id", "group", "feature", "owen"]
    assert table_["feature"].to_list()[:4] == ["a", "b", "c", "d"]
    np.testing.assert_allclose(table_["owen"].to_numpy(), result.owen.reshape(-1))


def test_owen_effects_match_the_definition_on_the_variance_game(engine):
    frame = table()
    effects = cohortsql.shapley_effects(
        frame, prediction="y", similarity=KINDS, groups=GROUPS, group_values="owen", **engine.options
    )
    y = frame["y"].to_list()
    games = [reference.cohort_values(columns(frame), list(PYTHON.values()), y, t) for t in range(len(y))]
    variance_game = {u: float(np.mean([game[u] ** 2 for game in games])) for u in games[0]}
    expected = reference.owen_values(variance_game, UNIONS)
    owen = effects.owen_table.sort("feature")
    np.testing.assert_allclose(owen["owen_effect"].to_numpy(), expected, atol=1e-12)
    assert owen["group"].to_list() == ["ab", "ab", "cd", "cd"]
    by_group = owen.group_by("group").agg(pl.col("owen_effect").sum()).sort("group")
    players = effects.effects.sort("feature")
    np.testing.assert_allclose(by_group["owen_effect"].to_numpy(), players["shapley_effect"].to_numpy(), atol=1e-12)
    assert effects.groups == {"ab": ("a", "b"), "cd": ("c", "d")}


def test_a_feature_no_group_names_is_a_player_of_its_own_and_owen_is_then_shapley():
    """With one group of two and two features alone, the lone features' Owen values are their values in
    the quotient game; a group of one is the feature itself."""
    frame = table()
    groups = {"ab": ["a", "b"], "solo": ["c"]}
    result = cohortsql.cohort_shapley(
        frame, prediction="y", similarity=KINDS, groups=groups, group_values="owen", targets=TARGETS
    )
    assert result.features == ("ab", "solo", "d")
    assert result.groups == {"ab": ("a", "b"), "solo": ("c",), "d": ("d",)}
    np.testing.assert_allclose(result.owen[:, 2:], result.shapley[:, 1:], atol=1e-12)
    np.testing.assert_allclose(result.owen.sum(axis=1), result.totals["value"].to_numpy(), atol=1e-12)
    assert result.similarity["d"] == "quantile:0.3" and result.similarity["solo"] == "c=range:0.2"
    assert result.settings["groups"] == {"ab": ["a", "b"], "solo": ["c"]}


def test_wide_tables_in_groups_are_exact_and_agree_with_one_column_per_group():
    """30 features in 5 groups: a lattice of 2^5 players (the exact method refuses 30 features alone);
    with exact kinds each group equals one column of its members' values joined, by exact and by
    permutation (the same seed draws the same orders of players)."""
    rng = np.random.default_rng(5)
    n, width = 80, 30
    data = {f"x{j}": rng.integers(0, 2 if j % 6 else 3, n) for j in range(width)}
    frame = pl.DataFrame(data).with_columns(y=pl.sum_horizontal(pl.col(f"x{j}") * (j % 4) for j in range(width)) * 1.0)
    groups = {f"g{k}": [f"x{j}" for j in range(6 * k, 6 * k + 6)] for k in range(5)}
    joined = frame.with_columns(
        pl.concat_str([pl.col(name) for name in members], separator="|").alias(name) for name, members in groups.items()
    )
    for method in ("exact", "permutation"):
        grouped = cohortsql.cohort_shapley(
            frame, prediction="y", similarity={name: "exact" for name in data}, groups=groups, method=method, seed=3
        )
        plain = cohortsql.cohort_shapley(
            joined, prediction="y", similarity={name: "exact" for name in groups}, method=method, seed=3
        )
        assert grouped.method == method
        np.testing.assert_allclose(grouped.shapley, plain.shapley, atol=1e-12)
    effects = cohortsql.shapley_effects(frame, prediction="y", similarity=list(data), groups=groups)
    plain_effects = cohortsql.shapley_effects(joined, prediction="y", similarity={name: "exact" for name in groups})
    np.testing.assert_allclose(
        effects.effects.sort("feature")["shapley_effect"].to_numpy(),
        plain_effects.effects.sort("feature")["shapley_effect"].to_numpy(),
        atol=1e-12,
    )


def test_bootstrap_and_weights_carry_over_to_groups():
    """A grouped run with case weights and replicates equals the run on one column per group."""
    frame = table().with_columns(w=pl.Series(np.arange(30) % 3 + 0.5), a2=pl.col("a") * 10 + (pl.col("c") > 0.5))
    kinds = {"a": "exact", "c": "bins:2", "d": "abs:0.5"}
    joined = frame.with_columns(ac=(pl.col("a") * 10 + (pl.col("c") * 2).floor().clip(0, 1)))
    options = dict(prediction="y", weight="w", bootstrap=20, seed=4, targets=TARGETS)
    grouped = cohortsql.cohort_shapley(frame, similarity=kinds, groups={"ac": ["a", "c"]}, **options)
    plain = cohortsql.cohort_shapley(joined, similarity={"ac": "exact", "d": "abs:0.5"}, **options)
    np.testing.assert_allclose(grouped.shapley, plain.shapley, atol=1e-12)
    np.testing.assert_allclose(grouped.bootstrap.shapley_low, plain.bootstrap.shapley_low, atol=1e-12)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"groups": {"ab": ["a", "z"]}}, "group 'ab' names 'z', which is not a feature"),
        ({"groups": {"ab": ["a", "b"], "bc": ["b", "c"]}}, "feature 'b' is in two groups, 'ab' and 'bc'"),
        ({"groups": {"ab": ["a", "b", "a"]}}, "group 'ab' names 'a' twice"),
        ({"groups": {"c": ["a", "b"]}}, "group 'c' has the name of a feature outside it"),
        ({"groups": {"ab": "a,b"}}, "group 'ab' must list its features"),
        ({"groups": {"ab": []}}, "group 'ab' must list its features"),
        ({"groups": [["a", "b"]]}, "groups must map each group's name"),
        ({"group_values": "owen"}, "group_values='owen' needs groups="),
        ({"groups": GROUPS, "group_values": "shapley"}, "group_values must be one of"),
        ({"groups": GROUPS, "group_values": "owen", "method": "permutation"}, 'group_values="owen" needs method='),
        ({"groups": GROUPS, "path": "grouping_sets"}, "groups= runs on the pairwise path"),
    ],
)
@pytest.mark.parametrize("method", [cohortsql.cohort_shapley, cohortsql.shapley_effects])
def test_wrong_groups_are_refused_with_the_name_at_fault(options, message, method):
    with pytest.raises(CohortError, match=message.replace("(", r"\(").replace("[", r"\[")):
        method(table(), prediction="y", similarity=KINDS, **options)


def test_an_owen_game_beyond_the_exact_limit_is_refused_before_computing():
    frame = pl.DataFrame({f"x{j}": [0, 1, 0, 1] for j in range(26)}).with_columns(y=pl.Series([1.0, 2, 3, 4]))
    groups = {"big": [f"x{j}" for j in range(25)]}
    with pytest.raises(CohortError, match="Owen values of group 'big' need a game of 26 players"):
        cohortsql.cohort_shapley(
            frame, prediction="y", similarity=list(frame.columns[:-1]), groups=groups, group_values="owen"
        )


def test_the_polars_namespace_takes_groups_as_the_api_does():
    frame = table()
    options = dict(prediction="y", similarity=KINDS, groups=GROUPS, group_values="owen", targets=TARGETS)
    through_polars = frame.cohort.shapley(**options)
    np.testing.assert_array_equal(through_polars.owen, cohortsql.cohort_shapley(frame, **options).owen)
    assert through_polars.features == ("ab", "cd")


AUTHORS_OWEN = np.array(
    [
        [-0.8496202250000005, -1.2602069125000004, 0.20204437569444456, -0.11549451319444448],
        [0.00995629583333324, 0.1737230666666667, 0.17224813660714278, 0.01143122589285717],
        [0.8372907380681816, 0.04052437443181833, 0.6934557374999999, 0.19314987500000003],
        [2.061693972916667, 0.3281788895833331, 0.9485014937499998, 0.35050336874999966],
    ]
)
"""The authors' `CohortOwen` (github.com/cohortshapley/cohortowen at f844ef8: the average of cohort
mean changes over every order that keeps each union together, with their 5%-95% quantile window of
ratio 0.1) for targets 0, 7, 19 and 33 of `authors_table()` under the unions {a, b}, {c, d}, run in a
development session. Their numbers, not their code, are kept here."""


def authors_table() -> pl.DataFrame:
    """40 rows of four uniform predictors (three decimals) and a y mixing a product, a sine and a line."""
    rng = np.random.default_rng(25)
    x = np.round(rng.uniform(0, 10, size=(40, 4)), 3)
    y = np.round(x[:, 0] * x[:, 1] / 10 + np.sin(x[:, 2]) + 0.3 * x[:, 3], 6)
    return pl.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2], "d": x[:, 3], "y": y})


def test_owen_values_equal_the_authors_cohort_owen(engine):
    result = cohortsql.cohort_shapley(
        authors_table(),
        prediction="y",
        similarity={name: "quantile:0.1" for name in "abcd"},
        groups={"ab": ["a", "b"], "cd": ["c", "d"]},
        group_values="owen",
        targets=[0, 7, 19, 33],
        **engine.options,
    )
    np.testing.assert_allclose(result.owen, AUTHORS_OWEN, atol=1e-12)


def test_uniqueness_owen_values_match_the_definition(engine):
    """The privacy game's Owen values: each feature's marginal information averaged over the orders
    that keep each group together; a group's members add up to the group's uniqueness value."""
    frame = table()
    result = cohortsql.uniqueness_shapley(
        frame, similarity=KINDS, groups=GROUPS, group_values="owen", targets=TARGETS, **engine.options
    )
    expected = np.array(
        [
            reference.owen_values(reference.uniqueness_values(columns(frame), list(PYTHON.values()), t), UNIONS)
            for t in TARGETS
        ]
    )
    np.testing.assert_allclose(result.owen, expected, atol=1e-12)
    np.testing.assert_allclose(result.owen[:, :2].sum(axis=1), result.shapley[:, 0], atol=1e-12)
    assert result.owen_table["feature"].to_list()[:4] == ["a", "b", "c", "d"]
