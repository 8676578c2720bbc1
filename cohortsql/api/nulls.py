"""The null reference of a public method's shares (``null=B``): B shuffled copies of each feature asked,
each copy's share computed by the method's own function on the call's session
(`cohortsql.run.null_copies`), beside the feature's own share (`cohortsql.results.null.NullReference`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from cohortsql.results.null import NullReference
from cohortsql.run.null_copies import Shares, null_shares
from cohortsql.run.session import Session


def null_references(
    session: Session, shares: Shares, observed: np.ndarray, variances: np.ndarray | None = None
) -> list[NullReference] | None:
    """One `NullReference` per result of the call (`observed`: its shares, (results, players) in the
    prepared players' order), for the call's ``null_features`` (else every player); None when the call
    asked for no null (``null=0``). A cohort run gives the `variances` its shares divide by, so that its
    copies may take one pass (`cohortsql.run.null_copies.null_shares`)."""
    nulls, prepared = session.options.nulls, session.prepared
    if not nulls.null:
        return None
    asked = tuple(nulls.null_features or prepared.player_names)
    found = null_shares(session, asked, nulls.null, shares, variances)
    positions = [prepared.player_names.index(player) for player in asked]
    return [
        NullReference(
            players=asked,
            observed=observed[result, positions],
            copy_shares=found[result],
            confidence=session.options.weighting.confidence,
            seed=session.options.selection.seed or 0,
        )
        for result in range(observed.shape[0])
    ]


def shares_by_player(tables: Sequence[pl.DataFrame], players: Sequence[str], column: str = "share") -> np.ndarray:
    """(results, players): each result's `column` of its table (a polars frame with ``feature``), in the
    players' order."""
    rows = []
    for table in tables:
        by_feature = dict(zip(table["feature"].to_list(), table[column].to_list()))
        rows.append([by_feature[player] for player in players])
    return np.asarray(rows, dtype=np.float64)
