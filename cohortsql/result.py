"""The result of `cohort_shapley`: per-target, per-feature cohort Shapley values and their totals."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql.errors import CohortError
from cohortsql.output import write_frame
from cohortsql.shapley import shapley_values
from cohortsql.similarity import Similarity

LOCAL_COLUMNS = ("shapley", "shapley_squared")


@dataclass(frozen=True, eq=False)
class CohortShapleyResult:
    """Cohort Shapley values phi_j(t) of v_CS and v_CS2 for every target t and feature j.

    For every target, ``shapley`` adds up to ``value`` = cohort_mean - mean (efficiency) and
    ``shapley_squared`` adds up to ``value_squared`` = value^2.
    """

    ids: pl.Series
    """The targets' ids, in table order."""
    features: tuple[str, ...]
    """The predictors, in the order given."""
    similarity: dict[str, str]
    """Each feature's similarity kind in text form, defaults filled in."""
    kinds: dict[str, Similarity]
    """Each feature's similarity kind."""
    feature_statistics: dict[str, dict]
    """The whole-table statistics each feature's kind used (min, max, quantiles, missing values)."""
    mean: float
    """ybar: the mean of the explained column over all subjects."""
    variance: float
    """The population variance of the explained column over all subjects (the total that Shapley effects split)."""
    subjects: int
    """n: how many subjects (rows) the cohorts were drawn from."""
    prediction: np.ndarray
    """y_t for each target."""
    cohort_size: np.ndarray
    """|C_{t,1:d}| for each target."""
    cohort_mean: np.ndarray
    """ybar_{t,1:d} for each target."""
    shapley: np.ndarray
    """phi_j(t) of v_CS, shape (targets, features)."""
    shapley_squared: np.ndarray
    """phi_j(t) of v_CS2, shape (targets, features)."""
    targets: pl.DataFrame
    """The target rows as they are in the data (every column), in the order of `ids`."""
    path_order: np.ndarray
    """Each target's features by decreasing |shapley| (indexes into `features`), shape (targets, features)."""
    path_size: np.ndarray
    """Cohort sizes as the features of `path_order` are added one at a time, shape (targets, features)."""
    path_mean: np.ndarray
    """Cohort means along the same refinement path, shape (targets, features)."""
    shapley_se: np.ndarray | None = None
    """Permutation method: the Monte Carlo standard error of each value (None when exact)."""
    shapley_squared_se: np.ndarray | None = None
    """Permutation method: the Monte Carlo standard error of each squared value."""
    permutations: np.ndarray | None = None
    """Permutation method: how many permutations each target used."""
    population: int | None = None
    """How many rows the targets were drawn from, when they are every row or a random sample of the
    table; None when they were chosen by id or predicate. Sets the finite-population correction."""
    method: str = "exact"
    path: str = "pairwise"
    """How the cohorts were found: ``pairwise`` or ``grouping_sets``."""

    @cached_property
    def local(self) -> pl.DataFrame:
        """One row per (target, feature): ``id``, ``feature``, ``shapley``, ``shapley_squared``."""
        targets, d = self.shapley.shape
        columns = {
            "id": self.ids.gather(np.repeat(np.arange(targets), d)),
            "feature": pl.Series(list(self.features) * targets, dtype=pl.String),
            "shapley": self.shapley.reshape(-1),
            "shapley_squared": self.shapley_squared.reshape(-1),
        }
        if self.shapley_se is not None and self.shapley_squared_se is not None:
            columns["shapley_se"] = self.shapley_se.reshape(-1)
            columns["shapley_squared_se"] = self.shapley_squared_se.reshape(-1)
        return pl.DataFrame(columns)

    @cached_property
    def totals(self) -> pl.DataFrame:
        """One row per target: ``id``, ``prediction``, ``cohort_size``, ``cohort_mean``, ``value``, ``value_squared``."""
        value = self.cohort_mean - self.mean
        return pl.DataFrame(
            {
                "id": self.ids,
                "prediction": self.prediction,
                "cohort_size": self.cohort_size,
                "cohort_mean": self.cohort_mean,
                "value": value,
                "value_squared": value**2,
            }
        )

    def similar_interval(self, id: object, feature: str) -> tuple[float, float] | None:
        """The values of `feature` similar to target `id`'s (a closed interval), or None when the
        feature's kind is not an interval (``sql:``) or its value is missing."""
        if feature not in self.kinds:
            raise CohortError(
                f"similar_interval: {feature!r} is not a feature; the features are {', '.join(self.features)}"
            )
        value = self.targets[feature][self._row(id)]
        if value is None or isinstance(value, str):
            return None
        return self.kinds[feature].interval(float(value), self.feature_statistics[feature])

    def _row(self, id: object) -> int:
        """Position of target `id` in `ids`."""
        matches = np.flatnonzero((self.ids == id).fill_null(False).to_numpy())
        if len(matches) == 0:
            raise CohortError(f"{id!r} is not one of the {len(self.ids)} targets of this result")
        return int(matches[0])

    @cached_property
    def paths(self) -> pl.DataFrame:
        """Each target's refinement path (the paper's cohort refinement): one row per (target, step) with
        ``id``, ``step``, the ``feature`` added at that step (step 0: none, the cohort is every subject;
        step 1: the most important feature), and the ``cohort_size`` and ``cohort_mean`` of the cohort
        similar to the target on the features so far."""
        targets, d = self.path_order.shape
        names = np.array([None, *self.features], dtype=object)
        order = np.column_stack([np.zeros(targets, dtype=np.int64), self.path_order + 1])
        sizes = np.column_stack([np.full(targets, self.subjects), self.path_size])
        means = np.column_stack([np.full(targets, self.mean), self.path_mean])
        return pl.DataFrame(
            {
                "id": self.ids.gather(np.repeat(np.arange(targets), d + 1)),
                "step": np.tile(np.arange(d + 1), targets),
                "feature": pl.Series(names[order.reshape(-1)].tolist(), dtype=pl.String),
                "cohort_size": sizes.reshape(-1),
                "cohort_mean": means.reshape(-1),
            }
        )

    @cached_property
    def global_(self) -> pl.DataFrame:
        """Per feature, averaged over the targets: ``shapley_effect`` (mean squared cohort Shapley value),
        its standard error ``shapley_effect_se``, ``share`` = shapley_effect / variance, and ``mean_abs_shapley``.

        When the targets are every row, the squared values average to the Shapley effects of
        v_var(u) = (1/n) sum_t (ybar_{t,u} - ybar)^2 exactly (paper: additivity of Shapley values), and the
        standard error is 0. For a random sample of targets it is the sample mean's standard error, with
        the finite-population correction.
        """
        errors = _standard_error(self.shapley_squared, self.population, self.shapley_squared_se)
        return _effects_table(self.features, self.shapley_squared.mean(axis=0), errors, self.variance).with_columns(
            mean_abs_shapley=pl.Series(np.abs(self.shapley).mean(axis=0))
        )

    def by(self, column: str) -> pl.DataFrame:
        """Per group of `column` (any column of the data, a model input or not) and feature: the group's
        number of targets, and the mean and standard error of the cohort Shapley values and their squares.

        The audit of the paper's redlining point: e.g. the mean attribution to a protected attribute
        among women versus men. Standard errors treat the group's targets as a sample (no correction).
        """
        if column not in self.targets.columns:
            raise CohortError(
                f"by({column!r}): no such column in the data; its columns are: {', '.join(self.targets.columns)}"
            )
        targets, d = self.shapley.shape
        groups = self.targets[column].gather(np.repeat(np.arange(targets), d))
        count = pl.len()
        return (
            self.local.with_columns(groups)
            .group_by(column, "feature", maintain_order=True)
            .agg(
                targets=count,
                shapley=pl.col("shapley").mean(),
                shapley_se=pl.col("shapley").std() / count.sqrt(),
                shapley_squared=pl.col("shapley_squared").mean(),
                shapley_squared_se=pl.col("shapley_squared").std() / count.sqrt(),
            )
            .sort(column, maintain_order=True, nulls_last=True)
        )

    def to_shap(self, *, squared: bool = False) -> Any:
        """The values as a ``shap.Explanation`` (needs ``pip install 'cohortsql[shap]'``), for SHAP's
        waterfall, beeswarm and bar plots. ``base_values`` is the mean, so base + sum of values is
        each target's cohort mean (its prediction when the cohort is the target alone)."""
        try:
            import shap
        except ImportError:
            raise CohortError("to_shap() needs shap: pip install 'cohortsql[shap]'") from None
        values = self.shapley_squared if squared else self.shapley
        data = self.targets.select(self.features)
        numeric = all(dtype.is_numeric() or dtype == pl.Boolean for dtype in data.dtypes)
        return shap.Explanation(
            values=values,
            base_values=np.full(len(values), 0.0 if squared else self.mean),
            data=data.to_numpy().astype(float) if numeric else data.to_numpy(),
            feature_names=list(self.features),
        )

    def wide(self, column: str = "shapley") -> pl.DataFrame:
        """One row per target (``id`` first) and one column per feature, holding `column`."""
        if column not in LOCAL_COLUMNS:
            raise CohortError(f"wide() shows one of {', '.join(LOCAL_COLUMNS)}, not {column!r}")
        values = getattr(self, column)
        return pl.DataFrame({"id": self.ids}).with_columns(
            pl.Series(feature, values[:, index]) for index, feature in enumerate(self.features)
        )

    def to_arrow(self) -> pa.Table:
        """The long table `local` as Arrow."""
        return self.local.to_arrow()

    def write_parquet(self, path: str | os.PathLike[str]) -> None:
        """Write the long table `local` to a Parquet file, atomically (no partial file on failure)."""
        write_frame(self.local, path)

    def __repr__(self) -> str:
        return (
            f"CohortShapleyResult({len(self.ids)} targets x {len(self.features)} features, "
            f"{self.subjects} subjects, mean={self.mean:.6g}, method={self.method!r}, path={self.path!r})"
        )


@dataclass(frozen=True)
class ShapleyEffects:
    """Shapley effects of v_var(u) = (1/n) sum_t (ybar_{t,u} - ybar)^2 (`cohortsql.variance_shapley`)."""

    effects: pl.DataFrame
    """One row per feature: ``feature``, ``shapley_effect``, ``shapley_effect_se``, ``share``."""
    explained: float
    """v_var(1:d): the variance explained by the cohorts on every feature; the effects add up to it."""
    variance: float
    """The population variance of the explained column; ``share`` = shapley_effect / variance."""
    subjects: int
    targets: int
    """How many targets v_var averages over (every subject, unless a sample or subset was asked for)."""
    path: str

    @classmethod
    def from_game(
        cls,
        *,
        features: tuple[str, ...],
        game: np.ndarray,
        variance: float,
        subjects: int,
        targets: int,
        squared_values: np.ndarray | None,
        population: int | None,
        path: str,
    ) -> ShapleyEffects:
        """Effects = Shapley values of the game v_var; standard errors from the targets' squared values
        (their mean equals the effects, by linearity), or 0 (None given) where v_var is exact over every subject."""
        effects = shapley_values(game)
        if squared_values is None:
            errors = np.zeros(len(features))
        else:
            errors = _standard_error(squared_values, population)
        return cls(
            effects=_effects_table(features, effects, errors, variance),
            explained=float(game[-1]),
            variance=variance,
            subjects=subjects,
            targets=targets,
            path=path,
        )

    @property
    def explained_share(self) -> float:
        """v_var(1:d) / variance: the fraction of the variance the cohorts explain."""
        return self.explained / self.variance if self.variance > 0 else float("nan")

    def __repr__(self) -> str:
        return (
            f"ShapleyEffects({len(self.effects)} features, explained {self.explained:.6g} of variance"
            f" {self.variance:.6g}, {self.targets} targets of {self.subjects} subjects, path={self.path!r})\n{self.effects}"
        )


def _effects_table(features: tuple[str, ...], effects: np.ndarray, errors: np.ndarray, variance: float) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "feature": list(features),
            "shapley_effect": effects,
            "shapley_effect_se": errors,
            "share": effects / variance if variance > 0 else np.full(len(effects), np.nan),
        }
    )


def _standard_error(values: np.ndarray, population: int | None, monte_carlo_se: np.ndarray | None = None) -> np.ndarray:
    """Standard error of the column means of `values` (targets x features) as estimates of the
    population's means; the finite-population correction applies when `population` is known.

    With Monte Carlo estimates (`monte_carlo_se` per value), the correction only applies to the
    sampling of targets, so their own error is added back: the mean of the targets' estimates has
    Monte Carlo variance sum_t se_t^2 / T^2 even when every row is a target."""
    targets = values.shape[0]
    if targets < 2:
        return np.full(values.shape[1], np.nan)
    variance = values.var(axis=0, ddof=1) / targets
    if population is not None:
        variance *= max(0.0, 1 - targets / population)
        if monte_carlo_se is not None:
            variance += (monte_carlo_se**2).sum(axis=0) / targets**2
    return np.sqrt(variance)
