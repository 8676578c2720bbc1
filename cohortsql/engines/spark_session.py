"""Starting a Spark session for a call that brings none: the active one, a local or cluster master, or
a Spark Connect server named by ``SPARK_REMOTE``, each checked before the JVM or the client would
fail slowly or with a Java stack."""

from __future__ import annotations

import os
import re
import socket
import sys
import urllib.parse
from pathlib import Path

from pyspark.sql import SparkSession

from cohortsql.errors import CohortError

QUIET_LOGGING = Path(__file__).with_name("spark_log4j2.properties")
"""The log configuration of sessions cohortsql starts: errors only (Spark's default printed eight lines
of banner and warnings before the command line's output)."""


def start_session(master: str | None = None) -> SparkSession:
    """The active SparkSession, or a new one: on `master` (default ``local[*]``), or a Spark Connect
    session when the ``SPARK_REMOTE`` environment variable is set (e.g. ``sc://host:15002``) and no
    master is given."""
    remote = os.environ.get("SPARK_REMOTE")
    if remote is not None and master is None:
        _check_remote(remote)
        try:
            from pyspark.sql.connect.session import SparkSession as ConnectSession
        except ImportError as error:
            raise CohortError(
                f"SPARK_REMOTE is set but Spark Connect needs {error.name}: pip install 'pyspark[connect]'"
            ) from None
        _check_reachable(remote)
        # This class directly: the generic builder refuses a remote session beside a classic one.
        return ConnectSession.builder.remote(remote).getOrCreate()  # type: ignore[return-value]
    if master is not None:
        _check_master(master)
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    if master is None or master.startswith("local"):  # a cluster's workers run the cluster's Python
        # PySpark reads the workers' Python from the environment when it starts the context (the
        # spark.pyspark.python setting of a builder did not reach them): python3 on the PATH may lack cohortsql.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        session = (
            SparkSession.builder.master(master or "local[*]")
            .appName("cohortsql")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")  # cohortsql reports progress itself
            .config("spark.sql.shuffle.partitions", "8")
            .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={QUIET_LOGGING.as_uri()}")
            .getOrCreate()
        )
    except Exception as error:  # a bad master fails in the JVM, with Java's exception types
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise CohortError(f"cannot start Spark on master {master or 'local[*]'!r}: {first}") from None
    session.sparkContext.setLogLevel("ERROR")
    return session


_MASTER = re.compile(
    r"local(\[(\*|\d+)(,\s*\d+)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]|yarn"
    r"|spark://[^\s/:]+(:\d+)?(,[^\s/:]+(:\d+)?)*|k8s://\S+"
)
"""The master URLs Spark 4 accepts (local, local[N], local[N,F], local[*], local-cluster, yarn, a
standalone spark://host:port list, k8s://)."""


def _check_master(master: str) -> None:
    """Refuse a master Spark would refuse, before the JVM starts (it printed an 11-line Java stack first)."""
    if not _MASTER.fullmatch(master.strip()):
        raise CohortError(
            f"cannot start Spark on master {master!r}: a master is local, local[N], local[*], yarn,"
            " spark://host:port or k8s://https://host:port"
        )


def _check_remote(remote: str) -> None:
    """SPARK_REMOTE names a Spark Connect server (``sc://host:port``) or a local one (``local...``)."""
    if not remote.strip():
        raise CohortError("SPARK_REMOTE is set but empty: unset it, or name a server as sc://host:port")
    if not (remote.startswith("sc://") or remote.startswith("local")):
        raise CohortError("SPARK_REMOTE must name a Spark Connect server as sc://host:port (or local)")


CONNECT_PORT = 15002
"""Spark Connect's port when ``sc://host`` names none."""


def _check_reachable(remote: str, timeout: float = 10.0) -> None:
    """Fail in seconds when nothing listens at an ``sc://host:port`` address: the Connect client
    would retry for minutes before saying so. Other forms (``local[*]`` starts a server) pass.
    Messages name the host and port only: the rest of the address may hold an access token."""
    address = urllib.parse.urlparse(remote)
    if address.scheme != "sc":
        return
    try:
        host, port = address.hostname or "localhost", address.port or CONNECT_PORT
    except ValueError:
        raise CohortError("SPARK_REMOTE names no valid port: write it as sc://host:port") from None
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise CohortError(f"cannot reach Spark Connect at {host}:{port} (from SPARK_REMOTE): {reason}") from None
