"""The Bayesian bootstrap's Exp(1) draws as an engine computes them, for tests that rebuild a
replicate as the run reweighted by its draws."""

import numpy as np
import pyarrow as pa

from cohortsql import queries
from cohortsql.engines.base import fetch_numpy


def evaluated(engine, ids: range, columns: dict[str, str]) -> dict[str, np.ndarray]:
    """SQL expressions over ``__cohort_id`` evaluated by the engine for the given ids, in id order."""
    running = engine.open()
    try:
        uploaded = running.upload(pa.table({"__cohort_id": np.array(ids, dtype=np.int64)}), "ids")
        listed = ", ".join(f"{sql} AS {name}" for name, sql in columns.items())
        return fetch_numpy(running, f"SELECT {listed} FROM {uploaded} ORDER BY __cohort_id", context="test")
    finally:
        running.close()


def draws(engine, ids: range, replicates: range, seed: int) -> np.ndarray:
    """The SQL draws e_b(id), shape (ids, replicates), as the engine computes them."""
    with engine.open() as running:
        dialect = running.dialect
    values = evaluated(engine, ids, {f"e{b}": replicate_draw(b, seed, dialect) for b in replicates})
    return np.column_stack([values[f"e{b}"] for b in replicates])


def replicate_draw(replicate: int, seed: int, dialect) -> str:
    """SQL of subject ``__cohort_id``'s Exp(1) draw for replicate `replicate` >= 1, hash included."""
    group, part = queries.measures.draw_group(replicate)
    return queries.measures.draw_from_hash(queries.measures.draw_hash(group, seed, dialect), part, dialect)
