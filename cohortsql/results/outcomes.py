"""Results of several explained columns over the same cohorts (``prediction=[...]``).

One SQL pass sums every outcome, so each column's values come from the same cohorts and the same
bootstrap replicates (differences between outcomes are paired). A container maps each column to its
own result, and stacks their tables with an ``outcome`` column first.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar, overload

import polars as pl
import pyarrow as pa

from cohortsql.errors import CohortError
from cohortsql.formats.files import write_frame
from cohortsql.formats.settings import Settings
from cohortsql.formats.tables import Diagnostics
from cohortsql.results.cohort import CohortShapleyResult
from cohortsql.results.effects import ShapleyEffects

R = TypeVar("R", CohortShapleyResult, ShapleyEffects)


class _ByOutcome(Mapping[str, R], Generic[R]):
    """A read-only mapping from each explained column to its result, in the order given."""

    def __init__(self, results: Mapping[str, R]) -> None:
        if not results:
            raise ValueError("a result of several outcomes needs at least one")
        self._results: dict[str, R] = dict(results)

    def __getitem__(self, outcome: str) -> R:
        if outcome not in self._results:
            raise CohortError(f"{outcome!r} is not an explained column here; they are: {', '.join(self._results)}")
        return self._results[outcome]

    def __iter__(self) -> Iterator[str]:
        return iter(self._results)

    def __len__(self) -> int:
        return len(self._results)

    @property
    def outcomes(self) -> tuple[str, ...]:
        """The explained columns, in the order given."""
        return tuple(self._results)

    @property
    def settings(self) -> Settings:
        """The run's settings (those of the first outcome, with every explained column)."""
        first = next(iter(self._results.values()))
        return {**first.settings, "prediction": list(self._results)}

    def _stacked(self, table: Callable[[R], pl.DataFrame]) -> pl.DataFrame:
        """`table` of every outcome's result, stacked, with an ``outcome`` column first."""
        return pl.concat(
            [
                table(result).select(pl.lit(outcome).alias("outcome"), pl.all())
                for outcome, result in self._results.items()
            ],
            how="diagonal_relaxed",
        )


class _Stacked:
    """A table property of a result by outcome: the table of the same name of every outcome's
    result, stacked with an ``outcome`` column first."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.__doc__ = f"Every outcome's ``{name}``, stacked with an ``outcome`` column first."

    @overload
    def __get__(self, instance: None, owner: type) -> _Stacked: ...
    @overload
    def __get__(self, instance: _ByOutcome[Any], owner: type) -> pl.DataFrame: ...
    def __get__(self, instance: _ByOutcome[Any] | None, owner: type) -> _Stacked | pl.DataFrame:
        if instance is None:
            return self
        return instance._stacked(lambda result: getattr(result, self.name))


class CohortShapleyResults(_ByOutcome[CohortShapleyResult]):
    """Cohort Shapley values of several explained columns over the same cohorts: ``res["score"]`` is
    one column's `CohortShapleyResult`; ``local``, ``totals``, ``paths``, ``global_``, ``reasons`` and
    ``by`` stack every column's tables with an ``outcome`` column first."""

    local = _Stacked()
    totals = _Stacked()
    paths = _Stacked()
    global_ = _Stacked()
    interaction_table = _Stacked()
    owen_table = _Stacked()

    @property
    def diagnostics(self) -> Diagnostics:
        """The cohorts' diagnostics (the same cohorts for every outcome)."""
        return next(iter(self.values())).diagnostics

    def reasons(self, k: int = 3) -> pl.DataFrame:
        return self._stacked(lambda result: result.reasons(k))

    def anchored(self, max_order: int | None = None) -> pl.DataFrame:
        return self._stacked(lambda result: result.anchored(max_order))

    def by(self, column: str, reference: object = None) -> pl.DataFrame:
        return self._stacked(lambda result: result.by(column, reference))

    def to_arrow(self) -> pa.Table:
        """The stacked long table `local` as Arrow."""
        return self.local.to_arrow()

    def write_parquet(self, path: str | os.PathLike[str]) -> None:
        """Write the stacked long table `local` to a Parquet file, atomically, with the run's settings."""
        write_frame(self.local, path, self.settings)

    def __repr__(self) -> str:
        first = next(iter(self.values()))
        return (
            f"CohortShapleyResults({', '.join(self.outcomes)}: {len(first.ids)} targets x"
            f" {len(first.features)} features, {first.subjects} subjects)"
        )


class ShapleyEffectsResults(_ByOutcome[ShapleyEffects]):
    """Shapley effects of several explained columns over the same cohorts: ``res["score"]`` is one
    column's `ShapleyEffects`; ``effects`` stacks their tables with an ``outcome`` column first."""

    effects = _Stacked()
    interaction_table = _Stacked()
    owen_table = _Stacked()

    def anchored(self, max_order: int | None = None) -> pl.DataFrame:
        return self._stacked(lambda result: result.anchored(max_order))

    @property
    def diagnostics(self) -> Diagnostics:
        return next(iter(self.values())).diagnostics

    def __repr__(self) -> str:
        return f"ShapleyEffectsResults({', '.join(self.outcomes)})\n{self.effects}"
