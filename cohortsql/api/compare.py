"""TODO"""

from __future__ import annotations

from typing import Any, Unpack

import numpy as np

from cohortsql._typing import BATCH_ROWS, Method, ModelInput, ModelOutput, RunOptions, SimilarityArgument, Targets
from cohortsql.api.baseline import (
    baseline_estimation,
    baseline_sample_arguments,
    estimation_arguments,
    explain_with_model,
    model_arguments,
)
from cohortsql.api.local import explain_targets
from cohortsql.errors import CohortError
from cohortsql.results.comparison import Comparison
from cohortsql.results.tables import warn_about_singletons
from cohortsql.run.session import open_session
from cohortsql.run.strategy import MAX_FEATURES
from cohortsql.spec.arguments import check_names


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
    **options: Unpack[RunOptions],
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
    max_permutations, tolerance, seed = estimation_arguments(method, max_permutations, tolerance, seed)
    seed = baseline_sample_arguments("all", baseline_sample, seed)
    function, batch_rows = model_arguments(model, model_input, model_output, batch_rows, realistic)
    check_names(id, None, options.get("memory_limit"))
    if (sample is not None or method != "exact") and seed is None:
        seed = int(np.random.default_rng().integers(2**31))
    with open_session(
        data,
        options,
        outcomes=(prediction,),
        similarity=similarity,
        id=id,
        targets=targets,
        max_features=MAX_FEATURES,
    ) as session:
        chosen = session.select(targets, seed, sample)  # one sample of targets for all three methods
        (cohort,) = explain_targets(
            session,
            chosen,
            method=method,
            path="auto",
            seed=seed,
            max_permutations=max_permutations,
            tolerance=tolerance,
            confidence=0.95,
            asked=dict(targets=targets, sample=sample, seed=seed),
        ).values()
        estimation = baseline_estimation(method, session.prepared.d)
        shared: dict[str, Any] = dict(
            realistic=realistic,
            seed=seed,
            estimation=estimation,
            max_permutations=max_permutations,
            tolerance=tolerance,
            model_input=model_input,
            batch_rows=batch_rows,
            asked=dict(model_output=model_output, targets=targets, sample=sample),
        )
        baseline = explain_with_model(session, chosen, function, baseline="mean", baseline_sample=None, **shared)
        all_baseline = explain_with_model(
            session, chosen, function, baseline="all", baseline_sample=baseline_sample, **shared
        )
    warn_about_singletons(cohort.diagnostics)
    return Comparison(cohort=cohort, baseline=baseline, all_baseline=all_baseline)
