"""`cohortsql.baseline_shapley`: the paper's comparison methods, baseline Shapley (BS) and all-baseline
Shapley (ABS), with their squares and their split into what comes from realistic and from unrealistic
hybrid points.

Unlike cohort Shapley these need the model: they evaluate it at hybrid points that mix a target's
values with a baseline's. Comparing them with cohort Shapley shows how much of a model-based
explanation rests on points that no subject resembles (paper, Section 5 and Appendix 4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Unpack

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql import queries
from cohortsql._typing import (
    Baseline,
    BaselineOptions,
)
from cohortsql.engines import Engine
from cohortsql.errors import CohortError, check_choice
from cohortsql.formats.settings import run_settings
from cohortsql.games.baseline.models import check_reproduces, model_function, predict
from cohortsql.games.baseline.points import encode_points
from cohortsql.games.baseline.realism import subject_bitsets
from cohortsql.games.baseline.values import BaselineValues
from cohortsql.interrupts import interruptible_call
from cohortsql.request.arguments import drawn_seed
from cohortsql.request.options import checked_options
from cohortsql.request.similarity import SimilarityArgument
from cohortsql.results.baseline import BaselineShapleyResult
from cohortsql.run.baseline_exact import Model, baseline_totals, run_baseline_shapley
from cohortsql.run.baseline_permutation import estimate_baseline_shapley
from cohortsql.run.preparation import Prepared
from cohortsql.run.route import Route
from cohortsql.run.session import Session, open_session
from cohortsql.run.strategy import MAX_FEATURES, model_route
from cohortsql.run.target_ids import read_rows
from cohortsql.run.targets import TargetSet, every_row, rows_by_id


@interruptible_call
def baseline_shapley(
    data: Any,
    *,
    model: Any,
    features: SimilarityArgument,
    prediction: str | None = None,
    **options: Unpack[BaselineOptions],
) -> BaselineShapleyResult:
    """Baseline Shapley (``baseline="mean"``) or all-baseline Shapley (``baseline="all"``) of `model`.

    For target t, baseline x_b and set u of features, the hybrid point z_b(u) = (x_{t,u} : x_{b,-u})
    and v_b(u) = f(z_b(u)) - f(x_b). The values are phi_j = mean_b sum_{u not containing j}
    w(|u|) (v_b(u + j) - v_b(u)) and, squared, phi2_j = mean_b of the Shapley values of v_b(u)^2,
    so that sum_j phi_j = f(x_t) - mean_b f(x_b) and sum_j phi2_j = mean_b (f(x_t) - f(x_b))^2.

    Each distinct hybrid point is evaluated once per chunk of about a million; targets with
    identical features are computed once.

    Parameters
    ----------
    data
        The table: any input `cohort_shapley` reads.
    model
        A callable f(X) returning one number per row, or an object with ``predict``
        (``predict_proba``'s second column with ``model_output="probability"``). It is called on
        batches of at most `batch_rows` distinct hybrid rows, read as `model_input` says: a pandas
        frame with the data's column types (so fitted scikit-learn pipelines work), a polars frame,
        or a float numpy array with the columns in feature order.
    features
        The model's inputs, as a list of column names or a mapping to similarity kinds (as
        `cohort_shapley`'s `similarity`); the kinds decide realism.
    prediction
        The column holding the model's stored predictions, if the data have one. The model is then
        run on the targets first and the call refused if it does not give that column (within
        `model_tolerance`, relative; ``inf`` skips the check), naming the output that would.
    **options
        The options of `BaselineOptions`: ``id``, ``targets``, ``sample``, ``seed``, the model's
        ``model_input``, ``model_output``, ``model_tolerance`` and ``batch_rows``, the
        `RunOptions`, and those below.

    Other Parameters
    ----------------
    baseline : {"mean", "all"} or list of ids
        ``mean`` (one point: each numeric feature's mean, every other feature's most frequent
        value), ``all`` (every row: all-baseline Shapley; `baseline_sample` draws that many rows at
        random with `seed`), or the ids of the rows that are the baselines.
    realistic : bool
        Also split every value into the part from realistic hybrid points (some subject is similar
        to the point on every feature, under the kinds of `features`, with their whole-table
        parameters) and the rest: ``shapley_realistic`` and ``shapley_unrealistic``.
    groups, group_values : mapping of str to list of str, {"players", "owen"}
        Each group of features is one player, whose hybrid points take all of its features from the
        target or none (2^players points a target and baseline); with ``group_values="owen"`` every
        feature also gets its Owen value under the groups (``owen``, ``owen_table``; from the games
        of every feature, 2^d points). Exact method only.
    method, max_permutations, tolerance : {"exact", "permutation", "auto"}, int, float
        ``exact`` (every subset: |B| 2^d model evaluations per target, d <= 20), ``permutation``
        (antithetic pairs of random orders, each with a random baseline, d model evaluations per
        permutation, d <= 128; at most `max_permutations` per target, fewer once every standard
        error is below `tolerance`; ``shapley_se`` and ``shapley_squared_se`` come with the values,
        and the totals stay exact), or ``auto`` (exact up to d = 12).

    Returns
    -------
    BaselineShapleyResult
        Baseline (one baseline) or all-baseline Shapley values, split by realism when asked.

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> similarity = {"income": "abs:15", "region": "exact"}
    >>> model = cohortsql.datasets.loans_model  # 1 - income / 100, + 0.05 in the south
    >>> res = cohortsql.baseline_shapley(loans, model=model, features=["income", "region"], model_input="polars")
    >>> res.game, res.method, res.shapley[0].round(4).tolist()  # target 0 is in the baseline's region
    ('baseline', 'exact', [0.295, 0.0])
    """
    asked = checked_options(options, BaselineOptions)
    function = model_function(model, asked.modelling.model_output)
    if prediction is not None and not isinstance(prediction, str):
        raise CohortError(f"prediction names the column of the model's stored predictions, got {prediction!r}")
    outcomes = () if prediction is None else (prediction,)
    with open_session(data, asked, outcomes=outcomes, similarity=features, max_features=MAX_FEATURES) as session:
        route = model_route(asked.estimation.method, session.prepared.players)
        seeded = asked.with_seed(drawn_seed(asked.selection.seed, route.random))
        session = replace(session, options=seeded)
        chosen = session.select()
        if prediction is not None:
            check_model(session, chosen, model)
        return explain_with_model(session, chosen, function, baseline=asked.modelling.baseline, route=route)


def check_model(session: Session, chosen: TargetSet, model: Any) -> None:
    """Refuse a model that does not give the session's explained column on the `chosen` targets
    (`cohortsql.games.baseline.models.check_reproduces`)."""
    rows = session.target_data(chosen)
    names = [feature.name for feature in session.prepared.features]
    ids = pl.Series("id", chosen.table.column("__cohort_id"))
    modelling = session.options.modelling
    check_reproduces(
        model, modelling.model_output, rows.select(names), rows[session.prepared.outcomes[0]], ids, modelling
    )


def explain_with_model(
    session: Session,
    chosen: TargetSet,
    function: Model,
    *,
    baseline: Baseline | Sequence[object],
    route: Route,
) -> BaselineShapleyResult:
    """Baseline or all-baseline Shapley of the model `function` for the `chosen` targets of the session,
    from `baseline` by the `route`'s method (exact or permutation), under the call's options (realism, seed,
    the permutations' budget, how the model is called), which the settings record."""
    running, prepared, options = session.engine, session.prepared, session.options
    modelling, seed = options.modelling, options.selection.seed
    realistic, max_permutations, tolerance = (
        modelling.realistic,
        options.estimation.max_permutations,
        options.estimation.tolerance,
    )
    baseline_sample = modelling.baseline_sample if baseline == "all" else None
    target_data = session.target_data(chosen)
    variant, baseline_rows = _baselines(running, prepared, baseline, baseline_sample, seed)
    points = encode_points(prepared.features, (target_data, chosen.table), baseline_rows)
    bitsets = (
        subject_bitsets(
            running, prepared.subjects, prepared.features, points.prepared_values, distinct=prepared.compressed
        )
        if realistic
        else None
    )

    def evaluate(frame: pl.DataFrame) -> np.ndarray:
        return predict(function, frame, modelling.model_input, modelling.batch_rows)

    groups = prepared.groups
    owen = None
    if route.exact:
        run = run_baseline_shapley(
            points,
            evaluate,
            bitsets,
            session.reporter(),
            players=None if groups is None else groups.members,
            owen=groups is not None and groups.values == "owen",
        )
        values, estimated = run.values, None
        owen = None if run.owen is None or groups is None else run.owen[:, groups.member_order]
        prediction, baseline_prediction, value_squared = run.prediction, run.baseline_prediction, run.value_squared
    else:
        if groups is not None:
            raise CohortError(
                f"groups= needs method='exact' for {variant} Shapley ({prepared.players} players: 2^players hybrid"
                " points a target and baseline); the permutation method estimates single features"
            )
        estimated = estimate_baseline_shapley(
            points,
            evaluate,
            bitsets,
            np.random.default_rng(seed),
            max_permutations=max_permutations,
            tolerance=tolerance,
            report=session.reporter(),
        )
        parts = estimated.estimates
        values = BaselineValues(
            parts[:, 0], parts[:, 1], parts[:, 2] if realistic else None, parts[:, 3] if realistic else None, None
        )
        prediction, baseline_prediction, value_squared = baseline_totals(points, evaluate)
    names = prepared.player_names
    kinds = {feature.name: str(feature.kind) for feature in prepared.features}
    targets = options.selection.targets
    return BaselineShapleyResult(
        ids=pl.Series("id", chosen.table.column("__cohort_id")),
        features=names,
        groups=None if groups is None else groups.members_by_name(prepared.feature_names),
        owen=owen,
        game=variant,
        baselines=len(points.baseline_codes),
        prediction=prediction,
        baseline_prediction=np.full(chosen.count, baseline_prediction),
        value_squared=value_squared,
        shapley=values.shapley,
        shapley_squared=values.shapley_squared,
        targets=target_data,
        shapley_realistic=values.realistic,
        shapley_squared_realistic=values.realistic_squared,
        realistic_points=None if values.realistic_points is None else values.realistic_points.astype(np.int64),
        shapley_se=None if estimated is None else estimated.errors[:, 0],
        shapley_squared_se=None if estimated is None else estimated.errors[:, 1],
        permutations=None if estimated is None else estimated.permutations,
        method=route.method,
        similarity=kinds if realistic else {},
        population=chosen.population,
        settings=run_settings(
            engine=running.dialect.name,
            id=prepared.id,
            features=list(names),
            similarity=kinds if realistic else None,
            game=variant,
            method=route.method,
            max_permutations=max_permutations if route.random else None,
            tolerance=tolerance,
            baseline=baseline if isinstance(baseline, str) else f"{len(points.baseline_codes)} ids",
            baseline_sample=baseline_sample,
            model_output=modelling.model_output,
            targets="every row"
            if targets is None
            else str(targets)
            if isinstance(targets, (str, int, float))
            else "ids",
            sample=options.selection.sample,
            seed=chosen.seed if chosen.seed is not None else seed,
            **(
                {}
                if groups is None
                else {"groups": groups.described(prepared.feature_names), "group_values": groups.values}
            ),
        ),
    )


def _baselines(
    engine: Engine, prepared: Prepared, baseline: object, sample: int | None, seed: int | None
) -> tuple[str, tuple[pl.DataFrame, pa.Table]]:
    """The method's name and its baseline rows, as the data hold them and as the similarity tests compare them."""
    if isinstance(baseline, str):
        check_choice("baseline", baseline, ("mean", "all"))
        if baseline == "mean":
            point = engine.fetch_arrow(
                queries.baseline.baseline_point(prepared.input.relation, prepared.features, engine.dialect),
                context="computing the mean baseline",
            )
            raw = pl.from_arrow(point.select([feature.name for feature in prepared.features]))
            assert isinstance(raw, pl.DataFrame)
            return "baseline", (raw, point)
        rows = every_row(engine, prepared, sample, seed or 0)
        return "all-baseline", (read_rows(engine, prepared, rows), rows)
    if not isinstance(baseline, (Sequence, np.ndarray, pl.Series, pa.Array)):
        raise CohortError(f"baseline must be 'mean', 'all' or a list of ids, got {baseline!r}")
    rows, _ = rows_by_id(engine, prepared, baseline, role="baseline", within_targets=False)
    return "baseline", (read_rows(engine, prepared, rows), rows)
