"""`cohortsql.estimate`: the plan of a run and its time, from a timed pilot batch (``--dry-run``)."""

from __future__ import annotations

from typing import Any, Unpack

from cohortsql._typing import (
    Prediction,
    ShapleyOptions,
)
from cohortsql.request.arguments import explained_columns
from cohortsql.request.options import checked_options
from cohortsql.request.similarity import SimilarityArgument
from cohortsql.run.interrupts import interruptible_call
from cohortsql.run.pace import Plan
from cohortsql.run.progress import Silent
from cohortsql.run.session import open_session
from cohortsql.run.strategy import MAX_FEATURES, choose_method_and_path, local_batches, make_pacer


@interruptible_call
def estimate(
    data: Any,
    *,
    prediction: Prediction,
    similarity: SimilarityArgument,
    **options: Unpack[ShapleyOptions],
) -> Plan:
    """What `cohort_shapley` with these arguments would do and how long it should take: the data are
    read and checked, the targets chosen, and one small pilot batch computed and timed (``--dry-run``).

    Parameters
    ----------
    data, prediction, similarity
        What `cohort_shapley` would explain, given as to it.
    **options
        Every option of `cohort_shapley` (`ShapleyOptions`).

    Returns
    -------
    Plan
        The plan (targets, features, method, path, engine) and the pilot batch's time, which gives the estimate.

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> similarity = {"income": "abs:15", "region": "exact"}
    >>> plan = cohortsql.estimate(loans, prediction="score", similarity=similarity)
    >>> plan.targets, plan.method, plan.path
    (12, 'exact', 'pairwise')
    """
    asked = checked_options(options, ShapleyOptions)
    outcomes = explained_columns(prediction)
    with open_session(data, asked, outcomes=outcomes, similarity=similarity, max_features=MAX_FEATURES) as session:
        running, prepared = session.engine, session.prepared
        chosen = session.select()
        estimation = asked.estimation
        chosen_method, chosen_path = choose_method_and_path(estimation.method, estimation.path, prepared, chosen.count)
        pacer = make_pacer(running, prepared, chosen, chosen_method, chosen_path, Silent(), pilot_only=True)
        batches = local_batches(
            running,
            prepared,
            chosen,
            chosen_method,
            chosen_path,
            pacer,
            asked.selection.seed,
            estimation.max_permutations,
            None,
        )
        pilot = sum(
            len(batch[0]) if isinstance(batch, list) else len(batch.shapley) // max(1, prepared.measures.games)
            for batch in batches
        )
    return Plan(
        targets=chosen.count,
        distinct_targets=chosen.distinct.num_rows,
        subjects=prepared.subject_count,
        subject_rows=prepared.subject_rows,
        features=prepared.d,
        players=prepared.players,
        method=chosen_method,
        path=chosen_path,
        engine=running.dialect.name,
        pilot_targets=pilot,
        pilot_seconds=sum(seconds for _, seconds in pacer.timed),
        estimated_seconds=sum(seconds for _, seconds in pacer.timed) + (pacer.remaining_seconds(pilot) or 0.0),
        replicates=prepared.measures.replicates,
    )
