"""`cohortsql.compare`: cohort, baseline and all-baseline Shapley side by side on one session and one
sample of targets (paper, Section 5 and Appendix 4).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack

from cohortsql._typing import CompareOptions
from cohortsql.api.baseline import check_model, explain_with_model
from cohortsql.api.local import explain_targets
from cohortsql.errors import CohortError
from cohortsql.formats.tables import warn_about_cohorts
from cohortsql.games.baseline.models import model_function
from cohortsql.interrupts import interruptible_call
from cohortsql.request.arguments import drawn_seed
from cohortsql.request.options import Options, checked_options
from cohortsql.request.similarity import SimilarityArgument
from cohortsql.results.comparison import Comparison
from cohortsql.run.baseline_exact import Model
from cohortsql.run.session import compared_exactly, open_session
from cohortsql.run.strategy import MAX_FEATURES, may_draw, model_route


@interruptible_call
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

    The model must reproduce `prediction` on the targets (within `model_tolerance`), or the call is
    refused before anything is computed: otherwise BS and ABS would explain a different function than
    CS (a classifier's 0/1 labels against stored probabilities; `model_output="probability"` fixes that).

    Parameters
    ----------
    data
        The table: any input `cohort_shapley` reads.
    model
        The fitted model whose stored predictions are `prediction` (a callable, or an object with ``predict`` / ``predict_proba``).
    prediction
        The column of the model's stored predictions, explained by cohort Shapley.
    similarity
        Feature -> similarity kind, or a list of features with default kinds (as for `cohort_shapley`).
    **options
        Which rows, the method, how the model is called, groups and where it runs (`CompareOptions`; the options of `cohort_shapley` with the same names mean the same):
        ``id``, ``targets``, ``sample``, ``seed``, ``method``, ``tolerance``, ``max_permutations``, ``model_input``, ``model_output``, ``model_tolerance``, ``batch_rows``, ``baseline_sample``, ``realistic``, ``groups``, ``group_values`` and the `RunOptions`.

    Returns
    -------
    Comparison
        CS, CS2, BS, BS2, ABS and ABS2 for the same targets.

    Examples
    --------
    >>> import cohortsql
    >>> model = cohortsql.datasets.loans_model  # 1 - income / 100, + 0.05 in the south
    >>> both = cohortsql.compare(
    ...     cohortsql.datasets.loans(), model=model, prediction="score", model_input="polars",
    ...     similarity={"income": "abs:15", "region": "exact"},
    ... )
    >>> shares = both.global_.filter(method="CS2")
    >>> dict(zip(shares["feature"], shares["share"].round(3)))
    {'income': 0.846, 'region': 0.154}
    """
    asked, function = checked_comparison(options, prediction, model)
    with open_session(data, asked, outcomes=(prediction,), similarity=similarity, max_features=MAX_FEATURES) as session:
        chosen = session.select()  # one sample of targets for all three methods
        check_model(session, chosen, model)  # BS and ABS must explain the function CS explains
        (cohort,) = explain_targets(session, chosen).values()
        route = model_route(asked.estimation.method, session.prepared.players)
        baseline = explain_with_model(session, chosen, function, baseline="mean", route=route)
        all_baseline = explain_with_model(session, chosen, function, baseline="all", route=route)
        exactly = compared_exactly(session.prepared)
    warn_about_cohorts(cohort.diagnostics, cohort.kinds, exactly)
    return Comparison(cohort=cohort, baseline=baseline, all_baseline=all_baseline)


def checked_comparison(options: Mapping[str, Any], prediction: object, model: Any) -> tuple[Options, Model]:
    """`compare`'s checked options and its model as a function (`estimate_compare` checks alike). CS,
    BS and ABS share one seed, drawn here when none is given and chance is involved: one sample of
    targets, and permutations that can be repeated."""
    asked = checked_options(options, CompareOptions, realistic=True)
    if not isinstance(prediction, str):
        raise CohortError(f"compare explains one prediction column (the model's), got {prediction!r}")
    function = model_function(model, asked.modelling.model_output)
    random = asked.selection.sample is not None or may_draw(asked.estimation.method)
    return asked.with_seed(drawn_seed(asked.selection.seed, random)), function
