"""One local Spark session (local[2]) for every Spark test of a test session (the ``spark``
fixture, registered in conftest).

A JVM start takes seconds, and a session stopped by one test file would be the active session
another one still holds: so there is one, started on first use and stopped at the end. Without
pyspark or Java the tests that use it are skipped.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

# The environment under which the main job scores on a local Spark session of two cores, its
# workers this interpreter.
LOCAL_SPARK_ENV = {"NDCG_EVAL_ENGINE": "spark", "NDCG_EVAL_SPARK_MASTER": "local[2]",
                   "PYSPARK_PYTHON": sys.executable}


def java_works() -> bool:
    java = shutil.which("java")
    return java is not None and subprocess.run([java, "-version"],
                                               capture_output=True, check=False).returncode == 0


requires_spark = pytest.mark.skipif(not java_works(), reason="Spark needs Java (17+) on PATH")


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark", reason="pyspark is not installed (the `spark` extra)")
    if not java_works():
        pytest.skip("Spark needs Java (17+) on PATH")
    from evaluation_pipeline.engines.spark.cogroup import spark_session

    session = spark_session("local[2]")
    yield session
    session.stop()
