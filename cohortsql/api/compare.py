"""`cohortsql.compare`: cohort, baseline and all-baseline Shapley side by side on one session and one
sample of targets (paper, Section 5 and Appendix 4).
"""

from __future__ import annotations

from typing import Any, Unpack

import numpy as np

from cohortsql._typing import CompareOptions, SimilarityArgument
from cohortsql.api.baseline import (
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
from cohortsql.run.strategy import MAX_FEATURES, baseline_estimation
from cohortsql.spec.arguments import check_names, with_defaults


def compare(
    data: Any,
    *,
    model: Any,
    prediction: str,
    similarity: SimilarityArgument,
    **options: Unpack[CompareOptions],
) -> Comparison:
    """Cohort Shapley (CS), baseline Shapley (BS) and all-baseline Shapley (ABS), each with its squared
    version, on the same targets (paper, Section 5 and Appendix 4).

    CS explains the `prediction` column (the model's predictions, stored) over subjects similar
    under `similarity`; BS and ABS evaluate `model` at hybrid points of the same features, and with
    `realistic` (default) split each value by whether its hybrid points resemble some subject under
    the same kinds. A random `sample` of targets is drawn once (with `seed`) for all three. `method`,
    `max_permutations` and `tolerance` apply to all three (each method's own ``auto`` rule). Other
    arguments are those of `cohort_shapley` and `baseline_shapley`.

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
    >>> def model(frame):  # the scoring model: a function of a frame of feature values
    ...     return 1.0 - frame["income"].to_numpy() / 100
    >>> both = cohortsql.compare(loans, model=model, prediction="score", similarity=similarity, model_input="polars")
    >>> both.global_.filter(pl.col("method") == "CS2").select("feature", pl.col("share").round(3)).rows()
    [('income', 0.878), ('region', 0.122)]
    """
    asked = with_defaults(options, CompareOptions, realistic=True)
    (
        id,
        targets,
        sample,
        seed,
        baseline_sample,
        realistic,
        method,
        max_permutations,
        tolerance,
        model_input,
        model_output,
        batch_rows,
    ) = (
        asked[name]
        for name in (
            "id",
            "targets",
            "sample",
            "seed",
            "baseline_sample",
            "realistic",
            "method",
            "max_permutations",
            "tolerance",
            "model_input",
            "model_output",
            "batch_rows",
        )
    )
    if not isinstance(prediction, str):
        raise CohortError(f"compare explains one prediction column (the model's), got {prediction!r}")
    max_permutations, tolerance, seed = estimation_arguments(method, max_permutations, tolerance, seed)
    seed = baseline_sample_arguments("all", baseline_sample, seed)
    function, batch_rows = model_arguments(model, model_input, model_output, batch_rows, realistic)
    check_names(id, None, asked.get("memory_limit"))
    if (sample is not None or method != "exact") and seed is None:
        seed = int(np.random.default_rng().integers(2**31))
    with open_session(
        data,
        asked,
        outcomes=(prediction,),
        similarity=similarity,
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
