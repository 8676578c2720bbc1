"""`cohortsql.uniqueness_shapley`: which features make each row identifiable (a privacy audit)."""

from __future__ import annotations

from typing import Any, Unpack

from cohortsql._typing import UniquenessOptions
from cohortsql.api.games import game_shapley
from cohortsql.games.uniqueness import UniquenessGame
from cohortsql.interrupts import interruptible_call
from cohortsql.request.similarity import SimilarityArgument
from cohortsql.results.uniqueness import UniquenessResult


@interruptible_call
def uniqueness_shapley(
    data: Any,
    *,
    similarity: SimilarityArgument,
    **options: Unpack[UniquenessOptions],
) -> UniquenessResult:
    """Uniqueness Shapley (Seiler, Mase & Owen): how identifiable each target is, split over its predictors.

    The game v_U(t, u) = -log(|C_{t,u}| / n) is the information (in nats) that the target's values
    on u give about which row it is; its Shapley values add up to -log(|C_{t,1:d}| / n), which is
    log(n) for a target unique in the table. A privacy audit from the same cohort counts as
    `cohort_shapley`, with no explained column. With case weights, sizes are sums of weights. With
    ``groups=`` each group is one player, and ``group_values="owen"`` adds each feature's Owen value
    (``owen``, ``owen_table``).
    Every method and option of `game_shapley` (``game="uniqueness"``) applies: permutation estimates,
    bootstrap intervals, interaction values.

    Parameters
    ----------
    data
        The table: any input `cohort_shapley` reads.
    similarity
        Feature -> similarity kind, or a list of features with default kinds (as for `cohort_shapley`).
    **options
        Those of `game_shapley` (`UniquenessOptions`; the options of `cohort_shapley` with the same names mean the same).

    Returns
    -------
    UniquenessResult
        Each target's values, in nats, adding up to ``value`` = -log(|C_{t,1:d}| / n).

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> similarity = {"income": "abs:15", "region": "exact"}
    >>> privacy = cohortsql.uniqueness_shapley(loans, similarity=similarity)
    >>> privacy.shapley[0].round(4).tolist(), round(float(privacy.value[0]), 4)  # log(12): target 0 is unique
    ([1.4452, 1.0397], 2.4849)
    """
    result = game_shapley(data, game=UniquenessGame(), similarity=similarity, **options)
    assert isinstance(result, UniquenessResult)
    return result
