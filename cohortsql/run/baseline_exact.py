"""Baseline Shapley for every target: hybrid points in bounded chunks, each distinct point evaluated once.

Targets and baselines go through in chunks of at most `HYBRID_ROWS` hybrid points. In each chunk the
distinct hybrid points are found (`cohortsql.games.baseline.values.distinct_rows`), the model is called on them
alone and, with realism, the engine's bitsets say which are realistic; `cohortsql.games.baseline.values` turns
the values into Shapley values. Values are means over the baselines, so chunks of baselines combine
by their sizes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from cohortsql.games.baseline.points import Points
from cohortsql.games.baseline.realism import SubjectBitsets
from cohortsql.games.baseline.values import (
    BaselineValues,
    baseline_games,
    baseline_shapley_values,
    distinct_rows,
    hybrid_codes,
    player_sets,
)
from cohortsql.numeric.dividends import owen_values
from cohortsql.run.pace import note_if_long
from cohortsql.run.progress import Reporter

HYBRID_ROWS = 1 << 20
"""Hybrid points per chunk: their codes (d int64 each), the model's input and the games stay near
100 MB for d = 13."""

SLOW_MODEL_REMEDY = "sample the targets (sample= / --sample), fewer baselines (baseline_sample= / --baseline-sample), or method='permutation'"

Model = Callable[[pl.DataFrame], np.ndarray]
"""f at each row of a frame of feature values (see `cohortsql.games.baseline.models.predict`)."""


@dataclass
class BaselineRun:
    """Everything a baseline Shapley run returns per target (targets in the order of `Points`)."""

    values: BaselineValues
    prediction: np.ndarray
    """f(x_t)."""
    value_squared: np.ndarray
    """mean_b (f(x_t) - f(x_b))^2."""
    baseline_prediction: float
    """mean_b f(x_b)."""
    owen: np.ndarray | None = None
    """With unions: each feature's Owen value of mean_b v_b, (targets, d) in feature order."""
    owen_squared: np.ndarray | None = None
    """The same of mean_b v_b^2."""

    @classmethod
    def empty(cls, targets: int, players: int, realism: bool, owen_features: int | None) -> BaselineRun:
        def zeros(*shape: int) -> np.ndarray:
            return np.zeros(shape)

        return cls(
            BaselineValues(
                zeros(targets, players),
                zeros(targets, players),
                zeros(targets, players) if realism else None,
                zeros(targets, players) if realism else None,
                zeros(targets) if realism else None,
            ),
            zeros(targets),
            zeros(targets),
            0.0,
            None if owen_features is None else zeros(targets, owen_features),
            None if owen_features is None else zeros(targets, owen_features),
        )

    def fanned_out(self, group: np.ndarray) -> BaselineRun:
        """One row per entry of `group` (identical targets were computed once)."""

        def rows(array: np.ndarray | None) -> np.ndarray | None:
            return None if array is None else array[group]

        shapley, squared, realistic, realistic_squared, points = self.values
        values = BaselineValues(shapley[group], squared[group], rows(realistic), rows(realistic_squared), rows(points))
        return BaselineRun(
            values,
            self.prediction[group],
            self.value_squared[group],
            self.baseline_prediction,
            rows(self.owen),
            rows(self.owen_squared),
        )


def run_baseline_shapley(
    points: Points,
    model: Model,
    bitsets: SubjectBitsets | None,
    report: Reporter | None = None,
    *,
    players: Sequence[Sequence[int]] | None = None,
    owen: bool = False,
) -> BaselineRun:
    """phi, phi2 (and their realistic parts) of every target of `points` over all its baselines.

    With `players` (groups of features as lists of their indices, partitioning them) each group is
    one player: a hybrid point takes all of a group's features from the target or none, so the games
    have 2^players sets. With `owen` too, every feature's Owen value under those unions, from the
    games of every feature (2^d hybrid points; the players' games are those of their sets)."""
    distinct, group = distinct_rows(points.target_codes)
    targets, d = distinct.shape
    union_sets = None if players is None else player_sets(players)
    evaluated = None if owen else union_sets  # the sets whose hybrid points the model is called on
    count = 1 << d if evaluated is None else len(evaluated)
    baselines = len(points.baseline_codes)
    baseline_step = max(1, min(baselines, HYBRID_ROWS // count))
    target_step = max(1, HYBRID_ROWS // (baseline_step * count))
    size = d if players is None else len(players)
    run = BaselineRun.empty(targets, size, bitsets is not None, d if owen else None)
    baseline_total = 0.0
    if report is not None:
        report.start(targets)
    started = time.perf_counter()
    for first in range(0, targets, target_step):
        rows = slice(first, first + target_step)
        for start in range(0, baselines, baseline_step):
            chunk = points.baseline_codes[start : start + baseline_step]
            share = len(chunk) / baselines
            codes = hybrid_codes(distinct[rows], chunk, evaluated)
            unique, inverse = distinct_rows(codes.reshape(-1, d))
            shape = codes.shape[:3]
            predictions = model(points.model_frame(unique))[inverse].reshape(shape)
            realistic = None if bitsets is None else bitsets.realistic(unique)[inverse].reshape(shape)
            games = baseline_games(predictions)
            if owen and players is not None and run.owen is not None and run.owen_squared is not None:
                run.owen[rows] += share * owen_values(games.mean(axis=1), players)
                run.owen_squared[rows] += share * owen_values((games**2).mean(axis=1), players)
                games = games[..., union_sets]
                realistic = None if realistic is None else realistic[..., union_sets]
            part = baseline_shapley_values(games, realistic)
            for total, piece in zip(run.values[:4], part[:4]):
                if total is not None and piece is not None:
                    total[rows] += share * piece
            if run.values.realistic_points is not None and part.realistic_points is not None:
                run.values.realistic_points[rows] += part.realistic_points
            run.value_squared[rows] += share * (games[..., -1] ** 2).mean(axis=1)
            run.prediction[rows] = predictions[:, 0, -1]
            if first == 0:
                baseline_total += predictions[0, :, 0].sum()
        if report is not None:
            done = min(first + target_step, targets)
            if first == 0:
                spent = time.perf_counter() - started
                work = f"for {targets:,} targets x {baselines:,} baselines x {count:,} hybrid points (measured on {done:,})"
                note_if_long(report, spent / done * (targets - done), work, SLOW_MODEL_REMEDY)
            report.update(done)
    if report is not None:
        report.finish()
    run.baseline_prediction = baseline_total / baselines
    return run.fanned_out(group)


def baseline_totals(points: Points, model: Model) -> tuple[np.ndarray, float, np.ndarray]:
    """f(x_t) per target, mean_b f(x_b), and mean_b (f(x_t) - f(x_b))^2 per target: the totals the
    values add up to, computed exactly (for the permutation method, whose values are estimates)."""
    unique, inverse = distinct_rows(np.concatenate([points.target_codes, points.baseline_codes]))
    values = model(points.model_frame(unique))[inverse]
    targets, baselines = values[: len(points.target_codes)], values[len(points.target_codes) :]
    mean = float(baselines.mean())
    return targets, mean, (targets - mean) ** 2 + float(baselines.var())
