"""The insertion and deletion tests of an attribution (Hama, Mase & Owen, "Deletion and insertion
tests in regression models", 2022), observational: for each target, its features ordered by
attribution, largest first (ties in the features' order); the insertion curve is the cohort mean
after the first m features are required to be similar (m = 0: every subject), the deletion curve
starts from the full cohort and stops requiring them in the same order. An attribution that puts
first what moves the cohort mean most has a large area between its insertion curve and the straight
line between its ends (ABC), and a large one above its deletion curve.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from cohortsql.errors import CohortError
from cohortsql.formats.settings import Settings

Tester = Callable[..., "InsertionDeletion"]
"""`cohortsql.insertion_deletion`, which computes the tests (the API registers it: results lie below the
API, so a result's own ``insertion_deletion`` reaches it through this slot)."""

TESTER: list[Tester] = []


def register_tester(function: Tester) -> Tester:
    """Make `function` what every result's ``insertion_deletion`` runs."""
    TESTER[:] = [function]
    return function


def tests_of(
    values: Any, data: Any, settings: Settings, similarity: Any, prediction: str | None, options: dict[str, Any]
) -> InsertionDeletion:
    """The insertion and deletion tests of a result's `values` on `data`: the explained column, the
    features' kinds and the id and weight columns its run recorded in `settings`, unless given."""
    if getattr(values, "groups", None):
        raise CohortError(
            "insertion_deletion tests each feature's attribution: a run of groups of features attributes to"
            " the groups; test the values of a run without groups="
        )
    prediction = prediction or settings.get("prediction")
    if not isinstance(prediction, str):
        raise CohortError("these values name no one explained column: pass prediction= (the column they explain)")
    similarity = similarity or settings.get("similarity")
    if not similarity:
        raise CohortError("these values record no features' kinds: pass similarity= (as the run took it)")
    for name in ("id", "weight"):
        if name not in options and settings.get(name) is not None:
            options[name] = settings.get(name)
    if not TESTER:
        raise RuntimeError("cohortsql.insertion_deletion is not registered (import cohortsql)")
    return TESTER[0](data, prediction=prediction, similarity=similarity, attributions=values, **options)


def area_between(points: np.ndarray) -> np.ndarray:
    """The authors' area between a curve of d + 1 points (along the last axis) and the line joining its
    ends: AUC = (sum of the points - (p_0 + p_d) / 2) / d (the trapezoid rule), minus (p_0 + p_d) / 2."""
    d = points.shape[-1] - 1
    ends = (points[..., 0] + points[..., -1]) / 2
    return (points.sum(axis=-1) - ends) / max(d, 1) - ends


@dataclass(frozen=True)
class InsertionDeletion:
    """What `cohortsql.insertion_deletion` gives: per target the ABC of both tests, and their curves."""

    abc: pl.DataFrame
    """One row per target: ``id``, ``insertion_abc`` and ``deletion_abc`` (the negated area of the
    deletion curve, so that larger is better for both)."""
    curves: pl.DataFrame
    """One row per target and step m = 0..d: ``id``, ``step``, ``feature`` (the m-th feature of the
    target's order, added by insertion and dropped by deletion; null at step 0), ``insertion`` and
    ``deletion`` (cohort means), ``insertion_size`` and ``deletion_size`` (their cohorts' weights)."""
    features: tuple[str, ...]
    outcome: str
    settings: Settings = field(default_factory=dict)

    def __repr__(self) -> str:
        means = self.abc.select(pl.col("insertion_abc").mean(), pl.col("deletion_abc").mean()).row(0)
        return (
            f"InsertionDeletion({self.abc.height} targets x {len(self.features)} features;"
            f" mean insertion ABC {means[0]:.4g}, mean deletion ABC {means[1]:.4g})"
        )


def attribution_matrix(attributions: Any, ids: pl.Series, features: Sequence[str]) -> np.ndarray:
    """Each target's attribution of each feature, (targets, features) in the order of `ids` and
    `features`: from a cohortsql result (its ``shapley``), or a table with columns id, feature and
    value (``value``, else ``shapley``); every target and feature must be there, once."""
    shapley = getattr(attributions, "shapley", None)
    result_ids = getattr(attributions, "ids", None)
    if isinstance(shapley, np.ndarray) and result_ids is not None:
        table = pl.DataFrame(
            {
                "id": np.repeat(result_ids.to_numpy(), len(attributions.features)),
                "feature": list(attributions.features) * len(result_ids),
                "value": shapley.reshape(-1),
            }
        )
    else:
        table = as_frame(attributions)
    value = "value" if "value" in table.columns else "shapley" if "shapley" in table.columns else None
    missing = [name for name in ("id", "feature") if name not in table.columns]
    if missing or value is None:
        raise CohortError(
            f"attributions need columns id, feature and value (or shapley); got {table.columns!r}"
            f"{'' if not missing else f' (no {missing[0]!r})'}"
        )
    if not (table.schema[value].is_numeric() or table.schema[value] == pl.Boolean):
        raise CohortError(
            f"attributions' {value!r} column holds {table.schema[value]}, not numbers: give each target's attribution"
            " of each feature as a number"
        )
    table = table.select(pl.col("id"), pl.col("feature").cast(pl.String), pl.col(value).cast(pl.Float64).alias("value"))
    if table.select(pl.struct("id", "feature").is_duplicated().any()).item():
        first = table.filter(pl.struct("id", "feature").is_duplicated()).row(0)
        raise CohortError(f"attributions give target {first[0]!r} feature {first[1]!r} more than once")
    unknown = table.filter(~pl.col("feature").is_in(list(features)))
    if unknown.height:
        raise CohortError(
            f"attributions name feature {unknown['feature'][0]!r}, which is not one of the features {list(features)!r}"
        )
    grid = (
        pl.DataFrame({"id": ids})
        .with_row_index("row")
        .join(pl.DataFrame({"feature": list(features)}).with_row_index("column"), how="cross")
    )
    joined = grid.join(table.with_columns(pl.col("id").cast(ids.dtype, strict=False)), on=["id", "feature"], how="left")
    absent = joined.filter(pl.col("value").is_null() | pl.col("value").is_nan())
    if absent.height:
        row = absent.row(0, named=True)
        raise CohortError(f"attributions give no value of feature {row['feature']!r} for target {row['id']!r}")
    matrix = np.empty((len(ids), len(features)))
    matrix[joined["row"].to_numpy(), joined["column"].to_numpy()] = joined["value"].to_numpy()
    return matrix


def as_frame(table: Any) -> pl.DataFrame:
    """The attributions as a polars frame: a polars, pyarrow or pandas table, or a mapping of columns; a
    result of several explained columns (its values are several tables) or anything else is a
    `CohortError` that says what to pass."""
    outcomes = getattr(table, "outcomes", None)
    if outcomes is not None:
        raise CohortError(
            f"attributions of several explained columns ({', '.join(map(str, outcomes))}): pass one of them,"
            f" e.g. attributions=res[{str(outcomes[0])!r}]"
        )
    if isinstance(table, pl.DataFrame):
        return table
    if isinstance(table, pl.LazyFrame):
        return table.collect()
    try:
        frame = (
            pl.from_arrow(table) if hasattr(table, "schema") and hasattr(table, "column_names") else pl.DataFrame(table)
        )
    except (TypeError, ValueError, pl.exceptions.PolarsError) as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise CohortError(f"attributions must be a cohortsql result or a table (id, feature, value): {first}") from None
    if not isinstance(frame, pl.DataFrame):
        raise CohortError("attributions must be a cohortsql result or a table (id, feature, value)")
    return frame


def ranks_of(matrix: np.ndarray) -> np.ndarray:
    """Each feature's rank in its target's order (1: the largest attribution; ties in feature order)."""
    order = np.argsort(-matrix, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, matrix.shape[1] + 1)[None, :], axis=1)
    return ranks
