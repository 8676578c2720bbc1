"""The integrated path's histograms outside SQL, for an engine whose subjects stream to this process
at memory speed (DuckDB): per target, each subject's count k of dissimilar players with its measures,
in total and per dissimilar player (`DissimilarHistogram`), or its smallest dissimilar rank along a
given order (`RankHistogram`); numba where installed, numpy otherwise. The tests are those of
`cohortsql.numeric.pair_masks` (each kind's numeric twin of its SQL predicate, the same arithmetic),
and a player is dissimilar when any of its features is. Pure numpy, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cohortsql.numeric import kernels
from cohortsql.numeric.pair_masks import Columns, _parameters, similar
from cohortsql.numeric.pair_tests import PairTest


class DissimilarHistogram:
    """The (target, k) histogram of `targets` against the subjects `add`ed so far, each measure m's sum in
    total (``totals[t, m, k, 0]``) and over the subjects not similar on each player p (``totals[t, m, k,
    1 + p]``: a k's players side by side, as the kernel adds a subject to them); with `ranks`, instead,
    the (target, smallest dissimilar rank) histogram (``totals[t, m, rank, 0]``)."""

    def __init__(
        self,
        targets: Columns,
        tests: Sequence[PairTest],
        player_of: np.ndarray,
        sums: int,
        ranks: np.ndarray | None = None,
    ) -> None:
        count, players = targets.floats.shape[1], int(player_of.max(initial=-1)) + 1
        self.by_target = tuple(np.ascontiguousarray(array.T) for array in targets.arrays)
        self.targets, self.parameters, self.player_of = targets, _parameters(tests), player_of.astype(np.int64)
        self.ranks = np.zeros((0, players), dtype=np.int64) if ranks is None else ranks.astype(np.int64)
        rows = 1 if ranks is not None else players + 1
        self.totals = np.zeros((count, sums, players + 2, rows))

    def add(self, subjects: Columns, measures: np.ndarray) -> None:
        """Add subjects (`measures`: one row of sums each) to every target's cells."""
        if kernels.available():
            kernels.compiled_function("dissimilar_histogram")(
                subjects.arrays,
                measures,
                self.by_target,
                self.parameters,
                self.player_of,
                self.ranks,
                self.totals,
            )
        else:
            self._add_in_numpy(subjects, measures)

    def _add_in_numpy(self, subjects: Columns, measures: np.ndarray) -> None:
        players = self.totals.shape[2] - 2
        cells = players + 2
        for t in range(self.targets.floats.shape[1]):
            flags = np.zeros((players, len(measures)), dtype=np.bool_)
            for j in range(len(self.player_of)):
                flags[self.player_of[j]] |= ~similar(subjects, self.targets, t, j, self.parameters)
            if self.ranks.shape[0]:
                cell = np.where(flags, self.ranks[t][:, None], players + 1).min(axis=0, initial=players + 1)
            else:
                cell = flags.sum(axis=0)
            for m in range(measures.shape[1]):
                self.totals[t, m, :, 0] += np.bincount(cell, weights=measures[:, m], minlength=cells)
                if not self.ranks.shape[0]:
                    for p in range(players):
                        chosen = flags[p]
                        weights = measures[chosen, m]
                        self.totals[t, m, :, 1 + p] += np.bincount(cell[chosen], weights=weights, minlength=cells)


def targets_per_pass(players: int, sums: int, budget: int) -> int:
    """The targets whose dense (target, k, player) cells (`DissimilarHistogram.totals`) fit in `budget` bytes."""
    return max(1, budget // ((players + 1) * (players + 2) * sums * 8))
