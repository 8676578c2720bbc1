"""PostgreSQL through ADBC against DuckDB on the same data and machine, in one run.

Three ways to the same cohort Shapley values:

    duckdb     cohortsql.cohort_shapley on DuckDB, in this process (the reference)
    library    cohortsql.cohort_shapley on the PostgreSQL server (``connection=`` an ADBC connection):
               statistics, subjects and the mask histogram run there, only histograms come back as
               Arrow and are finished in numpy here
    values     cohortsql.shapley_table on the server: the whole computation as one values query in
               PostgreSQL's SQL, every target's values back as Arrow

on Boston housing (all 506 tracts, 13 quantile:0.1 windows) and on 1,000,000 uniform rows x about 100
targets x 12 abs:0.1 windows (the file bench_scale.py writes, numbered by an id column). The tables are
loaded into the server once (adbc_ingest, not timed). Each figure is the median of `--repeats` runs,
the ways interleaved so that drift on a shared machine hits them alike.

The server is the one `--uri` names (``postgresql://user@host/db``), else one of this run's own: Debian's
PostgreSQL, a fresh cluster with its default settings (as the tests start it, tests/postgres.py).

    python benchmarks/bench_warehouse.py [--rows 1000000] [--repeats 3] [--uri postgresql://...]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

import cohortsql

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from bench_engines import BOSTON, BOSTON_FEATURES  # noqa: E402
from bench_scale import data_path  # noqa: E402
from bench_values_sql import interleaved  # noqa: E402
from common import machine  # noqa: E402


@contextlib.contextmanager
def server(uri: str | None) -> Iterator[str]:
    """The URI of the PostgreSQL server to measure: `uri`, else a cluster started for this run."""
    if uri is not None:
        yield uri
        return
    from postgres import running_server, server_binaries

    binaries = server_binaries()
    if binaries is None:
        raise SystemExit("no PostgreSQL server (initdb, pg_ctl) found: apt-get install postgresql, or pass --uri")
    with running_server(binaries) as connection:
        version = connection.execute("SHOW server_version").fetchone()[0]
        print(f"PostgreSQL {version}, a cluster of this run's own (default settings)")
        yield f"postgresql://cohortsql@localhost:{connection.info.port}/postgres"


def load(connection: Any, name: str, table: pa.Table) -> None:
    """`table` as the server's table `name` (replaced), with fresh planner statistics."""
    with connection.cursor() as cursor:
        cursor.execute(f'DROP TABLE IF EXISTS "{name}"')
        cursor.adbc_ingest(name, table, mode="create")
        cursor.execute(f'ANALYZE "{name}"')


def case(title: str, connection: Any, table: pa.Table, name: str, options: dict[str, Any], repeats: int) -> None:
    load(connection, name, table)

    def values_on_server() -> np.ndarray:
        values = cohortsql.shapley_table(name, connection=connection, **options)
        wide = values.sort_by([("id", "ascending")])
        return np.column_stack(
            [
                wide.filter(pa.compute.equal(wide["feature"], feature))["shapley"].to_numpy()
                for feature in options["similarity"]
            ]
        )

    ways: dict[str, Callable[[], Any]] = {
        "duckdb (library)": lambda: cohortsql.cohort_shapley(table, progress=False, **options).shapley,
        "postgres (library)": lambda: (
            cohortsql.cohort_shapley(name, connection=connection, progress=False, **options).shapley
        ),
        "postgres (values query)": values_on_server,
    }
    timed = interleaved(ways, repeats)
    reference_time, reference = timed["duckdb (library)"]
    print(f"\n{title}: median of {repeats}")
    for way, (seconds, result) in timed.items():
        error = float(np.abs(np.asarray(result) - reference).max())
        print(f"    {way:26s} {seconds:7.2f} s  {seconds / reference_time:6.1f}x DuckDB  max |diff| {error:.1e}")


def main(rows: int, repeats: int, uri: str | None) -> None:
    import adbc_driver_postgresql.dbapi

    warnings.simplefilter("ignore", cohortsql.CohortWarning)  # the data's own warnings, the same on every way
    print(machine())
    boston = duckdb.sql(f"SELECT row_number() OVER () - 1 AS id, * FROM '{BOSTON}'").to_arrow_table()
    uniform = duckdb.sql(f"SELECT row_number() OVER () - 1 AS id, * FROM '{data_path(rows, 12)}'").to_arrow_table()
    targets = "x0 < 0.0001"
    count = duckdb.sql(f"SELECT count(*) FROM uniform WHERE {targets}").fetchall()[0][0]
    with server(uri) as address, adbc_driver_postgresql.dbapi.connect(address, autocommit=True) as connection:
        case(
            "Boston, 506 targets x 13 quantile:0.1",
            connection,
            boston,
            "boston",
            {"prediction": "prediction", "id": "id", "similarity": dict.fromkeys(BOSTON_FEATURES, "quantile:0.1")},
            repeats,
        )
        case(
            f"{rows:,} rows x {count} targets x 12 abs:0.1",
            connection,
            uniform,
            "uniform",
            {
                "prediction": "y",
                "id": "id",
                "similarity": {f"x{j}": "abs:0.1" for j in range(12)},
                "targets": targets,
            },
            repeats,
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--uri", help="a PostgreSQL server to measure (default: start one for this run)")
    arguments = parser.parse_args()
    main(arguments.rows, arguments.repeats, arguments.uri)
