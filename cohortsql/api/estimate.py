"""`cohortsql.estimate`: the plan of a run and its time, from a timed pilot batch (``--dry-run``)."""

from __future__ import annotations

from typing import Any, Unpack

from cohortsql._typing import (
    METHODS,
    PATHS,
    Prediction,
    ShapleyOptions,
    SimilarityArgument,
)
from cohortsql.errors import check_choice
from cohortsql.run.pace import Plan
from cohortsql.run.progress import Silent
from cohortsql.run.session import open_session
from cohortsql.run.strategy import MAX_FEATURES, choose_method, choose_path, local_batches, make_pacer
from cohortsql.spec import arguments
from cohortsql.spec.arguments import bootstrap_arguments, check_names, explained_columns, with_defaults


def estimate(
    data: Any,
    *,
    prediction: Prediction,
    similarity: SimilarityArgument,
    **options: Unpack[ShapleyOptions],
) -> Plan:
    """What `cohort_shapley` with these arguments would do and how long it should take: the data are
    read and checked, the targets chosen, and one small pilot batch computed and timed (``--dry-run``).

    Examples
    --------
    >>> import polars as pl
    >>> import cohortsql
    >>> loans = pl.DataFrame({
    ...     "income": [21, 35, 48, 52, 60, 75, 90, 33, 41, 66, 58, 27],
    ...     "region": ["n", "s", "n", "s", "n", "s", "n", "s", "n", "s", "n", "s"],
    ...     "score": [0.9, 0.7, 0.5, 0.45, 0.3, 0.2, 0.1, 0.65, 0.55, 0.25, 0.35, 0.8],
    ... })
    >>> similarity = {"income": "abs:15", "region": "exact"}
    >>> plan = cohortsql.estimate(loans, prediction="score", similarity=similarity)
    >>> plan.targets, plan.method, plan.path
    (12, 'exact', 'pairwise')
    """
    asked = with_defaults(options, ShapleyOptions)
    id, weight, targets, sample, method, seed, bootstrap, max_permutations, path = (
        asked[name]
        for name in ("id", "weight", "targets", "sample", "method", "seed", "bootstrap", "max_permutations", "path")
    )
    outcomes = explained_columns(prediction)
    check_choice("method", method, METHODS)
    check_choice("path", path, PATHS)
    seed = arguments.seed(seed)
    max_permutations = arguments.whole_number("max_permutations", max_permutations, minimum=2)
    replicates, _, seed = bootstrap_arguments(bootstrap, 0.95, seed)
    check_names(id, weight, asked.get("memory_limit"))
    with open_session(
        data,
        asked,
        outcomes=outcomes,
        similarity=similarity,
        max_features=MAX_FEATURES,
        replicates=replicates,
        seed=seed,
    ) as session:
        running, prepared = session.engine, session.prepared
        chosen = session.select(targets, seed, sample)
        chosen_method = choose_method(method, prepared.d)
        chosen_path = "pairwise" if chosen_method == "permutation" else choose_path(path, prepared, chosen.count)
        pacer = make_pacer(running, prepared, chosen, chosen_method, chosen_path, Silent(), pilot_only=True)
        batches = local_batches(
            running, prepared, chosen, chosen_method, chosen_path, pacer, seed, max_permutations, None
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
        method=chosen_method,
        path=chosen_path,
        engine=running.dialect.name,
        pilot_targets=pilot,
        pilot_seconds=(pacer.seconds_per_target or 0.0) * pilot,
    )
