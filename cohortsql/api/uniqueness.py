"""TODO"""

from __future__ import annotations

from typing import Any, Unpack

import numpy as np

from cohortsql._typing import PATHS, CohortPath, RunOptions, SimilarityArgument, Targets
from cohortsql.errors import check_choice
from cohortsql.results.uniqueness import UniquenessResult
from cohortsql.run.grouping_sets import uniqueness_of_cells
from cohortsql.run.pairwise import uniqueness_batches
from cohortsql.run.session import open_session
from cohortsql.run.strategy import MAX_EXACT_FEATURES, choose_path, make_pacer
from cohortsql.spec import arguments
from cohortsql.spec.arguments import check_names


def uniqueness_shapley(
    data: Any,
    *,
    similarity: SimilarityArgument,
    id: str | None = None,
    weight: str | None = None,
    targets: Targets = None,
    sample: int | float | None = None,
    seed: int | None = None,
    path: CohortPath = "auto",
    **options: Unpack[RunOptions],
) -> UniquenessResult:
    """Uniqueness Shapley (Seiler, Mase & Owen): how identifiable each target is, split over its predictors.

    The game v_U(t, u) = -log(|C_{t,u}| / n) is the information (in nats) that the target's values
    on u give about which row it is; its Shapley values add up to -log(|C_{t,1:d}| / n), which is
    log(n) for a target unique in the table. A privacy audit from the same cohort counts as
    `cohort_shapley`, with no explained column. With case weights, sizes are sums of weights.
    Other arguments are those of `cohort_shapley` (exact method).
    """
    check_choice("path", path, PATHS)
    seed = arguments.seed(seed)
    check_names(id, weight, options.get("memory_limit"))
    with open_session(
        data,
        options,
        outcomes=(),
        similarity=similarity,
        id=id,
        weight=weight,
        targets=targets,
        max_features=MAX_EXACT_FEATURES,
        replicates=0,
        seed=0,
    ) as session:
        running, prepared = session.engine, session.prepared
        chosen = session.select(targets, seed, sample)
        settings = session.settings(chosen, method="exact", path=path, targets=targets, sample=sample, seed=seed)
        chosen_path = choose_path(path, prepared, chosen.count)
        pacer = make_pacer(running, prepared, chosen, "exact", chosen_path, session.reporter())
        batches = (uniqueness_of_cells if chosen_path == "grouping_sets" else uniqueness_batches)(
            running, prepared, chosen, pacer
        )
        phi, value, size = (np.concatenate(arrays)[chosen.group] for arrays in zip(*batches))
        fields = session.result_fields(chosen, None)
    return UniquenessResult(
        **fields,
        total_weight=prepared.total_weight if prepared.weight is not None else None,
        shapley=phi,
        value=value,
        cohort_size=size if prepared.weight is not None else np.rint(size).astype(np.int64),
        path=chosen_path,
        settings={**settings, "path": chosen_path},
    )
