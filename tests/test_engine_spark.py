"""The Spark engine gives the local engine's per-query rows (PySpark on local[2])."""

from __future__ import annotations

import shutil
import subprocess

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from evaluation_pipeline.engines import score_files
from evaluation_pipeline.spec import profile
from tests.conftest import EXAMPLES

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (the `spark` extra)")


def _java_works() -> bool:
    java = shutil.which("java")
    return java is not None and subprocess.run([java, "-version"], capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(not _java_works(), reason="Spark needs Java (17+) on PATH")

JUDGMENTS = EXAMPLES / "landing" / "judgments" / "maint-v2.csv"
POOL = EXAMPLES / "landing" / "pools" / "pool-2026-11-28"


@pytest.fixture(scope="module")
def spark():
    from evaluation_pipeline.engines.spark import spark_session

    session = spark_session("local[2]")
    yield session
    session.stop()


@pytest.fixture
def inputs(tmp_path):
    judgments = tmp_path / "maint-v2.parquet"
    pl.read_csv(JUDGMENTS, schema_overrides={"grade": pl.Int64}).write_parquet(judgments)
    # One file for the whole pool: Spark reads one URL (a file or a folder of parts).
    run = tmp_path / "pool-2026-11-28" / "run.parquet"
    run.parent.mkdir()
    pl.concat([pl.read_parquet(p).drop("rank") for p in sorted(POOL.glob("*.parquet"))]
              ).write_parquet(run)
    return judgments, run


def test_spark_equals_local(inputs, tmp_path, spark):
    # trec_eval: the all_judged ideal and missing_from_run need every judgment row of a query
    # beside its candidates, which is what the cogroup provides. (One spec: Spark start-up and
    # jobs dominate the time; the kernel itself is covered spec by spec elsewhere.)
    judgments, run = inputs
    spec = profile("trec_eval")
    local = score_files(judgments, run, spec, tmp_path / "local.parquet", engine="local")
    remote = score_files(judgments, run, spec, str(tmp_path / "spark"), engine="spark",
                         spark_session=spark)
    assert remote.lineage == local.lineage
    expected = pl.read_parquet(local.per_query_path)
    got = pl.read_parquet(tmp_path / "spark" / "*.parquet").select(expected.columns)
    assert remote.rows == expected.height
    assert_frame_equal(got.sort("ranker", "query_id", "cutoff"), expected)
