"""The null reference beside a run's shares (`cohortsql.run.null_copies`): per player, the mean share of
B shuffled copies of it (``null_share``), their upper quantile at the run's confidence
(``null_share_high``) and the permutation p-value (``p_value``). A share clears its null when its
p-value is at most 1 - confidence; one that does not is indistinguishable from a shuffled copy of
itself, whatever its size."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np
import polars as pl

from cohortsql.formats.tables import percent
from cohortsql.numeric.null import p_values, smallest_p_value, upper_quantiles

Verdict = Literal["above", "too few copies", "at the floor"]
"""What a share's null reference says of it (`NullReference.verdict`)."""


@dataclass(frozen=True, eq=False)
class NullReference:
    """Shuffled copies' shares beside each player's own: what an unrelated column would get."""

    players: tuple[str, ...]
    """The players whose columns were copied, in the order asked."""
    observed: np.ndarray
    """Each player's own share, (players,)."""
    copy_shares: np.ndarray
    """Each copy's share, (players, copies): copy b of every player is drawn with one permutation."""
    confidence: float
    """The upper quantile's level; a share clears its null when p_value <= 1 - confidence."""
    seed: int
    """Seeds the permutations (the same draws on every engine)."""

    @property
    def copies(self) -> int:
        """B: how many shuffled copies of each player."""
        return int(self.copy_shares.shape[1])

    @cached_property
    def table(self) -> pl.DataFrame:
        """One row per player: ``feature``, ``null_share`` (the copies' mean share), ``null_share_high``
        (their `confidence` quantile) and ``p_value``."""
        return pl.DataFrame(
            {
                "feature": pl.Series(list(self.players), dtype=pl.String),
                "null_share": self.copy_shares.mean(axis=1),
                "null_share_high": upper_quantiles(self.copy_shares, self.confidence),
                "p_value": p_values(self.observed, self.copy_shares),
            }
        )

    def clears(self, player: str) -> bool:
        """Whether `player`'s share is above its null: p_value <= 1 - confidence."""
        return self.verdict(player) == "above"

    def verdict(self, player: str) -> Verdict:
        """``above`` its null (p_value <= 1 - confidence); ``too few copies`` to tell (above every copy,
        but B copies cannot give a p-value that small); else ``at the floor``: indistinguishable from
        a shuffled copy of itself."""
        p = float(self.table.row(self.players.index(player), named=True)["p_value"])
        if p <= 1 - self.confidence + 1e-12:
            return "above"
        if p <= smallest_p_value(self.copies) + 1e-12:
            return "too few copies"
        return "at the floor"

    def joined(self, table: pl.DataFrame, on: str = "feature") -> pl.DataFrame:
        """`table` (one row per player in column `on`) with the null's columns; null for players
        without copies."""
        return table.join(self.table.rename({"feature": on}), on=on, how="left", maintain_order="left")

    def words(self, player: str) -> str:
        """The player's share against its null, in words (after the share itself is said)."""
        row = self.table.row(self.players.index(player), named=True)
        level = f"{self.confidence:.0%}"
        copies = (
            f"{self.copies} shuffled copies of it get {percent(row['null_share'])} on average, {level} of them"
            f" at most {percent(row['null_share_high'])}; p = {row['p_value']:.2g}"
        )
        verdict = self.verdict(player)
        if verdict == "above":
            return f"above its null ({copies})"
        if verdict == "too few copies":
            needed = math.ceil(1 / (1 - self.confidence) - 1 - 1e-9)
            return (
                f"above every shuffled copy, but {self.copies} copies cannot tell it from one at {level} ({copies};"
                f" null={needed} or more can)"
            )
        return f"indistinguishable from a shuffled copy of itself ({copies})"
