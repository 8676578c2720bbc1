"""The one shape of per-target results: every game (cohort, baseline and all-baseline, uniqueness)
gives each target a Shapley value phi_j(t) of every feature, and the same tables of them.

`TargetValues` holds what every game shares (ids, features, the target rows, the values, their
standard errors when estimated, the method, the settings) and gives every game the same surfaces:
``local`` (one row per target and feature), ``wide``, ``by`` (per group of any column),
``write_parquet`` and ``to_arrow``. A game adds its own columns through `value_arrays` (e.g. the
realistic parts of baseline Shapley, the bootstrap intervals of cohort Shapley), its per-target
``totals`` and its ``global_`` importance.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from cohortsql.errors import CohortError
from cohortsql.formats.files import write_frame
from cohortsql.formats.settings import Settings
from cohortsql.formats.tables import feature_texts, group_table, target_groups
from cohortsql.results.insertion import InsertionDeletion, tests_of
from cohortsql.results.null import NullReference


@dataclass(frozen=True, eq=False, kw_only=True)
class TargetValues:
    """Shapley values phi_j(t) of one game for every target t and feature j."""

    ids: pl.Series
    """The targets' ids, in table order."""
    features: tuple[str, ...]
    """The predictors, in the order given."""
    targets: pl.DataFrame
    """The target rows as they are in the data (every column), in the order of `ids`."""
    shapley: np.ndarray
    """phi_j(t), shape (targets, features)."""
    shapley_squared: np.ndarray | None = None
    """phi_j(t) of the squared game, shape (targets, features) (None where the game has no square)."""
    shapley_se: np.ndarray | None = None
    """Permutation method: the Monte Carlo standard error of each value (None when exact)."""
    shapley_squared_se: np.ndarray | None = None
    """Permutation method: the Monte Carlo standard error of each squared value."""
    permutations: np.ndarray | None = None
    """Permutation method: how many permutations each target used."""
    method: str = "exact"
    """How the values were computed: ``exact`` (every subset) or ``permutation`` (Monte Carlo)."""
    settings: Settings = field(default_factory=dict)
    """The run's settings (kinds, windows, method, targets, seed, engine, version) as Python values
    (``settings["similarity"]`` is a dict, ``settings["seed"]`` an int or None): written with every
    output, each value as JSON (`cohortsql.formats.settings`)."""
    weights: np.ndarray | None = None
    """Each target's case weight (None: unweighted); averages over targets are weighted by them."""
    groups: dict[str, tuple[str, ...]] | None = None
    """With ``groups=``: each player (a group, or a feature alone) and its features, in the order of
    `features`; None when every feature is its own player."""
    owen: np.ndarray | None = None
    """With ``group_values="owen"``: each feature's Owen value of the game under the groups, shape
    (targets, features of every group), the features as `groups` lists them (player after player); a
    group's members add up to its value in `shapley`; else None."""
    interactions: np.ndarray | None = None
    """With ``interactions=True``: Shapley interaction values of the game in shap's convention, shape
    (targets, features, features); off the diagonal Phi_ij = Phi_ji = I_ij / 2, on it
    Phi_ii = phi_i - sum over j != i of Phi_ij (`cohortsql.numeric.dividends`), else None."""
    interactions_se: np.ndarray | None = None
    """With ``interactions=True`` by the permutation method: the Monte Carlo standard error of each
    interaction value, shape (targets, features, features); None when exact."""
    asked: tuple[Any, ...] | None = None
    """With ``targets=`` a list of ids: those ids in the order given (`ids` holds them in table order),
    which views made for the caller keep (`CohortShapleyResult.to_shap`); else None."""
    null: NullReference | None = None
    """With ``null=B``: the shares of B shuffled copies of each feature asked beside its own, whose
    ``null_share``, ``null_share_high`` and ``p_value`` `global_` shows; else None."""

    def insertion_deletion(
        self, data: Any, *, similarity: Any = None, prediction: str | None = None, **options: Any
    ) -> InsertionDeletion:
        """The insertion and deletion tests of these values on `data`, the table they explain: exactly
        `cohortsql.insertion_deletion(data, ..., attributions=self)`, with the explained column, the
        features' kinds and the id and weight columns the run recorded (give `similarity`, `prediction`
        or ``id``/``weight`` to test against others); ``options`` are the `RunOptions`."""
        return tests_of(self, data, self.settings, similarity, prediction, dict(options))

    def asked_order(self) -> np.ndarray:
        """Row positions of the targets in the order the call listed their ids (`asked`), else in `ids`' order."""
        if self.asked is None:
            return np.arange(len(self.ids))
        position = {value: row for row, value in enumerate(self.ids.to_list())}
        rows = [position[value] for value in dict.fromkeys(self.asked) if value in position]
        return np.array(rows, dtype=np.int64) if len(rows) == len(self.ids) else np.arange(len(self.ids))

    @property
    def prediction_column(self) -> np.ndarray | None:
        """What `local` shows as each target's ``prediction`` (None: the game explains no column)."""
        return None

    def value_arrays(self) -> dict[str, np.ndarray]:
        """Every (targets, features) array of this game by its column name in `local`, in order."""
        arrays = {"shapley": self.shapley, "shapley_squared": self.shapley_squared}
        if self.shapley_se is not None and self.shapley_squared_se is not None:
            arrays |= {"shapley_se": self.shapley_se, "shapley_squared_se": self.shapley_squared_se}
        return {name: array for name, array in arrays.items() if array is not None}

    def group_arrays(self) -> dict[str, np.ndarray]:
        """The arrays `by` averages per group (the values, not their standard errors)."""
        return {name: array for name, array in self.value_arrays().items() if not name.endswith("_se")}

    @property
    def target_weights(self) -> np.ndarray:
        """Each target's weight in averages over targets: its case weight, or 1."""
        return np.ones(len(self.ids)) if self.weights is None else self.weights

    @property
    def in_sample(self) -> np.ndarray:
        """Whether each target counts in the averages over targets: every one but those explained beside
        a random sample by ``include=`` without being drawn in it (they weigh 0)."""
        return self.target_weights > 0

    @cached_property
    def feature_values(self) -> np.ndarray:
        """Each target's value of each feature as text (None when missing or not in `targets`), (targets, features)."""
        return feature_texts(self.targets, self.features, len(self.ids))

    @cached_property
    def local(self) -> pl.DataFrame:
        """One row per (target, feature): ``id``, ``feature``, the target's ``feature_value`` (as text),
        its ``prediction`` (where the game explains one) and every value column of the game."""
        targets, d = self.shapley.shape
        rows = np.repeat(np.arange(targets), d)
        columns: dict[str, pl.Series | np.ndarray] = {
            "id": self.ids.gather(rows),
            "feature": pl.Series(list(self.features) * targets, dtype=pl.String),
            "feature_value": pl.Series(self.feature_values.reshape(-1).tolist(), dtype=pl.String),
        }
        if self.prediction_column is not None:
            columns["prediction"] = self.prediction_column[rows]
        columns |= {name: array.reshape(-1) for name, array in self.value_arrays().items()}
        return pl.DataFrame(columns)

    @cached_property
    def owen_table(self) -> pl.DataFrame:
        """With ``group_values="owen"``, one row per target and feature: ``id``, ``group``, ``feature``
        and ``owen`` (its Owen value; a group's rows add up to the group's Shapley value)."""
        if self.owen is None or self.groups is None:
            raise CohortError('this result has no Owen values: run with groups=... and group_values="owen"')
        members = [(group, feature) for group, features in self.groups.items() for feature in features]
        groups, features = (np.array(column, dtype=object) for column in zip(*members))
        targets, d = self.owen.shape
        return pl.DataFrame(
            {
                "id": self.ids.gather(np.repeat(np.arange(targets), d)),
                "group": pl.Series(np.tile(groups, targets).tolist(), dtype=pl.String),
                "feature": pl.Series(np.tile(features, targets).tolist(), dtype=pl.String),
                "owen": self.owen.reshape(-1),
            }
        )

    def wide(self, column: str = "shapley") -> pl.DataFrame:
        """One row per target (``id`` first) and one column per feature, holding `column` (any value
        column of `local`, e.g. ``shapley`` or ``shapley_squared``)."""
        arrays = self.value_arrays()
        if column not in arrays:
            raise CohortError(f"wide() shows one of {', '.join(arrays)}, not {column!r}")
        values = arrays[column]
        return pl.DataFrame({"id": self.ids}).with_columns(
            pl.Series(feature, values[:, index]) for index, feature in enumerate(self.features)
        )

    def by(self, column: str) -> pl.DataFrame:
        """Per group of `column` (any column of the data, a feature or not) and feature: the number of
        targets and the weighted mean and standard error of each value column (the group's targets
        treated as a sample), e.g. the mean attribution to a protected attribute among women and men.
        The targets are those that count in averages: ids included beside a sample are not."""
        kept = self.in_sample
        groups, number = target_groups(self.targets.filter(pl.Series(kept)), column)
        arrays = {name: array[kept] for name, array in self.group_arrays().items()}
        return group_table(column, groups, number, self.features, self.target_weights[kept], arrays)

    @cached_property
    def interaction_table(self) -> pl.DataFrame:
        """With ``interactions=True``, one row per target and ordered pair of features: ``id``,
        ``feature``, ``other`` and ``interaction`` (Phi of the pair; the main effect Phi_ii where
        ``other`` is ``feature``), and by the permutation method its standard error ``interaction_se``.
        Each target's rows of one feature add up to its Shapley value."""
        if self.interactions is None:
            raise CohortError("this result has no interaction values: run it again with interactions=True")
        targets, d = len(self.ids), len(self.features)
        names = np.array(self.features, dtype=object)
        columns = {
            "id": self.ids.gather(np.repeat(np.arange(targets), d * d)),
            "feature": pl.Series(np.tile(np.repeat(names, d), targets).tolist(), dtype=pl.String),
            "other": pl.Series(np.tile(names, d * targets).tolist(), dtype=pl.String),
            "interaction": self.interactions.reshape(-1),
        }
        if self.interactions_se is not None:
            columns["interaction_se"] = self.interactions_se.reshape(-1)
        return pl.DataFrame(columns)

    def to_arrow(self) -> pa.Table:
        """The long table `local` as Arrow."""
        return self.local.to_arrow()

    def write_parquet(self, path: str | os.PathLike[str]) -> None:
        """Write the long table `local` to a Parquet file, atomically, with the run's settings as metadata."""
        write_frame(self.local, path, self.settings)
