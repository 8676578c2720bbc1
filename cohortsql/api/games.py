"""`cohortsql.game_shapley`: Shapley values of any game of cohorts, named or given, by every method."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Unpack

import numpy as np

from cohortsql._typing import GameOptions
from cohortsql.api.nulls import null_references, shares_by_player
from cohortsql.errors import CohortError
from cohortsql.games.base import Game
from cohortsql.games.registry import game_of
from cohortsql.interrupts import interruptible_call
from cohortsql.request.arguments import drawn_seed
from cohortsql.request.options import checked_options
from cohortsql.request.similarity import SimilarityArgument
from cohortsql.results.uniqueness import GameResult
from cohortsql.run.readouts import game_result
from cohortsql.run.session import Session, open_session
from cohortsql.run.strategy import MAX_EXACT_FEATURES, MAX_FEATURES, may_draw


@interruptible_call
def game_shapley(
    data: Any,
    *,
    game: str | Game,
    similarity: SimilarityArgument,
    prediction: str | None = None,
    **options: Unpack[GameOptions],
) -> GameResult:
    """Shapley values of any game of cohorts: v(t, u) a function of the cohort C_{t,u} alone.

    `game` names one (``NAME`` or ``NAME:PARAMETER``) or is a `cohortsql.games.base.Game`:

    - ``uniqueness``: v_U(t, u) = -log(|C_{t,u}| / n), how identifiable the target is
      (`uniqueness_shapley`);
    - ``k-anonymity:K``: 1 when at most K rows share the target's values on u (`kanonymity_shapley`);
    - ``cohort-variance``: Var_{C_{t,u}}(y) - Var(y) of the `prediction` column, which predictors make
      the score of people like the target predictable (negative: less spread among them).

    Every game gets what the cohort game gets: exact values on either path (as many players as
    `cohort_shapley`'s exact method takes) or permutation estimates with standard errors
    (``method="permutation"``), Bayesian-bootstrap intervals
    (``bootstrap=B``, exact: ``shapley_ci_low`` .. ``_high``), interaction values
    (``interactions=True``, exact), groups of features as players and their Owen values, on every
    engine.

    Parameters
    ----------
    data
        The table: any input `cohort_shapley` reads.
    game
        The game's name (``uniqueness``, ``k-anonymity``, ``k-anonymity:3``, ``cohort-variance``) or a `Game`.
    similarity
        Feature -> similarity kind, or a list of features with default kinds (as for `cohort_shapley`).
    prediction
        The explained column, for a game that reads one (``cohort-variance``); left out for games of
        cohort sizes.
    **options
        ``id``, ``targets``, ``sample``, ``seed``, ``weight``, ``bootstrap``, ``confidence``, ``method``,
        ``tolerance``, ``max_permutations``, ``path``, ``interactions``, ``groups``, ``group_values`` and
        the `RunOptions` (`GameOptions`; as `cohort_shapley`'s of the same names).

    Returns
    -------
    GameResult
        ``shapley`` (targets x features) adding up to ``value`` = v(t, 1:d) for each target, with
        ``shapley_se``, ``shapley_ci_low`` .. ``_high``, ``interactions`` and ``owen`` as asked.

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> spread = cohortsql.game_shapley(loans, game="cohort-variance", prediction="score", similarity=["income", "region"])
    >>> bool(abs(spread.shapley.sum(axis=1) - spread.value).max() < 1e-12)  # efficiency
    True
    """
    chosen = game_of(game)
    if chosen.powers and prediction is None:
        raise CohortError(f"the {chosen} game explains a column: name it with prediction=")
    if not chosen.powers and prediction is not None:
        raise CohortError(f"the {chosen} game reads the cohorts' sizes alone: leave out prediction={prediction!r}")
    if prediction is not None and not isinstance(prediction, str):
        raise CohortError(f"game_shapley explains one column: prediction must be a column name, got {prediction!r}")
    asked = checked_options(options, GameOptions)
    random = may_draw(asked.estimation.method)
    asked = asked.with_seed(drawn_seed(asked.selection.seed, random))
    with open_session(
        data,
        asked,
        outcomes=() if prediction is None else (prediction,),
        similarity=similarity,
        max_features=MAX_FEATURES if random else MAX_EXACT_FEATURES,
        powers=chosen.powers,
    ) as session:
        result = game_result(session, chosen)
        nulls = null_references(
            session, lambda copy: _shares(copy, game_result(copy, chosen)), _shares(session, result)
        )
        return result if nulls is None else replace(result, null=nulls[0])


def _shares(session: Session, result: GameResult) -> np.ndarray:
    """The game's share of each player (its ``global_``), (1, players) in the session's players' order."""
    return shares_by_player([result.global_], session.prepared.player_names)


def reads_a_column(game: str | Game) -> bool:
    """Whether `game` (a name or a `Game`) explains a column (``prediction=``), or reads cohort sizes alone."""
    return bool(game_of(game).powers)
