"""A real PostgreSQL server for the tests of the SQL cohortsql prints for it: Debian's server (package
``postgresql``, which ``.ci/run`` installs), a cluster of its own in a temporary directory, on a free
local port, stopped when the tests end. PostgreSQL refuses to run as root, so as root the server runs
as the ``postgres`` user the package creates."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

START_SECONDS = 300
"""How long the server may take to start (or stop) before the tests give up on it: the suite's limit
for one test, so that a busy machine makes the start slower, never a failure."""


def server_binaries() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl``: on the PATH, else Debian's /usr/lib/postgresql/<version>/bin."""
    initdb = shutil.which("initdb")
    if initdb is not None and shutil.which("pg_ctl") is not None:
        return Path(initdb).resolve().parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _as_server_user(directory: str) -> list[str]:
    """The prefix that runs a server command: as root, the ``postgres`` user (which then owns `directory`)."""
    if os.geteuid() != 0:
        return []
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError("running as root, and there is no postgres user to run the server as") from None
    os.chown(directory, user.pw_uid, user.pw_gid)
    return ["runuser", "-u", "postgres", "--"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def running_server(binaries: Path) -> Iterator[Any]:
    """A new cluster on a free port; yields an autocommit psycopg connection to it as its superuser."""
    import psycopg

    directory = tempfile.mkdtemp(prefix="cohortsql-postgres-")
    data = os.path.join(directory, "data")
    prefix = _as_server_user(directory)
    port = _free_port()
    run = {"check": True, "capture_output": True, "timeout": START_SECONDS}
    try:
        subprocess.run(
            [*prefix, str(binaries / "initdb"), "-D", data, "--auth=trust", "-U", "cohortsql", "--no-sync"], **run
        )
        options = f"-p {port} -k {directory} -c listen_addresses=localhost -c fsync=off -c synchronous_commit=off"
        subprocess.run(
            [
                *prefix,
                str(binaries / "pg_ctl"),
                "-D",
                data,
                "-o",
                options,
                "-l",
                os.path.join(directory, "log"),
                "-w",
                "-t",
                str(START_SECONDS),
                "start",
            ],
            **run,
        )
        try:
            with psycopg.connect(
                host="localhost",
                port=port,
                user="cohortsql",
                dbname="postgres",
                autocommit=True,
                connect_timeout=START_SECONDS,
            ) as connection:
                yield connection
        finally:
            subprocess.run(
                [
                    *prefix,
                    str(binaries / "pg_ctl"),
                    "-D",
                    data,
                    "-m",
                    "immediate",
                    "-w",
                    "-t",
                    str(START_SECONDS),
                    "stop",
                ],
                **run,
            )
    finally:
        shutil.rmtree(directory, ignore_errors=True)


_TYPES = {
    pl.Float64: "DOUBLE PRECISION",
    pl.Float32: "REAL",
    pl.Int64: "BIGINT",
    pl.Int32: "INTEGER",
    pl.String: "TEXT",
    pl.Boolean: "BOOLEAN",
    pl.Date: "DATE",
}


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def load_table(connection: Any, name: str, frame: pl.DataFrame) -> None:
    """`frame` as table `name` of the server, with the matching column types (NaN stays NaN)."""
    columns = ", ".join(f"{_quoted(column)} {_TYPES[dtype]}" for column, dtype in frame.schema.items())
    connection.execute(f'DROP TABLE IF EXISTS "{name}"')
    connection.execute(f'CREATE TABLE "{name}" ({columns})')
    with connection.cursor().copy(f'COPY "{name}" FROM STDIN') as copy:
        for row in frame.iter_rows():
            copy.write_row(row)


def fetch(connection: Any, sql: str, *, timeout_seconds: int = 300) -> pl.DataFrame:
    """A query's result as a polars frame; the server cancels it after `timeout_seconds`."""
    with connection.cursor() as cursor:
        cursor.execute(f"SET statement_timeout = {timeout_seconds * 1000}")
        cursor.execute(sql)
        names = [column.name for column in cursor.description]
        rows = cursor.fetchall()
    return pl.DataFrame(rows, schema=names, orient="row")


__all__ = ["fetch", "load_table", "running_server", "server_binaries"]
