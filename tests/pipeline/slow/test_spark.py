"""The main job on Spark by configuration alone gives the default engine's results.

``python -m evaluation_pipeline.main_job`` runs twice on the bundled example landing, once with the
default engine and once with ``NDCG_EVAL_ENGINE=spark`` on ``local[2]``: every run succeeds, and
every report.json, per-query file and history row is the same to 1e-12 (the times of the
history rows aside). Spark's per-query results are folders of parts, read by ``io.datasets``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from evaluation_pipeline.io.datasets import read_dataset
from evaluation_pipeline.io.storage import history_file
from schemas.columns import PER_QUERY_KEY
from tests.support.example_run import example_storage
from tests.support.paths import EXAMPLES, REPO
from tests.support.spark_session import LOCAL_SPARK_ENV, requires_spark

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (the `spark` extra)")
pytestmark = requires_spark

TOLERANCE = 1e-12
# Wall-clock times: when a row was written, and when its pool landed (a pool without a
# manifest time takes its file's, and each run lands the example week afresh). The only
# history columns two runs may differ in.
HISTORY_TIMES = ("first_evaluated_at", "evaluated_at", "ready_at")


def _main_job(root: Path, landing: Path, **env: str) -> Path:
    storage = root / "storage"
    run = subprocess.run(
        [sys.executable, "-m", "evaluation_pipeline.main_job"], cwd=root, capture_output=True,
        text=True, timeout=900, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO), "DAGSTER_HOME": str(root / "home"),
             "NDCG_EVAL_STORAGE": str(storage), "NDCG_EVAL_LANDING": str(landing), **env})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "FAILED" not in run.stdout, run.stdout
    return storage


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("spark-main")
    landing = root / "landing"
    shutil.copytree(EXAMPLES / "landing", landing)
    (root / "spark").mkdir()
    # The default engine's run is the clean run other files compare against too.
    default = example_storage(tmp_path_factory)
    spark = _main_job(root / "spark", landing, **LOCAL_SPARK_ENV)
    return default, spark


def _close(a, b, where: str) -> None:
    """JSON values equal, numbers to TOLERANCE."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert sorted(a) == sorted(b), where
        for key in a:
            _close(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, (int, float)):
        assert abs(a - b) <= TOLERANCE, (where, a, b)
    else:
        assert a == b, (where, a, b)


def test_every_evaluation_ran_on_spark(runs):
    default, spark = runs
    scores = sorted(p.relative_to(spark) for p in spark.glob("scores/*/*/*/per_query.parquet"))
    assert len(scores) == 4  # 2 pools x 2 judgment versions
    # Spark wrote them: folders of parts with Spark's marker.
    assert all((spark / p / "_SUCCESS").exists() for p in scores)
    assert scores == sorted(p.relative_to(default)
                            for p in default.glob("scores/*/*/*/per_query.parquet"))


def test_reports_are_the_default_engines(runs):
    default, spark = runs
    reports = sorted(default.glob("reports/*/*/*/report.json"))
    assert len(reports) == 4
    for report in reports:
        name = report.relative_to(default)
        _close(json.loads(report.read_text()), json.loads((spark / name).read_text()), str(name))
        # The report's numbers are summed on the executors in the same chunks and order as
        # the local path's, from the same per-query numbers: the same files, byte for byte.
        for file in ("report.json", "aggregates.parquet", "report.html"):
            assert (spark / name.parent / file).read_bytes() == (
                report.parent / file).read_bytes(), name.parent / file


def test_per_query_rows_are_the_default_engines(runs):
    default, spark = runs
    for file in sorted(default.glob("scores/*/*/*/per_query.parquet")):
        expected = read_dataset(file).sort(PER_QUERY_KEY)
        got = read_dataset(spark / file.relative_to(default)).sort(PER_QUERY_KEY)
        assert got.columns == expected.columns and got.schema == expected.schema
        assert_frame_equal(got, expected, check_exact=False, rel_tol=0, abs_tol=TOLERANCE)


def test_history_rows_are_the_default_engines(runs):
    default, spark = runs
    expected, got = (pl.read_parquet(base.joinpath(*history_file())).drop(HISTORY_TIMES)
                     for base in (default, spark))
    assert expected.height == got.height > 0
    assert_frame_equal(got, expected, check_exact=False, rel_tol=0, abs_tol=TOLERANCE)
