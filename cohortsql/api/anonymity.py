"""`cohortsql.kanonymity_shapley`: which predictors make each row re-identifiable (k-anonymity)."""

from __future__ import annotations

from typing import Any, Unpack

from cohortsql._typing import UniquenessOptions
from cohortsql.api.games import game_shapley
from cohortsql.games.anonymity import DEFAULT_K, KAnonymityGame
from cohortsql.interrupts import interruptible_call
from cohortsql.request.similarity import SimilarityArgument
from cohortsql.results.uniqueness import GameResult


@interruptible_call
def kanonymity_shapley(
    data: Any,
    *,
    similarity: SimilarityArgument,
    k: int = DEFAULT_K,
    **options: Unpack[UniquenessOptions],
) -> GameResult:
    """k-anonymity Shapley: which predictors expose each row, one that at most `k` rows share.

    A target is exposed on a set u of predictors when its cohort C_{t,u} (the rows similar to it on
    every predictor of u) holds at most `k` rows, itself included: k-anonymity fails for it there. The
    game v_k(t, u) = 1[|C_{t,u}| <= k] - 1[n <= k] is 0 for u = {}; its Shapley values split the
    target's exposure on all of its predictors, ``value`` = v_k(t, 1:d) (1 or 0), among them. With
    case weights, a cohort's size is its sum of weights. Every method and option of `game_shapley`
    (``game="k-anonymity:K"``) applies: permutation estimates, bootstrap intervals, interaction
    values, groups and Owen values.

    Parameters
    ----------
    data
        The table (any input `cohort_shapley` reads).
    similarity
        Feature -> similarity kind, as for `cohort_shapley`.
    k
        The largest number of rows sharing a target's values that still exposes it.
    **options
        Those of `game_shapley`.

    Returns
    -------
    GameResult
        ``shapley`` (targets x features), ``value`` and ``cohort_size`` per target, ``global_``.

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> exposed = cohortsql.kanonymity_shapley(loans, similarity={"income": "abs:15", "region": "exact"}, k=2)
    >>> exposed.value[:4].tolist()  # targets 0 and 3: at most 2 rows share their income and region
    [1.0, 0.0, 0.0, 1.0]
    >>> exposed.shapley[0].round(3).tolist()  # neither alone exposes target 0: both together do
    [0.5, 0.5]
    """
    return game_shapley(data, game=KAnonymityGame(k), similarity=similarity, **options)
