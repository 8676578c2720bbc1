"""The Spark engine where its executors' Python differs from the driver's: one line saying what to
install where, never the Java stack around a Python ModuleNotFoundError."""

import os
import shutil
import subprocess
import sys
import textwrap
import venv

import pytest

SCRIPT = textwrap.dedent(
    """
    import polars as pl
    import cohortsql

    frame = pl.DataFrame({"k": [1, 2, 3, 4], "a": [1.0, 2, 3, 4], "y": [0.1, 0.5, 0.9, 0.3]})
    try:
        table = cohortsql.shapley_table(
            frame, prediction="y", similarity={"a": "abs:1"}, id="k", engine=cohortsql.Spark(master="local[1]")
        )
        print("no error", table.count())
    except cohortsql.CohortError as error:
        print(f"CohortError: {error}")

    import warnings
    import numpy as np
    import cohortsql.engines.spark
    import cohortsql.engines.spark_ids

    cohortsql.engines.spark.EXECUTOR_HISTOGRAM_PAIRS = 0  # the executors' histogram for every batch
    cohortsql.engines.spark_ids.EXECUTOR_ID_ROWS = 0  # and their ids' check
    cohortsql.engines.spark_ids.DRIVER_ID_ROWS = -1  # not this process
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        on_spark = cohortsql.cohort_shapley(frame, prediction="y", similarity={"a": "abs:1"}, id="k", engine="spark")
    here = cohortsql.cohort_shapley(frame, prediction="y", similarity={"a": "abs:1"}, id="k")
    said = [str(warning.message) for warning in caught if "Spark SQL builds the mask histograms" in str(warning.message)]
    print("warned:", len(said), "equal:", bool(np.allclose(on_spark.shapley, here.shapley, atol=1e-12)))
    """
)


def test_executors_without_the_libraries_are_one_line(tmp_path):
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("Spark needs a Java runtime (java not found)")
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)  # a Python without numpy, pyarrow or cohortsql
    environment = {**os.environ, "PYSPARK_PYTHON": str(bare / "bin" / "python")}
    environment.pop("SPARK_REMOTE", None)
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=environment)
    assert result.stdout.strip().startswith(
        "CohortError: running cohortsql on Spark's executors: Spark's Python workers cannot import"
    ), result.stdout + result.stderr
    assert "point spark.pyspark.python (PYSPARK_PYTHON) at a Python" in result.stdout
    # cohort_shapley needs no Python on the executors: its ids' check and histogram fall back to Spark SQL, said once
    assert "warned: 1 equal: True" in result.stdout, result.stdout + result.stderr
    assert "\tat " not in result.stderr and "Traceback" not in result.stderr, result.stderr
