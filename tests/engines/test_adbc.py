"""The adbc engine on a real PostgreSQL server (tests/postgres.py): the library's path runs in the
warehouse and equals DuckDB on the same rows, and what is particular to a warehouse behind a driver:
its own SQL for the data query, names folded as the server folds them, transactions left usable,
cancels, credentials never shown, and the dialect that follows the driver.

The data are the Titanic passengers (examples/data/titanic.csv: 263 missing ages), with the day each
boarded (Southampton, Cherbourg, Queenstown in turn: a date for date windows) and a weight per row.
The whole correctness suite also runs on this engine (the `engine` fixture of conftest.py).
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app
from cohortsql.engines import open_engine

pytest.importorskip("adbc_driver_postgresql", reason="the postgres extra is not installed")

TITANIC = Path(__file__).parents[2] / "examples" / "data" / "titanic.csv"


def passengers() -> pl.DataFrame:
    frame = pl.read_csv(TITANIC).with_row_index("id").with_columns(pl.col("id").cast(pl.Int64))
    return frame.with_columns(
        y=(pl.col("survived") == "survived").cast(pl.Float64),
        age_nan=pl.col("age").fill_null(float("nan")),
        boarded=pl.lit(datetime.date(1912, 4, 10)) + pl.duration(days=pl.col("id") % 3),
        w=(pl.col("parch") + 1).cast(pl.Float64),
    ).drop("survived")


@pytest.fixture(scope="module")
def warehouse(postgres, adbc_postgres):
    from postgres import load_table

    frame = passengers()
    load_table(postgres, "passengers", frame)
    postgres.execute("DROP VIEW IF EXISTS slow_passengers")
    postgres.execute("CREATE VIEW slow_passengers AS SELECT * FROM passengers WHERE pg_sleep(0.05) IS NOT NULL")
    return frame


EVERY_KIND = {
    "pclass": "exact",
    "sex": "exact",
    "age": "abs:5",
    "sibsp": "bins:3",
    "parch": "range:0.2",
    "boarded": "abs:1",
}
OTHER_KINDS = {
    "age_nan": "quantile:0.1",
    "age": "relative:0.2",
    "sibsp": "sql:abs(s.sibsp - t.sibsp) <= 1",
    "sex": "exact",
}


def same_local(on_server: pl.DataFrame, on_duckdb: pl.DataFrame) -> None:
    """The same values (``id, feature, shapley, shapley_squared``) for the same targets, to 1e-9."""
    left, right = on_server.sort("id", "feature"), on_duckdb.sort("id", "feature")
    assert left["id"].to_list() == right["id"].to_list() and left["feature"].to_list() == right["feature"].to_list()
    for column in ("shapley", "shapley_squared"):
        np.testing.assert_allclose(left[column].to_numpy(), right[column].to_numpy(), rtol=0, atol=1e-9)


@pytest.mark.parametrize("similarity", [EVERY_KIND, OTHER_KINDS], ids=["every-kind", "other-kinds"])
@pytest.mark.parametrize(
    "options",
    [{}, {"weight": "w"}, {"targets": "sex = 'female' AND pclass <> '3rd'"}, {"weight": "w", "targets": "age > 30"}],
    ids=["plain", "weighted", "predicate", "weighted-predicate"],
)
def test_the_warehouse_computes_what_duckdb_computes(warehouse, adbc_postgres, similarity, options):
    """NULL and NaN ages, a date window, weights and a predicate: the values and the Shapley effects
    from the server's own table equal DuckDB's on the same rows to 1e-9."""
    on_server = cohortsql.cohort_shapley(
        "passengers", prediction="y", similarity=similarity, id="id", connection=adbc_postgres, **options
    )
    on_duckdb = cohortsql.cohort_shapley(warehouse, prediction="y", similarity=similarity, id="id", **options)
    same_local(on_server.local, on_duckdb.local)
    effects = cohortsql.shapley_effects(
        "passengers", prediction="y", similarity=similarity, id="id", connection=adbc_postgres, **options
    )
    expected = cohortsql.shapley_effects(warehouse, prediction="y", similarity=similarity, id="id", **options)
    np.testing.assert_allclose(
        effects.effects.sort("feature")["shapley_effect"].to_numpy(),
        expected.effects.sort("feature")["shapley_effect"].to_numpy(),
        rtol=1e-9,
        atol=1e-12,
    )


def test_bootstrap_draws_use_the_warehouses_own_md5(warehouse, adbc_postgres):
    """The replicates' draws come from md5 of the same text on every engine: the intervals agree."""
    similarity = {"pclass": "exact", "age": "abs:5"}
    on_server = cohortsql.cohort_shapley(
        "passengers", prediction="y", similarity=similarity, id="id", bootstrap=30, seed=4, connection=adbc_postgres
    )
    on_duckdb = cohortsql.cohort_shapley(
        warehouse, prediction="y", similarity=similarity, id="id", bootstrap=30, seed=4
    )
    left, right = on_server.local.sort("id", "feature"), on_duckdb.local.sort("id", "feature")
    for column in ("shapley_ci_low", "shapley_ci_high"):
        np.testing.assert_allclose(left[column].to_numpy(), right[column].to_numpy(), rtol=0, atol=1e-9)


def test_uniqueness_estimate_and_the_grouping_sets_path(warehouse, adbc_postgres):
    kinds = {"pclass": "exact", "sex": "exact", "sibsp": "exact"}
    unique = cohortsql.uniqueness_shapley("passengers", similarity=kinds, id="id", connection=adbc_postgres)
    expected = cohortsql.uniqueness_shapley(warehouse, similarity=kinds, id="id")
    np.testing.assert_allclose(unique.shapley, expected.shapley, atol=1e-12)
    cells = cohortsql.cohort_shapley(
        "passengers", prediction="y", similarity=kinds, id="id", path="grouping_sets", connection=adbc_postgres
    )
    same_local(cells.local, cohortsql.cohort_shapley(warehouse, prediction="y", similarity=kinds, id="id").local)
    plan = cohortsql.estimate("passengers", prediction="y", similarity=kinds, id="id", connection=adbc_postgres)
    assert plan.targets == warehouse.height


def test_the_data_query_is_the_warehouses_own_sql(warehouse, adbc_postgres):
    """PostgreSQL's own syntax (``::`` casts, ILIKE), run as written; a schema-qualified name; and an
    unquoted name in another case, folded to lower case as PostgreSQL folds it."""
    query = "SELECT id, y, age::float8 AS age, sex FROM passengers WHERE sex ILIKE 'FEMALE'"
    result = cohortsql.cohort_shapley(
        query, prediction="y", similarity={"age": "abs:5"}, id="id", connection=adbc_postgres
    )
    women = warehouse.filter(pl.col("sex") == "female")
    same_local(
        result.local, cohortsql.cohort_shapley(women, prediction="y", similarity={"age": "abs:5"}, id="id").local
    )
    for name in ("public.passengers", "PASSENGERS", '"passengers"', 'Public."passengers"'):
        named = cohortsql.cohort_shapley(
            name, prediction="y", similarity={"sex": "exact"}, id="id", connection=adbc_postgres
        )
        assert named.local.height == warehouse.height


@pytest.mark.parametrize(
    "data, options, fragment",
    [
        ("passengers", {"similarity": {"fare": "abs:1"}}, "fare"),
        ("passengers", {"similarity": {"age": "wide:3"}}, "wide:3"),
        ("passengers", {"similarity": ["age"], "id": None}, "pass id="),
        ("no_such_table", {"similarity": ["age"]}, "no_such_table"),
        ("scores.parquet", {"similarity": ["age"]}, "reads its own tables"),
        ("SELECT * FROM passengers; DROP TABLE passengers", {"similarity": ["age"]}, "more than one statement"),
        (
            "WITH gone AS (DELETE FROM passengers RETURNING *) SELECT * FROM gone",
            {"similarity": ["age"]},
            "may only read data",
        ),
        ("SELECT * INTO copied FROM passengers", {"similarity": ["age"]}, "SELECT INTO"),
    ],
    ids=["missing-column", "bad-kind", "no-id", "no-table", "a-file", "two-statements", "deleting-cte", "select-into"],
)
def test_failures_are_one_cohort_error_and_change_nothing(warehouse, postgres, adbc_postgres, data, options, fragment):
    arguments = {"prediction": "y", "id": "id", **options}
    with pytest.raises(cohortsql.CohortError, match=fragment) as failed:
        cohortsql.cohort_shapley(data, connection=adbc_postgres, **arguments)
    assert "\n" not in str(failed.value)
    assert postgres.execute("SELECT count(*) FROM passengers").fetchall() == [(warehouse.height,)]
    assert postgres.execute("SELECT count(*) FROM pg_class WHERE relname = 'copied'").fetchall() == [(0,)]


def test_a_transaction_stays_usable_and_nothing_is_left_behind(warehouse, postgres_uri):
    """On a connection in a transaction (the DB-API default), cohortsql works in a session of its own:
    its failures (a driver refuses every statement after one until the whole transaction is rolled
    back) cost the caller nothing, and nothing of cohortsql's is left behind. That session cannot see
    the caller's TEMP tables, and says so."""
    import adbc_driver_postgresql.dbapi as dbapi

    with dbapi.connect(postgres_uri) as connection:  # autocommit off
        cursor = connection.cursor()
        cursor.execute("CREATE TEMPORARY TABLE mine AS SELECT 1 AS x, 2.0 AS y")
        with pytest.raises(cohortsql.CohortError, match="fare"):
            cohortsql.cohort_shapley("passengers", prediction="y", similarity=["fare"], id="id", connection=connection)
        with pytest.raises(cohortsql.CohortError, match="division by zero"):
            cohortsql.cohort_shapley(
                "passengers", prediction="y", similarity={"age": "sql:s.age / 0 > 1"}, id="id", connection=connection
            )
        with pytest.raises(cohortsql.CohortError, match="session of its own.*TEMP tables"):
            cohortsql.cohort_shapley("mine", prediction="y", similarity=["x"], id="x", connection=connection)
        result = cohortsql.cohort_shapley(
            "passengers", prediction="y", similarity=["pclass"], id="id", connection=connection
        )
        assert result.local.height == warehouse.height
        cursor.execute("SELECT x FROM mine")  # the caller's own work survived, in its transaction
        assert cursor.fetchall() == [(1,)]
        cursor.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'cohortsql%'")
        assert cursor.fetchall() == [(0,)]
        cursor.close()
        connection.rollback()


def test_a_cancelled_query_stops_on_the_server(warehouse, postgres, adbc_postgres):
    """Ctrl-C while the server runs a query: the server cancels it (adbc_cancel), the call raises
    KeyboardInterrupt, and the connection serves the next call."""
    engine = open_engine(connection=adbc_postgres)

    def interrupt_when_running() -> None:
        for _ in range(600):
            active = postgres.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query ILIKE '%pg_sleep(20)%'"
                " AND pid <> pg_backend_pid()"
            ).fetchall()
            if active[0][0]:
                signal.raise_signal(signal.SIGINT)
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=interrupt_when_running)
    watcher.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            engine.fetch_arrow("SELECT 1 AS x FROM (SELECT pg_sleep(20)) AS s", context="sleeping")
    finally:
        watcher.join()
        engine.close()
    still = postgres.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query ILIKE '%pg_sleep(20)%'"
        " AND pid <> pg_backend_pid()"
    ).fetchall()
    assert still == [(0,)]
    again = cohortsql.cohort_shapley(
        "passengers", prediction="y", similarity=["sex"], id="id", connection=adbc_postgres
    )
    assert again.local.height == warehouse.height


def test_a_session_the_server_ends_mid_run_is_reported_as_the_server_said(postgres, postgres_uri):
    """The server ends cohortsql's session while the mask histogram runs: the error is the server's
    ("terminating connection ..."), not the cleanup's failure to drop the batch's table afterwards,
    which used to replace it ("dropping 'cohortsql_..._targets_3': no connection to the server")."""
    dbapi = pytest.importorskip("adbc_driver_postgresql.dbapi")
    rows = 200_000
    draws = np.random.default_rng(0)
    frame = pl.DataFrame(
        {"id": np.arange(rows), **{f"x{j}": draws.random(rows) for j in range(8)}, "y": draws.random(rows)}
    )
    with dbapi.connect(postgres_uri, autocommit=True) as connection:
        with connection.cursor() as cursor:
            cursor.adbc_ingest("ended_mid_run", frame.to_arrow(), mode="replace")
            cursor.execute("SELECT pg_backend_pid()")
            session = cursor.fetchone()[0]

        def end_the_session_in_the_histogram() -> None:
            for _ in range(1200):
                running = postgres.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND state = 'active' AND query ILIKE '%%__cohort_batch AS target%%'",
                    (session,),
                ).fetchall()
                if running[0][0]:
                    postgres.execute("SELECT pg_terminate_backend(%s)", (session,))
                    return
                time.sleep(0.02)

        watcher = threading.Thread(target=end_the_session_in_the_histogram)
        watcher.start()
        try:
            with pytest.raises(cohortsql.CohortError) as failure:
                cohortsql.cohort_shapley(
                    "ended_mid_run",
                    prediction="y",
                    similarity={f"x{j}": "abs:0.1" for j in range(8)},
                    id="id",
                    targets=200,
                    seed=1,
                    connection=connection,
                )
        finally:
            watcher.join()
    message = str(failure.value)
    # The server's own words, or, when its notice loses the race with the client's next message (seen
    # once in a full suite on a busy machine), the driver's: the connection closed under it.
    said = ("terminating connection", "server closed the connection unexpectedly")
    assert message.startswith("computing similarity masks: ") and any(words in message for words in said), message
    assert "dropping" not in message and "Traceback" not in message


def test_shapley_table_in_the_warehouse(warehouse, postgres, adbc_postgres):
    """Arrow computed by the values query on the server; with into=, a table of the server (recorded in
    cohortsql_runs), never the call's own input, and not replaced without replace=."""
    kinds = {"pclass": "exact", "age": "abs:5", "boarded": "abs:1"}
    expected = cohortsql.cohort_shapley(warehouse, prediction="y", similarity=kinds, id="id", weight="w")
    table = cohortsql.shapley_table(
        "passengers", prediction="y", similarity=kinds, id="id", weight="w", connection=adbc_postgres
    )
    assert isinstance(table, pa.Table)
    same_local(pl.from_arrow(table), expected.local)
    postgres.execute("DROP TABLE IF EXISTS explained")
    options = {"prediction": "y", "similarity": kinds, "id": "id", "weight": "w", "connection": adbc_postgres}
    assert cohortsql.shapley_table("passengers", into="explained", **options) is None
    written = pl.DataFrame(
        postgres.execute("SELECT id, feature, shapley, shapley_squared FROM explained").fetchall(),
        schema=["id", "feature", "shapley", "shapley_squared"],
        orient="row",
    )
    same_local(written, expected.local)
    runs = postgres.execute("SELECT tables, settings FROM cohortsql_runs WHERE tables = 'explained'").fetchall()
    assert len(runs) == 1 and '"written_by": "cohortsql.shapley_table"' in runs[0][1]
    with pytest.raises(cohortsql.CohortError, match="already exists; pass --replace"):
        cohortsql.shapley_table("passengers", into="explained", **options)
    cohortsql.shapley_table("passengers", into="explained", replace=True, **options)
    with pytest.raises(cohortsql.CohortError, match="it is this run's input"):
        cohortsql.shapley_table("passengers", into="passengers", replace=True, **options)
    assert postgres.execute("SELECT count(*) FROM passengers").fetchall() == [(warehouse.height,)]


def test_the_command_line_runs_on_a_postgresql_uri(warehouse, postgres, postgres_uri, tmp_path):
    out = tmp_path / "explained.parquet"
    arguments = ["shapley", "--engine", postgres_uri, "--table", "passengers", "--prediction", "y", "--id", "id"]
    arguments += ["--similar", "pclass=exact", "--similar", "age=abs:5", "--weight", "w"]
    result = CliRunner().invoke(app, [*arguments, "--out", str(out)])
    assert result.exit_code == 0, result.output
    expected = cohortsql.cohort_shapley(
        warehouse, prediction="y", similarity={"pclass": "exact", "age": "abs:5"}, id="id", weight="w"
    )
    same_local(pl.read_parquet(out), expected.local)
    postgres.execute("DROP TABLE IF EXISTS cli_explained")
    written = CliRunner().invoke(app, [*arguments, "--into-table", "cli_explained"])
    assert written.exit_code == 0, written.output
    assert "computed and written by adbc" in written.output
    assert postgres.execute("SELECT count(*) FROM cli_explained").fetchall() == [(2 * warehouse.height,)]


def test_credentials_are_never_shown(postgres):
    """A server that refuses the connection: the message names the address without its password."""
    with socket_free_port() as port:
        uri = f"postgresql://analyst:s3cr3t-pw@localhost:{port}/risk"
        result = CliRunner().invoke(
            app, ["shapley", "--engine", uri, "--table", "t", "--prediction", "y", "--features", "a"]
        )
    assert result.exit_code == 2
    assert "s3cr3t-pw" not in result.output and "analyst:***@localhost" in result.output
    assert "Traceback" not in result.output


def test_ctrl_c_cancels_the_servers_query_and_exits_130(warehouse, postgres, postgres_uri):
    command = [sys.executable, "-m", "cohortsql.cli", "shapley", "--engine", postgres_uri, "--table", "slow_passengers"]
    command += ["--prediction", "y", "--id", "id", "--features", "age,sex"]
    running = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    try:
        for _ in range(1200):  # until the server runs its query (however busy the machine)
            if running.poll() is not None or _sleeping(postgres):
                break
            time.sleep(0.05)
        assert running.poll() is None, running.communicate()
        running.send_signal(signal.SIGINT)
        _, stderr = running.communicate()
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert not _sleeping(postgres)  # cancelled, not left running after the client went away


def _sleeping(postgres) -> bool:
    rows = postgres.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query ILIKE '%slow_passengers%'"
        " AND pid <> pg_backend_pid()"
    ).fetchall()
    return bool(rows[0][0])


class socket_free_port:
    """A local port nothing listens on, for as long as the block runs."""

    def __enter__(self) -> int:
        import socket

        self.socket = socket.socket()
        self.socket.bind(("localhost", 0))  # bound, not listening: connections are refused
        return int(self.socket.getsockname()[1])

    def __exit__(self, *exc_info: object) -> None:
        self.socket.close()


# -- the dialect follows the driver -----------------------------------------------------------


class _Driver:
    """What the adbc engine asks of a connection before its first query: the server's name, and
    whether it is in autocommit mode (a stand-in for drivers whose servers are not here)."""

    def __init__(self, vendor: str) -> None:
        self.vendor = vendor
        self.adbc_connection = self

    def adbc_get_info(self) -> dict[str, str]:
        return {"vendor_name": self.vendor}

    def get_option(self, name: str) -> str:
        return "true"

    def cursor(self) -> object:
        return object()


@pytest.mark.parametrize(
    "vendor, dialect",
    [
        ("PostgreSQL", "postgres"),
        ("Snowflake", "snowflake"),
        ("BigQuery", "bigquery"),
        ("duckdb", "duckdb"),
        ("DuckDB (via Quack)", "duckdb"),
    ],
)
def test_the_dialect_follows_the_server_the_driver_names(vendor, dialect):
    from cohortsql.engines.adbc import _dialect

    assert _dialect(vendor).name == dialect


@pytest.mark.parametrize("vendor", ["Snowflake", "BigQuery"])
def test_a_server_that_cannot_read_one_snapshot_is_refused(vendor):
    """Snowflake's transactions see other sessions' commits between statements (READ COMMITTED), and
    BigQuery's driver offers no transaction cohortsql can hold: one call's queries could read two
    states of a table, so the call is refused in words before any query."""
    from cohortsql.engines.adbc import AdbcEngine

    with pytest.raises(cohortsql.CohortError, match=f"cannot read {vendor} in one snapshot"):
        AdbcEngine(_Driver(vendor))


def test_an_unknown_server_or_scheme_is_refused_in_words():
    from cohortsql.engines import connect
    from cohortsql.engines.adbc import AdbcEngine

    with pytest.raises(cohortsql.CohortError, match="does not know the SQL of 'Oracle'"):
        AdbcEngine(_Driver("Oracle"))
    with pytest.raises(cohortsql.CohortError, match="no engine reads URIs of that scheme.*postgresql://"):
        connect("mysql://analyst@db/risk")
    pytest.importorskip("adbc_driver_manager")
    if importlib.util.find_spec("adbc_driver_snowflake") is None:
        with pytest.raises(
            cohortsql.CohortError, match=r"needs adbc_driver_snowflake: pip install 'cohortsql\[snowflake\]'"
        ):
            connect("snowflake://analyst:pw@account/db")


def test_duckdbs_own_adbc_driver_runs_the_native_sql(warehouse):
    """The adbc engine on DuckDB's driver: DuckDB's dialect, nothing translated, the same values."""
    dbapi = pytest.importorskip("adbc_driver_duckdb.dbapi")
    with dbapi.connect() as connection:  # in a transaction: cohortsql works in a session of its own
        cursor = connection.cursor()
        cursor.adbc_ingest("passengers", warehouse.to_arrow(), mode="create")
        connection.commit()
        cursor.close()
        with open_engine(connection=connection) as engine:
            assert engine.dialect.name == "duckdb" and not engine._translated
        result = cohortsql.cohort_shapley(
            "passengers", prediction="y", similarity=EVERY_KIND, id="id", connection=connection
        )
    same_local(result.local, cohortsql.cohort_shapley(warehouse, prediction="y", similarity=EVERY_KIND, id="id").local)


# -- what Snowflake and BigQuery would receive ------------------------------------------------


@pytest.mark.parametrize("warehouse_name", ["snowflake", "bigquery", "postgres"])
def test_every_query_a_warehouse_would_receive_parses_back_in_its_dialect(warehouse, warehouse_name, monkeypatch):
    """No Snowflake or BigQuery account here: DuckDB runs a whole run's queries as they are rendered
    for the warehouse (its own choices in DuckDB's syntax), so the values must still be right, and each
    query, translated as the adbc engine would send it, is read back by sqlglot in the warehouse's
    dialect as one statement, with no function left that the warehouse lacks."""
    import sqlglot

    from cohortsql.dialects import TRANSPILED_DIALECTS
    from cohortsql.dialects.transpile import transpile
    from cohortsql.engines.base import EngineSettings
    from cohortsql.engines.duckdb import DuckDBEngine

    sent: list[str] = []

    class Rehearsal(DuckDBEngine):
        dialect = TRANSPILED_DIALECTS[warehouse_name]

        def fetch_arrow(self, select, *, context):
            sent.append(select)
            return super().fetch_arrow(select, context=context)

        def create(self, select, purpose, *, materialize, context, snapshot=False):
            sent.append(f"CREATE TEMPORARY TABLE cohortsql_step AS {select}")
            return super().create(select, purpose, materialize=materialize, context=context, snapshot=snapshot)

    monkeypatch.setattr(
        DuckDBEngine,
        "open",
        classmethod(lambda cls, connection, settings, data=None: Rehearsal(None, EngineSettings())),
    )
    frame = warehouse.drop("boarded")  # no date: DuckDB lacks BigQuery's and Snowflake's date functions
    kinds = {"pclass": "exact", "age": "abs:5", "parch": "range:0.2", "age_nan": "quantile:0.1", "sibsp": "bins:3"}
    options = {"prediction": "y", "similarity": kinds, "id": "id", "weight": "w", "targets": "age > 20"}
    rehearsed = cohortsql.cohort_shapley(frame, bootstrap=5, seed=2, **options)
    monkeypatch.undo()
    same_local(rehearsed.local, cohortsql.cohort_shapley(frame, bootstrap=5, seed=2, **options).local)
    monkeypatch.setattr(
        DuckDBEngine,
        "open",
        classmethod(lambda cls, connection, settings, data=None: Rehearsal(None, EngineSettings())),
    )
    cohortsql.shapley_effects(
        frame, path="grouping_sets", **{**options, "similarity": {"pclass": "exact", "sibsp": "bins:3"}}
    )
    assert len(sent) > 20
    for query in sent:
        text = transpile(query, warehouse_name)
        assert len(sqlglot.parse(text, read=warehouse_name)) == 1
        missing = LACKING[warehouse_name].search(text)
        assert missing is None, f"{warehouse_name} has no {missing[1]}: {text}"


LACKING = {
    "snowflake": re.compile(r"\b(IS_?NAN|MD5_NUMBER|EPOCH_US|APPROX_DISTINCT|LIST)\(", re.IGNORECASE),
    "bigquery": re.compile(r"\b(ISNAN|HASH|MD5_NUMBER|EPOCH_US|APPROX_DISTINCT|COUNT_IF|LIST)\(", re.IGNORECASE),
    "postgres": re.compile(
        r"\b(IS_?NAN|HASH|MD5_NUMBER|EPOCH_US|APPROX_DISTINCT|APPROX_COUNT_DISTINCT|COUNT_IF|COUNTIF|LIST)\(",
        re.IGNORECASE,
    ),
}
"""Functions of DuckDB's (or sqlglot's spelling of them) that each warehouse does not have."""


# -- one snapshot per call, names as the caller's session reads them, NUMERIC, the tables written ----------


@pytest.fixture
def scores(postgres):
    """A small committed table ``public.sc`` (id, x, p)."""
    postgres.execute("DROP TABLE IF EXISTS public.sc CASCADE")
    postgres.execute(
        "CREATE TABLE public.sc AS SELECT g AS id, g % 3 AS x, (g % 3) * 1.5 + g * 0.01 AS p FROM generate_series(0, 29) AS g"
    )
    yield "sc"
    postgres.execute("DROP TABLE IF EXISTS public.sc CASCADE")


def test_a_temp_table_shadowing_the_name_is_read_as_the_callers_sql_reads_it(scores, postgres, postgres_uri):
    """A TEMP table ``sc`` of the caller's session hides ``public.sc`` from the caller's SQL. In
    autocommit mode cohortsql works in that session and reads the TEMP table; on a connection in a
    transaction it works in a session of its own, where ``sc`` is ``public.sc``, and refuses rather
    than silently explain the other table (by name, and inside a data query)."""
    import adbc_driver_postgresql.dbapi as dbapi

    with dbapi.connect(postgres_uri, autocommit=True) as connection:
        with connection.cursor() as cursor:
            cursor.execute("CREATE TEMPORARY TABLE sc AS SELECT id, x, p * 100 AS p FROM public.sc")
        shadowed = cohortsql.cohort_shapley("sc", prediction="p", similarity=["x"], id="id", connection=connection)
        public = cohortsql.cohort_shapley("public.sc", prediction="p", similarity=["x"], id="id", connection=connection)
        np.testing.assert_allclose(shadowed.shapley, 100 * public.shapley, rtol=1e-12)
    with dbapi.connect(postgres_uri) as connection:  # autocommit off: a transaction
        with connection.cursor() as cursor:
            cursor.execute("CREATE TEMPORARY TABLE sc AS SELECT id, x, p * 100 AS p FROM public.sc")
        for data in ("sc", "SELECT * FROM sc WHERE id >= 0"):
            with pytest.raises(cohortsql.CohortError, match="another relation in the connection's own session"):
                cohortsql.cohort_shapley(data, prediction="p", similarity=["x"], id="id", connection=connection)
        qualified = cohortsql.cohort_shapley(
            "public.sc", prediction="p", similarity=["x"], id="id", connection=connection
        )
        np.testing.assert_allclose(qualified.shapley, public.shapley, rtol=1e-12)
        connection.rollback()


@pytest.mark.parametrize("autocommit", [True, False], ids=["autocommit", "in-a-transaction"])
def test_a_call_reads_one_snapshot_while_another_session_commits(
    scores, postgres, postgres_uri, monkeypatch, autocommit
):
    """Another session commits an UPDATE after the call's statistics query and before its histograms:
    every number is of the table as it was when the call began (REPEATABLE READ), none of the one after."""
    import adbc_driver_postgresql.dbapi as dbapi

    from cohortsql.engines.adbc import AdbcEngine

    before = cohortsql.cohort_shapley(passengers_like(postgres), prediction="p", similarity=["x"], id="id")
    fetch = AdbcEngine.fetch_arrow
    updated = []

    def fetch_then_update(self, select, *, context):
        table = fetch(self, select, context=context)
        if context == "computing table statistics" and not updated:
            postgres.execute("UPDATE public.sc SET p = p * 10 + 7 WHERE x = 1")  # committed: autocommit
            updated.append(True)
        return table

    monkeypatch.setattr(AdbcEngine, "fetch_arrow", fetch_then_update)
    with dbapi.connect(postgres_uri, autocommit=autocommit) as connection:
        during = cohortsql.cohort_shapley(scores, prediction="p", similarity=["x"], id="id", connection=connection)
        if not autocommit:
            connection.rollback()
    assert updated
    np.testing.assert_allclose(during.shapley, before.shapley, rtol=0, atol=1e-12)
    assert during.mean == pytest.approx(before.mean, abs=1e-12)


def passengers_like(postgres) -> pl.DataFrame:
    """public.sc as it is now, as a polars frame."""
    rows = postgres.execute("SELECT id, x, p::float8 FROM public.sc ORDER BY id").fetchall()
    return pl.DataFrame(rows, schema=["id", "x", "p"], orient="row")


def test_numeric_columns_and_decimal_frames_compute_as_duckdb_does(postgres, adbc_postgres):
    """PostgreSQL's NUMERIC (a feature, the prediction) is read as DOUBLE, in a table of the server or
    in a frame cohortsql sends (a polars Decimal column becomes NUMERIC there)."""
    import decimal

    rng = np.random.default_rng(5)
    frame = pl.DataFrame(
        {
            "id": np.arange(40),
            "x": rng.integers(0, 3, 40),
            "z": [decimal.Decimal(f"{value}.25") for value in rng.integers(0, 4, 40)],
            "p": [decimal.Decimal(f"{value}.125") for value in rng.integers(0, 50, 40)],
        },
        schema_overrides={"z": pl.Decimal(8, 2), "p": pl.Decimal(10, 3)},
    )
    similarity = {"x": "exact", "z": "abs:1"}
    expected = cohortsql.cohort_shapley(frame, prediction="p", similarity=similarity, id="id")
    sent = cohortsql.cohort_shapley(frame, prediction="p", similarity=similarity, id="id", connection=adbc_postgres)
    np.testing.assert_allclose(sent.shapley, expected.shapley, atol=1e-12)
    postgres.execute("DROP TABLE IF EXISTS numerics")
    postgres.execute("CREATE TABLE numerics (id bigint, x bigint, z numeric(8, 2), p numeric(10, 3))")
    with postgres.cursor().copy("COPY numerics FROM STDIN") as copy:
        for row in frame.iter_rows():
            copy.write_row(row)
    stored = cohortsql.cohort_shapley(
        "numerics", prediction="p", similarity=similarity, id="id", connection=adbc_postgres
    )
    np.testing.assert_allclose(stored.shapley, expected.shapley, atol=1e-12)


def test_a_role_without_temporary_tables_is_told_the_servers_reason(scores, postgres, postgres_uri):
    """cohortsql's steps are TEMPORARY views: a role without the privilege, or a read-only transaction,
    gets the server's own reason (not the driver's first line of the query) and what is needed."""
    user = "cohortsql_no_temp"
    postgres.execute(f"DROP OWNED BY {user}" if _role_exists(postgres, user) else "SELECT 1")
    postgres.execute(f"DROP ROLE IF EXISTS {user}")
    postgres.execute(f"CREATE ROLE {user} LOGIN")
    postgres.execute(f"GRANT SELECT ON public.sc TO {user}")
    postgres.execute("REVOKE TEMPORARY ON DATABASE postgres FROM PUBLIC")
    uri = postgres_uri.replace("cohortsql@", f"{user}@")
    try:
        arguments = ["shapley", "sc", "--engine", uri, "--prediction", "p", "--features", "x", "--id", "id"]
        refused = CliRunner().invoke(app, arguments)
        assert refused.exit_code == 2
        assert "permission denied to create temporary tables" in refused.output
        assert "TEMPORARY privilege" in refused.output and "Failed to execute" not in refused.output
        postgres.execute("GRANT TEMPORARY ON DATABASE postgres TO PUBLIC")
        postgres.execute(f"ALTER ROLE {user} SET default_transaction_read_only = on")
        read_only = CliRunner().invoke(app, arguments)
        assert read_only.exit_code == 2 and "read-only transaction" in read_only.output
    finally:
        postgres.execute("GRANT TEMPORARY ON DATABASE postgres TO PUBLIC")
        postgres.execute(f"DROP OWNED BY {user}")
        postgres.execute(f"DROP ROLE {user}")


def _role_exists(postgres, user: str) -> bool:
    return bool(postgres.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s", (user,)).fetchall()[0][0])


@pytest.mark.parametrize("into", ["public.sc", '"public"."sc"', "SC", "postgres.public.sc"])
def test_into_table_never_replaces_the_input_under_any_spelling(scores, postgres, postgres_uri, into):
    """The output is compared with the input by the server's own identity of each (its oid), so no
    spelling of the input's name (qualified, quoted, another case, with the database) replaces it."""
    arguments = ["shapley", "--table", "sc", "--engine", postgres_uri, "--prediction", "p", "--features", "x"]
    done = CliRunner().invoke(app, [*arguments, "--id", "id", "--into-table", into, "--replace"])
    assert done.exit_code == 2 and "it is this run's input" in done.output, done.output
    assert postgres.execute("SELECT count(*), sum(p) FROM public.sc").fetchall()[0][0] == 30


def test_into_table_never_replaces_the_input_found_on_the_search_path(scores, postgres, postgres_uri):
    postgres.execute("DROP SCHEMA IF EXISTS elsewhere CASCADE")
    postgres.execute("CREATE SCHEMA elsewhere")
    postgres.execute("CREATE TABLE elsewhere.found AS SELECT * FROM public.sc")
    try:
        uri = postgres_uri + "?options=-csearch_path%3Delsewhere"
        arguments = ["shapley", "--table", "found", "--engine", uri, "--prediction", "p", "--features", "x", "--id"]
        done = CliRunner().invoke(app, [*arguments, "id", "--into-table", "elsewhere.found", "--replace"])
        assert done.exit_code == 2 and "it is this run's input" in done.output, done.output
        assert postgres.execute("SELECT count(*) FROM elsewhere.found").fetchall() == [(30,)]
    finally:
        postgres.execute("DROP SCHEMA elsewhere CASCADE")


def test_the_tables_a_run_writes_land_all_or_none(scores, postgres, adbc_postgres, monkeypatch):
    """A failure while writing the second of a run's tables leaves no first one (the driver's own
    commit and rollback: the DB-API's do nothing on a connection opened in autocommit mode)."""
    from cohortsql.engines.adbc import AdbcEngine

    write = AdbcEngine._write_table
    calls = []

    def failing_second(self, name, table, *, record, append):
        calls.append(name)
        if len(calls) == 2:
            raise cohortsql.CohortError("writing the second table failed")
        return write(self, name, table, record=record, append=append)

    monkeypatch.setattr(AdbcEngine, "_write_table", failing_second)
    for name in ("written_one", "written_two"):
        postgres.execute(f"DROP TABLE IF EXISTS {name}")
    engine = open_engine(connection=adbc_postgres)
    try:
        one = pa.table({"a": [1, 2]})
        with pytest.raises(cohortsql.CohortError, match="second table failed"):
            engine.write_tables({"written_one": one, "written_two": one}, replace=False)
    finally:
        engine.close()
    assert postgres.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'written_%'").fetchall() == [(0,)]


def test_the_callers_connection_is_left_as_it_was(scores, adbc_postgres):
    """A call's transaction is the call's: after a computation, a failure and a written table, the
    caller's connection is back in autocommit mode, with nothing of cohortsql's left in its session."""
    connection = adbc_postgres

    def autocommit() -> str:
        return str(connection.adbc_connection.get_option("adbc.connection.autocommit")).lower()

    cohortsql.cohort_shapley(scores, prediction="p", similarity=["x"], id="id", connection=connection)
    assert autocommit() == "true"
    with pytest.raises(cohortsql.CohortError):
        cohortsql.cohort_shapley(scores, prediction="p", similarity=["nope"], id="id", connection=connection)
    assert autocommit() == "true"
    cohortsql.shapley_table(scores, prediction="p", similarity=["x"], id="id", connection=connection, into="sc_values")
    assert autocommit() == "true"
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'cohortsql%' AND relpersistence = 't'")
        assert cursor.fetchall() == [(0,)]
        cursor.execute("SELECT count(*) FROM sc_values")
        assert cursor.fetchall() == [(30,)]
        cursor.execute("DROP TABLE sc_values")
