"""One call's session: the engine opened once, the input registered once, the whole-table statistics
computed once, and the targets chosen once, shared by every game the call runs.

Every public method opens a `Session` (``with open_session(...) as session``) and hands it to its
games; `cohortsql.compare` hands one session to cohort, baseline and all-baseline Shapley, so the data
are read once and all three explain the same sample of targets.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import polars as pl

from cohortsql.engines import open_engine
from cohortsql.engines.base import Engine, EngineSettings
from cohortsql.formats.settings import run_settings
from cohortsql.games.base import Game
from cohortsql.numeric import compilation
from cohortsql.request.arguments import RowMask
from cohortsql.request.features import ResolvedFeature
from cohortsql.request.options import Options, Where
from cohortsql.request.similarity import Similarity, SimilarityArgument
from cohortsql.run.data_rows import sampled_data
from cohortsql.run.pace import Pacer
from cohortsql.run.preparation import Prepared, prepare
from cohortsql.run.progress import Reporter, reporter
from cohortsql.run.targets import TargetSet, read_target_data, select_targets


@dataclass
class Session:
    """The engine and the prepared data of one call (see `cohortsql.run.preparation.Prepared`)."""

    engine: Engine
    prepared: Prepared
    options: Options
    """The call's checked options (`cohortsql.request.options.checked_options`): its targets, sample,
    seed, progress and bootstrap are read from here."""
    _target_data: list[tuple[TargetSet, pl.DataFrame]] = field(default_factory=list, repr=False)
    """The target rows read so far, with the target set they belong to (held, so never mistaken for another)."""
    chosen: TargetSet | None = None
    """The targets, when they were chosen before the session was made (a permuted copy's session reads
    the call's own targets); else None, and `select` chooses them."""

    def select(self) -> TargetSet:
        """The target rows the call asked for: every row, a predicate's, a random sample of either, or
        the rows with given ids."""
        if self.chosen is not None:
            return self.chosen
        selection = self.options.selection
        return select_targets(
            self.engine, self.prepared, selection.targets, selection.seed, selection.sample, selection.include
        )

    def target_data(self, chosen: TargetSet) -> pl.DataFrame:
        """The chosen targets' rows as they are in the data (every column), read once per target set."""
        for read, frame in self._target_data:
            if read is chosen:
                return frame
        frame = read_target_data(self.engine, self.prepared, chosen)
        self._target_data.append((chosen, frame))
        return frame

    def sample_rows(self, rows: int) -> pl.DataFrame:
        """About `rows` subject rows as they are in the data (every column): all of them when there are
        no more, else each row kept with probability rows / subjects on its hash with the call's seed (0
        when it has none; no sort, so bounded memory). What checks of the data as a whole read
        (`cohortsql.results.copies.warn_about_copies`)."""
        seed = self.options.selection.seed or 0
        fraction = rows / self.prepared.subject_count if self.prepared.subject_count else 1.0
        return sampled_data(self.engine, self.prepared, fraction, seed)

    def reporter(self) -> Reporter:
        """Where this call reports its progress."""
        return reporter(self.options.where.progress)

    def settings(self, chosen: TargetSet | None, *, method: str, path: str) -> dict[str, str]:
        """The run's settings as text, written with its outputs so that a result says how it was made."""
        prepared, selection, weighting = self.prepared, self.options.selection, self.options.weighting
        return run_settings(
            engine=self.engine.dialect.name,
            prediction=prepared.outcomes[0] if len(prepared.outcomes) == 1 else list(prepared.outcomes),
            id=prepared.id,
            weight=prepared.weight,
            similarity={feature.name: str(feature.kind) for feature in prepared.features},
            **_default_kinds(prepared),
            **_windows(prepared),
            method=method,
            path=path,
            targets=_described_targets(selection.targets),
            sample=selection.sample,
            include=None if selection.include is None else _described_targets(selection.include),
            seed=chosen.seed if chosen is not None and chosen.seed is not None else selection.seed,
            **({"bootstrap": weighting.bootstrap, "confidence": weighting.confidence} if weighting.bootstrap else {}),
            **_groups(prepared),
        )

    def result_fields(self, chosen: TargetSet, outcome: int | None) -> dict[str, Any]:
        """The result fields every game shares, and (with `outcome`) those of explained column number `outcome`."""
        prepared = self.prepared
        target_data = self.target_data(chosen)
        alone = {feature.name: feature for feature in _features_alone(prepared)}
        fields = dict(
            ids=pl.Series("id", chosen.table.column("__cohort_id")),
            features=prepared.player_names,
            similarity=player_similarity(prepared),
            subjects=prepared.subject_count,
            targets=target_data,
            # an included target weighs 0: it counts in no average over targets
            weights=chosen.weights[:, 0] if prepared.weight is not None or chosen.included else None,
            groups=None if prepared.groups is None else prepared.groups.members_by_name(prepared.feature_names),
            asked=chosen.asked,
        )
        if outcome is None:
            return fields
        name = prepared.outcomes[outcome]
        return fields | dict(
            kinds=feature_kinds(prepared),
            feature_statistics={
                name: {key: None if value is None else float(value) for key, value in feature.parameters.items()}
                for name, feature in alone.items()
            },
            mean=float(prepared.means[outcome]),
            variance=float(prepared.variances[outcome]),
            prediction=target_data[name].cast(pl.Float64).to_numpy(),
            population=chosen.population,
            outcome=name,
            total_weight=prepared.total_weight if prepared.weight is not None else None,
        )


class GamePass(NamedTuple):
    """What an exact driver of dense games reads (`cohortsql.run.pairwise.dense_games`,
    `cohortsql.run.grouping_sets.dense_games`): the call's session (its engine and prepared input), the
    chosen targets, the pacer that sizes the batches, and the games to value."""

    session: Session
    targets: TargetSet
    pacer: Pacer
    games: Sequence[Game]


@contextmanager
def opened_engine(data: Any, where: Where) -> Iterator[Engine]:
    """The engine for a call, closed (dropping what it created) when the call ends."""
    settings = EngineSettings(
        memory_limit=where.memory_limit,
        temp_directory=None if where.temp_directory is None else os.fspath(where.temp_directory),
        spark_master=where.spark_master,
    )
    running = open_engine(data, engine=where.engine, connection=where.connection, settings=settings)
    try:
        yield running
    except BaseException:
        with contextlib.suppress(Exception):  # the failure to report is the first one, not the cleanup's
            running.close()
        raise
    running.close()


@contextmanager
def open_session(
    data: Any,
    options: Options,
    *,
    outcomes: Sequence[str],
    similarity: SimilarityArgument,
    max_features: int,
    powers: tuple[int, ...] = (1,),
    snapshot: bool = False,
    rows_identified: bool = True,
) -> Iterator[Session]:
    """Open the engine, register `data` and prepare it once (`cohortsql.run.preparation.prepare`) under
    a call's checked `options` (its ``id``, ``weight``, ``targets``, bootstrap replicates with their
    seed, and where-and-how options); a ``targets`` predicate is checked and marks the subjects that
    are targets. `rows_identified=False`: a computation that reads no row by itself needs no row positions
    (`cohortsql.run.preparation.prepare`)."""
    targets = options.selection.targets
    announce = reporter(options.where.progress).note
    with opened_engine(data, options.where) as engine, compilation.announcing(announce):
        prepared = prepare(
            engine,
            data,
            outcomes=outcomes,
            similarity=similarity,
            id=options.selection.id,
            weight=options.weighting.weight,
            target_predicate=targets if isinstance(targets, str) else None,
            max_features=max_features,
            powers=powers,
            replicates=options.weighting.bootstrap,
            seed=options.selection.seed or 0,
            groups=options.grouping.groups,
            group_values=options.grouping.group_values,
            snapshot=snapshot,
            rows_identified=rows_identified,
        )
        yield Session(engine, prepared, options)


def compared_exactly(prepared: Prepared) -> frozenset[str]:
    """The features a window compares exactly in effect: whole numbers (or booleans) within a window
    narrower than 1, the smallest gap between two of their values; no narrower setting changes them."""
    return frozenset(
        feature.name
        for feature in prepared.features
        if feature.values in ("integer", "boolean")
        and isinstance(feature.parameters.get("delta"), (int, float))
        and float(feature.parameters["delta"]) < 1
    )


def feature_kinds(prepared: Prepared) -> dict[str, Similarity]:
    """Each feature's similarity kind (defaults resolved), members of groups included."""
    return {feature.name: feature.kind for feature in _features_alone(prepared)}


def player_similarity(prepared: Prepared) -> dict[str, str]:
    """Each player's similarity as text: a feature's kind, or a group's members' kinds joined by AND."""
    if prepared.groups is None:
        return {feature.name: str(feature.kind) for feature in prepared.features}
    alone = {feature.name for feature in _features_alone(prepared)}
    return {
        name: str(prepared.features[members[0]].kind)
        if name in alone
        else " AND ".join(f"{prepared.features[index].name}={prepared.features[index].kind}" for index in members)
        for name, members in zip(prepared.groups.names, prepared.groups.members)
    }


def _features_alone(prepared: Prepared) -> list[ResolvedFeature]:
    """The features that are players by themselves, under their own names (all of them without groups)."""
    if prepared.groups is None:
        return list(prepared.features)
    return [
        prepared.features[members[0]]
        for name, members in zip(prepared.groups.names, prepared.groups.members)
        if len(members) == 1 and prepared.features[members[0]].name == name
    ]


def _groups(prepared: Prepared) -> dict[str, str | dict[str, list[str]]]:
    """``groups`` and ``group_values`` of a grouped run (nothing otherwise)."""
    if prepared.groups is None:
        return {}
    return {"groups": prepared.groups.described(prepared.feature_names), "group_values": prepared.groups.values}


def _default_kinds(prepared: Prepared) -> dict[str, dict[str, str]]:
    """``default_kinds``: why each feature given without a kind got its kind (nothing when all were given)."""
    reasons = {feature.name: feature.reason for feature in prepared.features if feature.reason is not None}
    return {"default_kinds": reasons} if reasons else {}


def _windows(prepared: Prepared) -> dict[str, dict[str, float]]:
    """``windows``: each numeric feature's window half-width in its own units (``quantile:0.1`` on
    income is income within ± this much); dates and timestamps are left out (their widths are counted
    in days or microseconds, which their kinds' text already says)."""
    widths = {
        feature.name: float(f"{float(feature.parameters['delta']):.12g}")  # 4.6, not 4.6000000000000005
        for feature in prepared.features
        if feature.values in ("integer", "float", "decimal") and feature.parameters.get("delta") is not None
    }
    return {"windows": widths} if widths else {}


def _described_targets(targets: Any) -> str:
    """The targets argument as text: every row, a predicate, a sample size, or (the first) ids."""
    if targets is None:
        return "every row"
    if isinstance(targets, (str, int, float, RowMask)):
        return str(targets)
    listed = list(targets)
    return repr(listed[:20])[:-1] + (f", ... ({len(listed)} ids)]" if len(listed) > 20 else "]")
