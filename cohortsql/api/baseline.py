"""The paper's comparison methods: baseline Shapley (BS) and all-baseline Shapley (ABS), with their
squares and their split into what comes from realistic and from unrealistic hybrid points; the three
methods side by side (`compare`); and the calibration of the similarity threshold (`calibrate`).

Unlike cohort Shapley these need the model: they evaluate it at hybrid points that mix a target's
values with a baseline's. Comparing them with cohort Shapley shows how much of a model-based
explanation rests on points that no subject resembles (paper, Section 5 and Appendix 4).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql.spec import arguments
from cohortsql.queries import compile
from cohortsql.api.local import cohort_shapley, opened_engine
from cohortsql.results.baseline import BaselineShapleyResult
from cohortsql.games.baseline.values import BaselineValues
from cohortsql.games.baseline.permutation import estimate_baseline_shapley
from cohortsql.games.baseline.exact import baseline_totals, run_baseline_shapley
from cohortsql.games.calibration import Calibration, holdout_shares, marginal_shares
from cohortsql.results.comparison import Comparison
from cohortsql._typing import (
    BATCH_ROWS,
    CALIBRATION_KINDS,
    CALIBRATION_THRESHOLDS,
    METHODS,
    MODEL_INPUTS,
    MODEL_OUTPUTS,
    Baseline,
    CalibrationKind,
    EngineName,
    Method,
    ModelInput,
    ModelOutput,
)
from cohortsql.engines import Engine
from cohortsql.errors import CohortError, check_choice
from cohortsql.games.baseline.models import model_function, predict
from cohortsql.spec.features import SimilarityArgument
from cohortsql.games.baseline.points import encode_points
from cohortsql.run.session import Prepared, Targets, every_row, prepare, read_rows, rows_by_id, select_targets
from cohortsql.run.progress import reporter
from cohortsql.games.baseline.realism import subject_bitsets
from cohortsql.results.cohort import run_settings

MAX_EXACT_BASELINE_FEATURES = 20
"""Exact baseline Shapley evaluates the model at 2^d hybrid points per target and baseline."""
MAX_FEATURES = 128
"""The permutation method handles up to this many features."""
AUTO_EXACT_BASELINE_FEATURES = 12
"""``method="auto"`` is exact up to this d (4,096 model evaluations per target and baseline)."""


def baseline_shapley(
    data: Any,
    *,
    model: Any,
    features: SimilarityArgument,
    baseline: Baseline | Sequence[object] = "mean",
    baseline_sample: int | None = None,
    realistic: bool = False,
    id: str | None = None,
    targets: Targets = None,
    sample: int | float | None = None,
    seed: int | None = None,
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
) -> BaselineShapleyResult:
    """Baseline Shapley (``baseline="mean"``) or all-baseline Shapley (``baseline="all"``) of `model`.

    For target t, baseline x_b and set u of features, the hybrid point z_b(u) = (x_{t,u} : x_{b,-u})
    and v_b(u) = f(z_b(u)) - f(x_b). The values are phi_j = mean_b sum_{u not containing j}
    w(|u|) (v_b(u + j) - v_b(u)) and, squared, phi2_j = mean_b of the Shapley values of v_b(u)^2,
    so that sum_j phi_j = f(x_t) - mean_b f(x_b) and sum_j phi2_j = mean_b (f(x_t) - f(x_b))^2.

    - `model`: a callable f(X) returning one number per row, or an object with ``predict``
      (``predict_proba``'s second column with ``model_output="probability"``). It is called on
      batches of at most `batch_rows` distinct hybrid rows, read as `model_input` says: a pandas
      frame with the data's column types (so fitted scikit-learn pipelines work), a polars frame,
      or a float numpy array with the columns in feature order.
    - `features`: the model's inputs, as a list of column names or a mapping to similarity kinds
      (as `cohort_shapley`'s `similarity`); the kinds decide realism.
    - `baseline`: ``"mean"`` (one point: each numeric feature's mean, every other feature's most
      frequent value), ``"all"`` (every row: all-baseline Shapley; `baseline_sample` draws that many
      rows at random with `seed`), or a list of ids whose rows are the baselines.
    - `realistic=True`: also split every value into the part from realistic hybrid points (some
      subject is similar to the point on every feature, under the kinds of `features`, with their
      whole-table parameters) and the rest: ``shapley_realistic`` and ``shapley_unrealistic``.

    - `method`: ``exact`` (every subset: |B| 2^d model evaluations per target, d <= 20),
      ``permutation`` (Monte Carlo: antithetic pairs of random orders, each with a random baseline,
      d model evaluations per permutation, d <= 128; at most `max_permutations` per target, fewer once
      every standard error is below `tolerance`; ``shapley_se`` and ``shapley_squared_se`` come with
      the values, and the totals stay exact), or ``auto`` (exact up to d = 12).

    Each distinct hybrid point is evaluated once per chunk of about a million; targets with
    identical features are computed once. `targets`, `sample`, `id`, `connection`, `engine` are as
    in `cohort_shapley`.
    """
    check_choice("method", method, METHODS)
    max_permutations = arguments.whole_number("max_permutations", max_permutations, minimum=2)
    tolerance = arguments.positive_number("tolerance", tolerance)
    check_choice("model_input", model_input, MODEL_INPUTS)
    check_choice("model_output", model_output, MODEL_OUTPUTS)
    seed = arguments.seed(seed)
    batch_rows = arguments.whole_number("batch_rows", batch_rows, minimum=1)
    if baseline_sample is not None:
        baseline_sample = arguments.whole_number("baseline_sample", baseline_sample, minimum=1)
        if not (isinstance(baseline, str) and baseline == "all"):
            raise CohortError("baseline_sample= draws from every row: it needs baseline='all'")
        if seed is None:
            seed = int(np.random.default_rng().integers(2**31))
    if not isinstance(realistic, bool):
        raise CohortError(f"realistic must be True or False, got {realistic!r}")
    function = model_function(model, model_output)
    with opened_engine(data, engine, connection, memory_limit, temp_directory) as running:
        prepared = prepare(
            running,
            data,
            outcomes=(),
            similarity=features,
            id=id,
            target_predicate=targets if isinstance(targets, str) else None,
            max_features=MAX_FEATURES,
        )
        estimation = arguments.exact_or_permutation(
            method,
            prepared.d,
            auto_exact_up_to=AUTO_EXACT_BASELINE_FEATURES,
            exact_up_to=MAX_EXACT_BASELINE_FEATURES,
            work="2^d model evaluations per target and baseline",
        )
        if estimation == "permutation" and seed is None:
            seed = int(np.random.default_rng().integers(2**31))  # recorded, so the run can be repeated
        chosen = select_targets(running, prepared, targets, seed, sample)
        target_data = read_rows(running, prepared, chosen.table)
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
            return predict(function, frame, model_input, batch_rows)

        if estimation == "exact":
            run = run_baseline_shapley(points, evaluate, bitsets, reporter(progress))
            values, estimated = run.values, None
            prediction, baseline_prediction, value_squared = run.prediction, run.baseline_prediction, run.value_squared
        else:
            estimated = estimate_baseline_shapley(
                points,
                evaluate,
                bitsets,
                np.random.default_rng(seed),
                max_permutations=max_permutations,
                tolerance=tolerance,
                report=reporter(progress),
            )
            parts = estimated.estimates
            values = BaselineValues(
                parts[:, 0],
                parts[:, 1],
                parts[:, 2] if realistic else None,
                parts[:, 3] if realistic else None,
                None,
            )
            prediction, baseline_prediction, value_squared = baseline_totals(points, evaluate)
    names = tuple(feature.name for feature in prepared.features)
    kinds = {feature.name: str(feature.kind) for feature in prepared.features}
    return BaselineShapleyResult(
        ids=pl.Series("id", chosen.table.column("__cohort_id")),
        features=names,
        method=variant,
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
        estimation=estimation,
        similarity=kinds if realistic else {},
        population=chosen.population,
        settings=run_settings(
            engine=running.dialect.name,
            id=prepared.id,
            features=list(names),
            similarity=kinds if realistic else None,
            method=variant,
            estimation=estimation,
            max_permutations=max_permutations if estimation == "permutation" else None,
            tolerance=tolerance,
            baseline=baseline if isinstance(baseline, str) else f"{len(points.baseline_codes)} ids",
            baseline_sample=baseline_sample,
            model_output=model_output,
            targets="every row"
            if targets is None
            else str(targets)
            if isinstance(targets, (str, int, float))
            else "ids",
            sample=sample,
            seed=chosen.seed if chosen.seed is not None else seed,
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
                compile.baseline_point(prepared.input.relation, prepared.features, engine.dialect),
                context="computing the mean baseline",
            )
            raw = pl.from_arrow(point.select([feature.name for feature in prepared.features]))
            assert isinstance(raw, pl.DataFrame)
            return "baseline", (raw, point)
        rows = every_row(engine, prepared, sample, seed or 0)
        return "all-baseline", (read_rows(engine, prepared, rows), rows)
    if not isinstance(baseline, (Sequence, np.ndarray, pl.Series, pa.Array)):
        raise CohortError(f"baseline must be 'mean', 'all' or a list of ids, got {baseline!r}")
    rows = rows_by_id(engine, prepared, baseline, role="baseline", within_targets=False)
    return "baseline", (read_rows(engine, prepared, rows), rows)


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


def calibrate(
    data: Any,
    *,
    features: Sequence[str],
    exact: Sequence[str] = (),
    kind: CalibrationKind = "range",
    thresholds: Sequence[float] = CALIBRATION_THRESHOLDS,
    holdouts: Sequence[float] = (0.1, 0.2, 0.3),
    runs: int = 100,
    marginal_samples: int = 1000,
    max_rows: int = 20_000,
    seed: int | None = None,
    connection: Any = None,
    engine: EngineName | None = None,
) -> Calibration:
    """The similarity threshold at which real rows count as realistic (paper, Appendix 5).

    For each threshold r in `thresholds`, the share of realistic points among (a) rows held out at
    random from the rest (each fraction of `holdouts`, `runs` times) and (b) `marginal_samples`
    points drawn from each column's marginal distribution independently (`runs` times). A point is
    realistic when some other row is within r x the `kind` width (``range``: max - min; ``quantile``:
    the 5%-95% quantile range) on every numeric feature and equal on every text or boolean feature
    and every feature in `exact`. `Calibration.recommended` is the smallest r at which 95% of held-out
    rows are realistic; `cohortsql.plot.calibration` draws the paper's figure. Tables of more than
    `max_rows` rows are calibrated on a random sample of that many (seeded).
    """
    check_choice("kind", kind, CALIBRATION_KINDS)
    seed = arguments.seed(seed)
    runs = arguments.whole_number("runs", runs, minimum=1)
    marginal_samples = arguments.whole_number("marginal_samples", marginal_samples, minimum=1)
    max_rows = arguments.whole_number("max_rows", max_rows, minimum=10)
    levels = np.asarray(sorted(_fractions("thresholds", thresholds, upper=np.inf)))
    fractions = tuple(_fractions("holdouts", holdouts, upper=1.0))
    if isinstance(features, str) or isinstance(exact, str):
        raise CohortError("features and exact are lists of column names")
    unknown = sorted(set(exact) - set(features))
    if unknown:
        raise CohortError(f"exact names columns that are not among the features: {unknown}")
    if seed is None:
        seed = int(np.random.default_rng().integers(2**31))
    with opened_engine(data, engine, connection, None, None) as running:
        kinds = {name: "exact" if name in exact else None for name in features}
        prepared = prepare(
            running, data, outcomes=(), similarity=kinds, id=None, target_predicate=None, max_features=1 << 10
        )
        sample = max_rows if prepared.subject_count > max_rows else None
        rows = every_row(running, prepared, sample, seed)
    window = [feature for feature in prepared.features if feature.kind.numeric]
    equal = [feature for feature in prepared.features if not feature.kind.numeric]
    windows = np.column_stack(
        [rows.column(feature.column).to_numpy(zero_copy_only=False).astype(np.float64) for feature in window]
        or [np.zeros((rows.num_rows, 0))]
    )
    codes = np.column_stack(
        [_codes(rows.column(feature.column)) for feature in equal] or [np.zeros((rows.num_rows, 0), dtype=np.int64)]
    )
    if rows.num_rows < 10:
        raise CohortError(f"calibration needs at least 10 rows; the table has {rows.num_rows}")
    rng = np.random.default_rng(seed)
    holdout = np.stack([holdout_shares(windows, codes, levels, f, runs, kind, rng) for f in fractions])
    marginal = marginal_shares(windows, codes, levels, marginal_samples, runs, kind, rng)
    return Calibration(
        thresholds=levels,
        holdouts=fractions,
        holdout=holdout,
        marginal=marginal,
        kind=kind,
        window_features=tuple(feature.name for feature in window),
        exact_features=tuple(feature.name for feature in equal),
        rows=rows.num_rows,
        settings=run_settings(
            engine=running.dialect.name,
            features=list(features),
            exact=list(exact),
            kind=kind,
            thresholds=[float(level) for level in levels],
            holdouts=list(fractions),
            runs=runs,
            marginal_samples=marginal_samples,
            seed=seed,
        ),
    )


def _fractions(name: str, values: Sequence[float], *, upper: float) -> list[float]:
    """`values` as a non-empty list of numbers in (0, upper)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise CohortError(f"{name} must be a non-empty list of numbers, got {values!r}")
    checked = [arguments.positive_number(name, value) for value in values]
    if any(value is None or value >= upper for value in checked):
        raise CohortError(
            f"{name} must be numbers above 0{'' if upper == np.inf else f' and below {upper:g}'}: got {list(values)!r}"
        )
    return [float(value) for value in checked if value is not None]


def _codes(column: pa.ChunkedArray) -> np.ndarray:
    """Integer codes of a column's values (equal values, equal codes; missing values -1)."""
    series = pl.Series(column)
    codes = series.rank("dense").fill_null(0).cast(pl.Int64) - 1
    return codes.to_numpy()
