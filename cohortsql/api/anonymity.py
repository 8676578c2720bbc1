"""`cohortsql.kanonymity_shapley`: which predictors make each row re-identifiable (k-anonymity)."""

from __future__ import annotations

from typing import Any, Unpack

from cohortsql._typing import UniquenessOptions
from cohortsql.games.anonymity import KAnonymityGame
from cohortsql.interrupts import interruptible_call
from cohortsql.request.options import checked_options
from cohortsql.request.similarity import SimilarityArgument
from cohortsql.results.uniqueness import GameResult
from cohortsql.run.readouts import game_result
from cohortsql.run.session import open_session
from cohortsql.run.strategy import MAX_EXACT_FEATURES


@interruptible_call
def kanonymity_shapley(
    data: Any,
    *,
    similarity: SimilarityArgument,
    k: int = 5,
    **options: Unpack[UniquenessOptions],
) -> GameResult:
    """k-anonymity Shapley: which predictors expose each row, one that at most `k` rows share.

    A target is exposed on a set u of predictors when its cohort C_{t,u} (the rows similar to it on
    every predictor of u) holds at most `k` rows, itself included: k-anonymity fails for it there. The
    game v_k(t, u) = 1[|C_{t,u}| <= k] - 1[n <= k] is 0 for u = {}; its Shapley values split the
    target's exposure on all of its predictors, ``value`` = v_k(t, 1:d) (1 or 0), among them. With
    case weights, a cohort's size is its sum of weights. Other arguments are those of
    `uniqueness_shapley` (exact method; ``groups=`` and Owen values alike).

    Parameters
    ----------
    data
        The table (any input `cohort_shapley` reads).
    similarity
        Feature -> similarity kind, as for `cohort_shapley`.
    k
        The largest number of rows sharing a target's values that still exposes it.
    **options
        Those of `uniqueness_shapley`: ``id``, ``targets``, ``sample``, ``seed``, ``weight``, ``path``,
        ``groups``, ``group_values`` and where it runs.

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
    asked = checked_options(options, UniquenessOptions)
    game = KAnonymityGame(k)
    with open_session(data, asked, outcomes=(), similarity=similarity, max_features=MAX_EXACT_FEATURES) as session:
        return game_result(session, game, GameResult)
