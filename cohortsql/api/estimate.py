"""TODO"""

from __future__ import annotations

from typing import Any, Unpack

from cohortsql._typing import (
    METHODS,
    PATHS,
    CohortPath,
    Method,
    Prediction,
    RunOptions,
    SimilarityArgument,
    Targets,
)
from cohortsql.errors import check_choice
from cohortsql.run.pace import Plan
from cohortsql.run.progress import Silent
from cohortsql.run.session import open_session
from cohortsql.run.strategy import MAX_FEATURES, choose_method, choose_path, local_batches, make_pacer
from cohortsql.spec import arguments
from cohortsql.spec.arguments import bootstrap_arguments, check_names, explained_columns


def estimate(
    data: Any,
    *,
    prediction: Prediction,
    similarity: SimilarityArgument,
    id: str | None = None,
    weight: str | None = None,
    targets: Targets = None,
    sample: int | float | None = None,
    method: Method = "exact",
    seed: int | None = None,
    bootstrap: int = 0,
    max_permutations: int = 200,
    path: CohortPath = "auto",
    **options: Unpack[RunOptions],
) -> Plan:
    """What `cohort_shapley` with these arguments would do and how long it should take: the data are
    read and checked, the targets chosen, and one small pilot batch computed and timed (``--dry-run``)."""
    outcomes = explained_columns(prediction)
    check_choice("method", method, METHODS)
    check_choice("path", path, PATHS)
    seed = arguments.seed(seed)
    max_permutations = arguments.whole_number("max_permutations", max_permutations, minimum=2)
    replicates, _, seed = bootstrap_arguments(bootstrap, 0.95, seed)
    check_names(id, weight, options.get("memory_limit"))
    with open_session(
        data,
        options,
        outcomes=outcomes,
        similarity=similarity,
        id=id,
        weight=weight,
        targets=targets,
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
