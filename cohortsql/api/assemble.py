"""Cohort Shapley values from the result of `cohortsql.sql_query`, run in any warehouse.

The standalone query returns either mask histograms (one row per target and similarity mask) or
equivalence cells (keys, each target a row of its own). Both carry sums of y - mean and of its
square, so the whole-table mean and variance come back with them; this module runs the same numpy
stages as `cohortsql.cohort_shapley` on them. Nothing here touches an engine.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql import queries
from cohortsql._typing import METHODS, Method
from cohortsql.errors import CohortError, check_choice
from cohortsql.formats.files import read_frame
from cohortsql.formats.settings import run_settings
from cohortsql.games.cohort import exact_values, permutation_values, target_generators
from cohortsql.interrupts import interruptible_call
from cohortsql.numeric import permutation, shapley
from cohortsql.request import arguments
from cohortsql.request.measures import Measures
from cohortsql.request.options import Estimation, documented
from cohortsql.request.similarity import Similarity, SimilarityArgument
from cohortsql.request.similarity_text import as_similarity
from cohortsql.results.cohort import CohortShapleyResult, value_fields
from cohortsql.run.grouping_sets import Cells, values_of_cells
from cohortsql.run.preparation import BATCH_MEMORY_BYTES
from cohortsql.run.strategy import histogram_route

_SUMS = ("subjects", "sum_y", "sum_y2", "mean", "target", "prediction")

SINGLE = Measures(outcomes=1)
"""How assemble values the standalone query's sums: one outcome (``sum_y``), unweighted."""


@documented
@interruptible_call
def assemble(
    histogram: str | os.PathLike[str] | pa.Table | pl.DataFrame | Any,
    *,
    similarity: SimilarityArgument,
    method: Method = Estimation.method,
    seed: int | None = None,
    max_permutations: int = Estimation.max_permutations,
    tolerance: float | None = None,
) -> CohortShapleyResult:
    """Cohort Shapley values from the output of `cohortsql.sql_query` (a file or a frame).

    `similarity` names the features in the order the query used (the same argument as there; its
    kinds are recorded in the result). ``method`` applies to mask histograms: ``exact`` (d <= 24, the
    default, as for every method), ``permutation`` or ``auto`` (exact up to d = 16); cells are always exact.

    Parameters
    ----------
    histogram
        The result of a `sql_query` histogram, collapsed or cells query: a Parquet or CSV file, or a frame.
    similarity
        The features in the query's order (its kinds are recorded in the result).
    method
        ``exact``, ``permutation`` or ``auto``, for mask histograms (cells are always exact).
    seed
        Seeds the permutations.
    max_permutations
        The permutations' budget per target (default {default:max_permutations}).
    tolerance
        Stop a target's permutations once every standard error is at most this.

    Returns
    -------
    CohortShapleyResult
        The values `cohort_shapley` gives for the query's targets.

    Examples
    --------
    >>> import cohortsql
    >>> loans = cohortsql.datasets.loans()
    >>> similarity = {"income": "abs:15", "region": "exact"}
    >>> import duckdb
    >>> sql = cohortsql.sql_query(loans, prediction="score", similarity=similarity, table="loans")
    >>> warehouse = duckdb.connect()  # stands for the warehouse where the data live
    >>> warehouse.register("loans", loans.to_arrow())  # doctest: +ELLIPSIS
    <...>
    >>> res = cohortsql.assemble(warehouse.sql(sql).pl(), similarity=similarity)
    >>> res.shapley[0].round(4).tolist()  # as cohortsql.cohort_shapley gives them
    [0.2738, -0.0037]
    """
    check_choice("method", method, METHODS)
    seed = arguments.seed(seed)
    tolerance = arguments.positive_number("tolerance", tolerance)
    max_permutations = arguments.whole_number("max_permutations", max_permutations, minimum=2)
    frame = _read(histogram)
    features, kinds = _features(similarity)
    d = len(features)
    missing = [column for column in _SUMS if column not in frame.columns]
    if missing:
        raise CohortError(f"the histogram lacks columns {missing}: pass the result of `cohortsql sql` as it is")
    _check_feature_order(frame, features)
    _check_sums(frame)
    if "mask0" in frame.columns:
        return _from_masks(frame, features, kinds, method, seed, max_permutations, tolerance)
    keys = [f"k{index}" for index in range(d)]
    columns = set(frame.columns)
    if all(key in columns for key in keys) and f"k{d}" not in columns:
        return _from_cells(frame, features, kinds, keys)
    raise CohortError(
        f"the histogram has neither mask columns nor the {d} key columns k0..k{d - 1} of {d} features;"
        " check that similarity names the same features as the query"
    )


def _read(histogram: Any) -> pl.DataFrame:
    if isinstance(histogram, (str, Path)):
        return read_frame(histogram, "assemble, from the result of the `cohortsql sql` query")
    frame = pl.from_arrow(histogram) if isinstance(histogram, pa.Table) else histogram
    if not isinstance(frame, pl.DataFrame):
        try:
            frame = pl.DataFrame(histogram)
        except (TypeError, ValueError):
            raise CohortError(f"cannot read a histogram of type {type(histogram).__name__}") from None
    return frame


def _features(similarity: SimilarityArgument) -> tuple[tuple[str, ...], dict[str, Similarity | None]]:
    if isinstance(similarity, str) or not isinstance(similarity, (Mapping, list, tuple)) or not similarity:
        raise CohortError("similarity must name the features in the query's order (a list or a mapping)")
    if isinstance(similarity, Mapping):
        return tuple(similarity), {
            name: None if kind is None else as_similarity(kind) for name, kind in similarity.items()
        }
    return tuple(similarity), {name: None for name in similarity}


def _check_feature_order(frame: pl.DataFrame, features: tuple[str, ...]) -> None:
    """The features named as the query named them, in its order: bit j of a mask (key k_j) is the
    query's feature j, so another order would swap their values."""
    if "features" not in frame.columns or frame.height == 0:
        return  # a query printed before the column existed: the caller vouches for the order
    try:
        queried = tuple(json.loads(str(frame["features"][0])))
    except (ValueError, TypeError):
        raise CohortError("the histogram's features column is not the list the query wrote") from None
    if queried != features:
        raise CohortError(f"the query explained the features {list(queried)}, in this order; name them so")


def _check_sums(frame: pl.DataFrame) -> None:
    """Counts and sums are numbers without gaps, and every count is positive: a malformed file is
    refused here, not turned into a traceback or NaN values."""
    for column in ("subjects", "sum_y", "sum_y2", "mean"):
        dtype = frame.schema[column]
        if not dtype.is_numeric():
            raise CohortError(f"the histogram's column {column!r} holds {dtype}, not numbers")
        if frame[column].null_count() or not frame[column].cast(pl.Float64).is_finite().all():
            raise CohortError(f"the histogram's column {column!r} has missing or non-finite values")
    if (frame["subjects"] <= 0).any():
        raise CohortError("the histogram has rows of no subjects: it is not the result of `cohortsql sql`")
    if "mask0" in frame.columns and frame["target"].null_count():  # in cells, rows of no target are the others
        raise CohortError("the histogram has rows without a target")


def _moments(totals: pl.DataFrame) -> tuple[float, float, float, int]:
    """(mean, centred mean, variance, n) from one target's totals over every subject."""
    row = totals.row(0, named=True)
    n = int(row["subjects"])
    centred_mean = row["sum_y"] / n
    variance = max(0.0, row["sum_y2"] / n - centred_mean**2)
    return float(row["mean"]), centred_mean, variance, n


def _from_masks(
    frame: pl.DataFrame,
    features: tuple[str, ...],
    kinds: dict[str, Similarity | None],
    method: str,
    seed: int | None,
    max_permutations: int,
    tolerance: float | None,
) -> CohortShapleyResult:
    d = len(features)
    words = [f"mask{index}" for index in range(math.ceil(d / queries.histogram.MASK_WORD_BITS))]
    frame = _merged_masks(frame, words, d)
    targets = (
        frame.group_by("target")
        .agg(
            pl.col("prediction").first(),
            pl.col("subjects").sum(),
            pl.col("sum_y").sum(),
            pl.col("sum_y2").sum(),
            pl.col("mean").first(),
        )
        .sort("target")
    )
    if targets["subjects"].n_unique() != 1:
        raise CohortError("the histogram's targets do not all cover the same subjects; it is not one query's result")
    mean, centred_mean, variance, n = _moments(targets)
    numbered = frame.join(targets.select("target").with_row_index("__cohort_number"), on="target")
    route = histogram_route(method, d)
    count = targets.height
    batch = shapley.targets_per_batch(d, BATCH_MEMORY_BYTES)
    generators = target_generators(count, seed)
    results: list[Any] = []
    for start in range(0, count, batch):
        rows = min(batch, count - start)
        part = numbered.filter(pl.col("__cohort_number").is_between(start, start + rows - 1))
        histogram = {
            "target": (part["__cohort_number"] - start).to_numpy(),
            SINGLE.weight_name(0): part["subjects"].to_numpy(),
            SINGLE.sum_name(0, 0): part["sum_y"].to_numpy(),
            **{word: part[word].to_numpy() for word in words},
        }
        if route.exact:
            results.append(exact_values(histogram, rows, d, SINGLE, np.array([centred_mean]), np.ones((rows, 1))))
        else:
            results.extend(
                permutation_values(
                    histogram,
                    rows,
                    d,
                    centred_mean,
                    generators[start : start + rows],
                    max_permutations=max_permutations,
                    tolerance=tolerance,
                )
            )
    fields = shapley.concatenate(results).per_row if route.exact else permutation.stack(results, np.arange(count))
    return CohortShapleyResult(
        **_common(features, kinds, targets, mean, centred_mean, variance, n),
        **value_fields(fields, mean),  # the histogram's sums are of y - mean
        method=route.method,
        path=route.path,
        settings=run_settings(similarity=_described(kinds), method=route.method, path=route.path, seed=seed),
    )


def _merged_masks(frame: pl.DataFrame, words: list[str], d: int) -> pl.DataFrame:
    """The histogram with its masks checked (whole numbers in range, every target similar to itself on
    every feature) and rows that repeat a target and mask added up: a histogram computed in parts and
    joined by UNION ALL is the histogram of the whole."""
    bits = queries.histogram.MASK_WORD_BITS
    for index, word in enumerate(words):
        if word not in frame.columns:
            raise CohortError(f"the histogram lacks column {word!r}: {d} features need {len(words)} mask words")
        if not frame.schema[word].is_integer():
            raise CohortError(f"the histogram's column {word!r} holds {frame.schema[word]}, not whole numbers")
        width = min(bits, d - bits * index)
        outside = frame.filter(pl.col(word).is_null() | (pl.col(word) < 0) | (pl.col(word) > (1 << width) - 1))
        if outside.height:
            raise CohortError(
                f"the histogram's column {word!r} holds {outside[word][0]!r}: masks over {d} features are whole"
                f" numbers from 0 to 2^{width} - 1, never NULL"
            )
    every = [pl.col(word) == (1 << min(bits, d - bits * index)) - 1 for index, word in enumerate(words)]
    whole = frame.group_by("target").agg(pl.all_horizontal(every).any().alias("whole"))
    if not whole["whole"].all():
        missing = whole.filter(~pl.col("whole"))["target"][0]
        raise CohortError(
            f"target {missing!r} has no histogram row with every bit set (a target is similar to itself on every"
            " feature): pass the whole result of the `cohortsql sql` query"
        )
    for column in ("prediction", "mean"):
        if frame.group_by("target").agg(pl.col(column).n_unique().alias("n"))["n"].max() != 1:
            raise CohortError(f"the histogram gives a target more than one {column}: it is not one query's result")
    return frame.group_by(["target", *words], maintain_order=True).agg(
        pl.col("prediction").first(),
        pl.col("subjects").sum(),
        pl.col("sum_y").sum(),
        pl.col("sum_y2").sum(),
        pl.col("mean").first(),
    )


def _from_cells(
    frame: pl.DataFrame, features: tuple[str, ...], kinds: dict[str, Similarity | None], keys: list[str]
) -> CohortShapleyResult:
    totals = frame.select(
        pl.col("subjects").sum(), pl.col("sum_y").sum(), pl.col("sum_y2").sum(), pl.col("mean").first()
    )
    mean, centred_mean, variance, n = _moments(totals)
    grouped = frame.group_by(keys).agg(
        pl.col("subjects").sum().alias(SINGLE.weight_name(0)), pl.col("sum_y").sum().alias(SINGLE.sum_name(0, 0))
    )
    means = np.array([centred_mean])
    cells = Cells.from_frame(grouped, keys, SINGLE, means)
    targets = frame.filter(pl.col("target").is_not_null()).sort("target")
    if targets.height == 0:
        raise CohortError("the cells hold no target rows (column `target` is empty)")
    values = values_of_cells(cells, cells.cells_of(targets.select(keys)), SINGLE, means, np.ones((targets.height, 1)))
    return CohortShapleyResult(
        **_common(features, kinds, targets, mean, centred_mean, variance, n),
        # The cells' sums are of y - the query's mean, so cohort means are relative to it.
        **value_fields(values.per_row, mean),
        method="exact",
        path="grouping_sets",
        settings=run_settings(similarity=_described(kinds), method="exact", path="grouping_sets"),
    )


def _described(kinds: dict[str, Similarity | None]) -> dict[str, str]:
    return {name: "(as in the query)" if kind is None else str(kind) for name, kind in kinds.items()}


def _common(
    features: tuple[str, ...],
    kinds: dict[str, Similarity | None],
    targets: pl.DataFrame,
    mean: float,
    centred_mean: float,
    variance: float,
    n: int,
) -> dict[str, Any]:
    ids = targets["target"].alias("id")
    return dict(
        ids=ids,
        features=features,
        similarity=_described(kinds),
        kinds={name: kind for name, kind in kinds.items() if kind is not None},
        feature_statistics={name: {} for name in features},
        mean=mean + centred_mean,
        variance=variance,
        subjects=n,
        prediction=targets["prediction"].cast(pl.Float64).to_numpy(),
        targets=pl.DataFrame({"id": ids, "prediction": targets["prediction"]}),
        population=n if targets.height == n else None,
    )
