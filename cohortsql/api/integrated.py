"""Integrated gradient cohort Shapley for cohort Shapley's calls (``method="integrated"``; Hama, Mase &
Owen, "Model free variable importance for high dimensional data", 2022), and the insertion and
deletion tests of any attribution (Hama, Mase & Owen, "Deletion and insertion tests in regression
models", 2022): `insertion_deletion`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql._typing import InsertionOptions, TableOptions
from cohortsql.errors import CohortError
from cohortsql.interrupts import interruptible_call
from cohortsql.numeric import bootstrap as bootstrap_module
from cohortsql.numeric.local_values import LocalValues
from cohortsql.request.arguments import explained_columns
from cohortsql.request.options import Terms, checked_options
from cohortsql.request.similarity import SimilarityArgument
from cohortsql.results.cohort import CohortShapleyResult, value_fields
from cohortsql.results.insertion import (
    InsertionDeletion,
    area_between,
    as_frame,
    attribution_matrix,
    ranks_of,
    register_tester,
)
from cohortsql.run.integrated import IntegratedBatch, refinement_curves, subjects_of
from cohortsql.run.preparation import Prepared
from cohortsql.run.session import Session, open_session
from cohortsql.run.strategy import MAX_INTEGRATED_FEATURES
from cohortsql.run.targets import TargetSet


def check_integrated(terms: Terms, prepared: Prepared) -> None:
    """What the integrated method does not give, refused in words: its values come from one path
    through the cube of soft cohorts, not from the lattice of cohorts that interactions, anchored
    terms and Owen values read."""
    asked = [
        name
        for name, wanted in (
            ("interactions=True", terms.interactions),
            (f"anchored={terms.anchored}", terms.anchored),
            ('group_values="owen"', prepared.groups is not None and prepared.groups.values == "owen"),
        )
        if wanted
    ]
    if asked:
        raise CohortError(
            f"{asked[0]} needs the lattice of cohorts, which method='integrated' does not visit: use"
            " method='exact' (up to 24 features) or 'permutation' (interactions, up to 128), or leave it out"
        )


def integrated_fields(
    session: Session, chosen: TargetSet, batches: list[IntegratedBatch]
) -> tuple[list[LocalValues], list[bootstrap_module.Bootstrap | None], int]:
    """Per outcome, the result's value fields (IGCS and its squared variant, the full cohorts, each
    player's cohort alone, and the refinement path along each target's order of |IGCS|), its bootstrap
    replicates' intervals, and how many nodes the integration took (the most of any batch)."""
    measures = session.prepared.measures
    if not batches:
        raise CohortError("no targets to explain")
    values = np.concatenate([batch.values.shapley for batch in batches])
    squared = np.concatenate([batch.values.shapley_squared for batch in batches])
    means = np.concatenate([batch.values.cohort_mean for batch in batches])
    weights = np.concatenate([batch.weights for batch in batches])
    order, path_weight, path_mean = (
        np.concatenate([getattr(batch, name) for batch in batches]) for name in ("order", "path_weight", "path_mean")
    )
    group = chosen.group
    fields, intervals = [], []
    for outcome in range(measures.outcomes):
        own = measures.game(outcome, 0)
        fields.append(
            LocalValues(
                shapley=values[:, own][group],
                shapley_squared=squared[:, own][group],
                cohort_size=weights[:, 0, 0][group],
                cohort_mean=means[:, own][group],
                feature_cohort_size=weights[:, 0, 1:][group],
                path_order=order[:, outcome][group],
                path_size=path_weight[:, outcome][group],
                path_mean=path_mean[:, outcome][group],
            )
        )
        intervals.append(_replicates(session, chosen, values, squared, outcome))
    return fields, intervals, max(batch.values.nodes for batch in batches)


def _replicates(
    session: Session, chosen: TargetSet, values: np.ndarray, squared: np.ndarray, outcome: int
) -> bootstrap_module.Bootstrap | None:
    """The outcome's Bayesian-bootstrap replicates: each target's IGCS under every replicate weighting
    (more sums of the same histogram), their percentile intervals, and the replicates' effects (the
    targets' mean of the squared variant under each replicate's target weights)."""
    measures = session.prepared.measures
    if not measures.replicates:
        return None
    first = measures.game(outcome, 1)
    phi = values[:, first : first + measures.replicates][chosen.group]  # (targets, B, players)
    phi2 = squared[:, first : first + measures.replicates][chosen.group]
    confidence = session.options.weighting.confidence
    low, high = bootstrap_module.percentile_interval(phi, confidence, 1)
    squared_low, squared_high = bootstrap_module.percentile_interval(phi2, confidence, 1)
    target_weights = chosen.weights[:, 1:]
    effects = np.einsum("tb,tbp->bp", target_weights, phi2) / target_weights.sum(axis=0)[:, None]
    intervals = (low, high, squared_low, squared_high)
    kept = (phi.astype(np.float32), phi2.astype(np.float32))
    return bootstrap_module.Bootstrap.of(
        measures.replicates, measures.seed, confidence, intervals, effects, target_weights, kept
    )


def explain_integrated(
    session: Session, chosen: TargetSet, batches: list[IntegratedBatch]
) -> dict[str, CohortShapleyResult]:
    """`cohort_shapley`'s result of every explained column by the integrated method."""
    prepared = session.prepared
    check_integrated(session.options.terms, prepared)
    fields, intervals, nodes = integrated_fields(session, chosen, batches)
    settings = session.settings(chosen, method="integrated", path="integrated") | {"integration_nodes": nodes}
    return {
        outcome: CohortShapleyResult(
            **session.result_fields(chosen, index),
            **value_fields(fields[index], prepared.pilots[index], counted=prepared.weight is None),
            method="integrated",
            path="integrated",
            settings={**settings, "prediction": outcome},
            bootstrap=intervals[index],
        )
        for index, outcome in enumerate(prepared.outcomes)
    }


@register_tester
@interruptible_call
def insertion_deletion(
    data: Any,
    *,
    prediction: str,
    similarity: SimilarityArgument,
    attributions: Any,
    **options: Unpack[InsertionOptions],
) -> InsertionDeletion:
    """The insertion and deletion tests of an attribution, in cohorts (observational; Hama, Mase & Owen,
    "Deletion and insertion tests in regression models", 2022), exactly, for every target of
    `attributions`.

    Each target's features are ordered by attribution, largest first (ties in the features' order).
    The insertion curve is the cohort mean after the first m features are required to be similar (m =
    0: every subject; m = d: the full cohort); the deletion curve starts from the full cohort and stops
    requiring them in the same order. A subject is in the insertion cohort at step m when the smallest
    rank of a feature it is not similar on exceeds m, and in the deletion cohort when the largest is at
    most m: one GROUP BY target, rank each, O(n d) per target. The areas are the authors': with
    AUC = (sum of the d + 1 points - (p_0 + p_d) / 2) / d, ABC = AUC - (p_0 + p_d) / 2, negated for
    deletion, so that for both larger is better.

    Parameters
    ----------
    data, prediction, similarity
        The table, the explained column and the features, as `cohort_shapley` takes them.
    attributions
        What to test: a `cohort_shapley` result (any method), or a table of columns ``id``, ``feature``
        and ``value`` (or ``shapley``), e.g. a model's SHAP values; every target needs every feature.
    **options
        ``id`` (the column the attributions' ids are of), ``weight``, and the `RunOptions`.

    Returns
    -------
    InsertionDeletion
        ``abc`` (id, insertion_abc, deletion_abc) and ``curves`` (id, step, feature, insertion, deletion).

    Examples
    --------
    >>> import cohortsql
    >>> similarity = {"income": "abs:15", "region": "exact"}
    >>> loans = cohortsql.datasets.loans()
    >>> res = cohortsql.cohort_shapley(loans, prediction="score", similarity=similarity, method="integrated")
    >>> tests = cohortsql.insertion_deletion(loans, prediction="score", similarity=similarity, attributions=res)
    >>> tests.abc.columns
    ['id', 'insertion_abc', 'deletion_abc']
    """
    explained_columns(prediction, several=False)
    for name in ("targets", "sample"):
        if options.get(name) is not None:
            raise CohortError(f"insertion_deletion tests the attributions' own targets: leave {name}= out")
    ids = _attribution_ids(attributions)
    asked = checked_options({**options, "targets": ids}, TableOptions)
    with open_session(
        data, asked, outcomes=(prediction,), similarity=similarity, max_features=MAX_INTEGRATED_FEATURES
    ) as session:
        prepared, engine = session.prepared, session.engine
        chosen = session.select()
        target_ids = pl.Series("id", chosen.table.column("__cohort_id"))
        ranks = ranks_of(attribution_matrix(attributions, target_ids, prepared.player_names))
        subjects = subjects_of(engine, prepared, chosen.table)
        parts = []
        for start in range(0, chosen.count, CURVE_BATCH):
            rows = chosen.table.slice(start, CURVE_BATCH)
            batch = rows.append_column("__cohort_batch", pa.array(np.arange(rows.num_rows, dtype=np.int32)))
            parts.append(
                refinement_curves(engine, prepared, subjects, start, batch, ranks[start : start + rows.num_rows])
            )
        settings = session.settings(chosen, method="insertion_deletion", path="integrated")
    offset = prepared.pilots[0]
    inserted = np.concatenate([part.insertion[:, 0] for part in parts]) + offset
    deleted = np.concatenate([part.deletion[:, 0] for part in parts]) + offset
    sizes = [
        np.concatenate([getattr(part, name) for part in parts]) for name in ("insertion_weight", "deletion_weight")
    ]
    return InsertionDeletion(
        abc=pl.DataFrame(
            {"id": target_ids, "insertion_abc": area_between(inserted), "deletion_abc": -area_between(deleted)}
        ),
        curves=_curves(target_ids, ranks, prepared.player_names, inserted, deleted, sizes),
        features=tuple(prepared.player_names),
        outcome=prediction,
        settings=settings,
    )


CURVE_BATCH = 1_000
"""Targets per query of the refinement curves (each query is O(n d) per target, its result (d + 2) rows)."""


def _attribution_ids(attributions: Any) -> list[Any]:
    """The targets the attributions are of, each once, in their first order."""
    result_ids = getattr(attributions, "ids", None)
    if isinstance(result_ids, pl.Series):
        return result_ids.unique(maintain_order=True).to_list()
    frame = as_frame(attributions)
    if "id" not in frame.columns:
        raise CohortError(f"attributions need columns id, feature and value (or shapley); got {frame.columns!r}")
    if frame.height == 0:
        raise CohortError("attributions hold no rows: give at least one target's values")
    return frame["id"].unique(maintain_order=True).to_list()


def _curves(
    ids: pl.Series,
    ranks: np.ndarray,
    features: Sequence[str],
    inserted: np.ndarray,
    deleted: np.ndarray,
    sizes: list[np.ndarray],
) -> pl.DataFrame:
    """One row per target and step: the feature the step adds (insertion) or drops (deletion)."""
    targets, d = ranks.shape
    order = np.argsort(ranks, axis=1)  # the features by rank
    names = np.array(features, dtype=object)[order]  # (targets, d)
    steps = np.tile(np.arange(d + 1), targets)
    feature = np.concatenate([np.full((targets, 1), None, dtype=object), names], axis=1).reshape(-1)
    return pl.DataFrame(
        {
            "id": ids.gather(np.repeat(np.arange(targets), d + 1)),
            "step": steps,
            "feature": pl.Series(feature.tolist(), dtype=pl.String),
            "insertion": inserted.reshape(-1),
            "deletion": deleted.reshape(-1),
            "insertion_size": sizes[0].reshape(-1),
            "deletion_size": sizes[1].reshape(-1),
        }
    )
