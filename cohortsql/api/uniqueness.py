"""TODO"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from cohortsql._typing import PATHS, CohortPath, EngineName, SimilarityArgument, Targets
from cohortsql.errors import check_choice
from cohortsql.results.uniqueness import UniquenessResult
from cohortsql.run.grouping_sets import uniqueness_of_cells
from cohortsql.run.pairwise import uniqueness_batches
from cohortsql.run.progress import reporter
from cohortsql.run.session import described_settings, opened_engine, prepare_call, result_fields
from cohortsql.run.strategy import MAX_EXACT_FEATURES, choose_path, make_pacer
from cohortsql.run.targets import read_target_data, select_targets
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
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    connection: Any = None,
    engine: EngineName | None = None,
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
    check_names(id, weight, memory_limit)
    with opened_engine(data, engine, connection, memory_limit, temp_directory) as running:
        prepared = prepare_call(running, data, (), similarity, id, weight, targets, MAX_EXACT_FEATURES, 0, 0)
        chosen = select_targets(running, prepared, targets, seed, sample)
        target_data = read_target_data(running, prepared, chosen)
        settings = described_settings(
            running, prepared, chosen, method="exact", path=path, targets=targets, sample=sample, seed=seed
        )
        chosen_path = choose_path(path, prepared, chosen.count)
        pacer = make_pacer(running, prepared, chosen, "exact", chosen_path, reporter(progress))
        batches = (uniqueness_of_cells if chosen_path == "grouping_sets" else uniqueness_batches)(
            running, prepared, chosen, pacer
        )
        phi, value, size = (np.concatenate(arrays)[chosen.group] for arrays in zip(*batches))
    common = result_fields(prepared, chosen, target_data, None)
    return UniquenessResult(
        ids=common["ids"],
        features=common["features"],
        similarity=common["similarity"],
        subjects=prepared.subject_count,
        total_weight=prepared.total_weight if prepared.weight is not None else None,
        uniqueness=phi,
        value=value,
        cohort_size=size if prepared.weight is not None else np.rint(size).astype(np.int64),
        targets=target_data,
        weights=common["weights"],
        path=chosen_path,
        settings={**settings, "path": chosen_path},
    )
