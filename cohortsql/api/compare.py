"""TODO"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from cohortsql._typing import BATCH_ROWS, EngineName, Method, ModelInput, ModelOutput, SimilarityArgument, Targets
from cohortsql.api.baseline import baseline_shapley
from cohortsql.api.local import cohort_shapley
from cohortsql.errors import CohortError
from cohortsql.results.comparison import Comparison
from cohortsql.spec import arguments


def compare(
    data: Any,
    *,
    model: Any,
    prediction: str,
    similarity: SimilarityArgument,
    id: str | None = None,
    targets: Targets = None,
    sample: int | float | None = None,
    seed: int | None = None,
    baseline_sample: int | None = None,
    realistic: bool = True,
    method: Method = "exact",
    max_permutations: int = 200,
    tolerance: float | None = None,
    model_input: ModelInput = "pandas",
    model_output: ModelOutput = "prediction",
    batch_rows: int = BATCH_ROWS,
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    connection: Any = None,
    engine: EngineName | None = None,
) -> Comparison:
    """Cohort Shapley (CS), baseline Shapley (BS) and all-baseline Shapley (ABS), each with its squared
    version, on the same targets (paper, Section 5 and Appendix 4).

    CS explains the `prediction` column (the model's predictions, stored) over subjects similar
    under `similarity`; BS and ABS evaluate `model` at hybrid points of the same features, and with
    `realistic` (default) split each value by whether its hybrid points resemble some subject under
    the same kinds. A random `sample` of targets is drawn once (with `seed`) for all three. `method`,
    `max_permutations` and `tolerance` apply to all three (each method's own ``auto`` rule). Other
    arguments are those of `cohort_shapley` and `baseline_shapley`.
    """
    if not isinstance(prediction, str):
        raise CohortError(f"compare explains one prediction column (the model's), got {prediction!r}")
    seed = arguments.seed(seed)
    if (sample is not None or method != "exact") and seed is None:
        seed = int(np.random.default_rng().integers(2**31))
    shared: dict[str, Any] = dict(
        id=id,
        targets=targets,
        sample=sample,
        seed=seed,
        memory_limit=memory_limit,
        temp_directory=temp_directory,
        progress=progress,
        connection=connection,
        engine=engine,
        method=method,
        max_permutations=max_permutations,
        tolerance=tolerance,
    )
    cohort = cohort_shapley(data, prediction=prediction, similarity=similarity, **shared)
    model_options: dict[str, Any] = dict(
        model=model,
        features=similarity,
        realistic=realistic,
        model_input=model_input,
        model_output=model_output,
        batch_rows=batch_rows,
    )
    return Comparison(
        cohort=cohort,
        baseline=baseline_shapley(data, **model_options, baseline="mean", **shared),
        all_baseline=baseline_shapley(data, **model_options, baseline="all", baseline_sample=baseline_sample, **shared),
    )
