"""What a failed Spark query says: one line (`failure_message`), with the exceptions it comes as
(`SPARK_FAILURES`), and PySpark's own loggers kept quiet while a query runs (`quiet_loggers`), which
would print the failure again with its JVM stack."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.errors import PySparkException
from pyspark.logger import PySparkLogger

try:
    from py4j.protocol import Py4JJavaError

    SPARK_FAILURES: tuple[type[Exception], ...] = (PySparkException, Py4JJavaError)
except ImportError:  # pragma: no cover - a Spark Connect client without py4j (pyspark-client)
    SPARK_FAILURES = (PySparkException,)

_QUIET_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
"""PySpark logs every failed query with its JVM stack; cohortsql reports the failure itself, in one line."""


@contextmanager
def quiet_loggers() -> Iterator[None]:
    # PySpark's own loggers, made by PySpark's factory: a plain logging.Logger of the same name, made
    # first, would be the one PySpark then gets, and its structured calls (errorClass=...) fail on it,
    # turning every later failed query of the session into a TypeError.
    loggers = [PySparkLogger.getLogger(name) for name in _QUIET_LOGGERS]
    previous = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, disabled in zip(loggers, previous):
            logger.disabled = disabled


WORKERS_CANNOT_IMPORT = "Spark's Python workers cannot import"
_MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")
"""How a Python worker that cannot import a module fails, somewhere in the Java stack around it."""


def failure_message(error: BaseException) -> str:
    """The first line of what went wrong, without Spark's SQLSTATE code. A Java exception that PySpark
    passes on unconverted (a job failing while Arrow batches stream to Python) says only which call
    failed: its innermost cause says why. A Python worker that lacks a module is said in one line:
    what to install where (a Java stack held a Python ModuleNotFoundError)."""
    java = getattr(error, "java_exception", None)
    texts = [str(error)]
    if java is not None:
        while java.getCause() is not None:
            texts.append(str(java.getMessage() or ""))
            java = java.getCause()
        text = str(java.getMessage() or java.getClass().getSimpleName())
        texts.append(text)
    else:
        text = str(error)
    missing = next((found for found in map(_MISSING_MODULE.search, texts) if found), None)
    if missing is not None:
        module = missing[1].split(".")[0]
        return (
            f"{WORKERS_CANNOT_IMPORT} {module}: install cohortsql (with pyarrow and numpy) where the"
            " executors run, or point spark.pyspark.python (PYSPARK_PYTHON) at a Python that has them"
        )
    text = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return text.split(" SQLSTATE:")[0].strip()
