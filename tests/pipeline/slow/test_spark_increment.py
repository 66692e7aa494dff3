"""On Spark, a second judgment version's scores of a pool are built from the first's on the
session, rescoring only the queries whose grades changed: the materialization says
``incremental``, and the folder of parts is the full Spark scoring's, part for part."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from evaluation_pipeline.definitions import pipeline_spec
from evaluation_pipeline.engines import score_files
from evaluation_pipeline.orchestration.partitions import evaluation_key
from tests.support.spark_session import requires_spark
from tests.support.temporary_pipeline import (
    POOL_1,
    VERSION_1,
    VERSION_2,
    make_pipeline,
    temporary_instance,
)

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (the `spark` extra)")
pytestmark = requires_spark


def _engine(instance, pool: str, version: str) -> str:
    (record,) = instance.fetch_materializations(dg.AssetRecordsFilter(
        asset_key=dg.AssetKey("query_scores"),
        asset_partitions=[evaluation_key(pool, version)]), limit=1).records
    return record.asset_materialization.metadata["engine"].value


def _parts(folder: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted(folder.iterdir()) if p.name.startswith("part-")]


def test_a_second_version_is_scored_from_the_first_on_spark(tmp_path: Path, spark):
    with temporary_instance(tmp_path / "dagster_home") as instance:
        env = make_pipeline(tmp_path, instance, engine="spark", spark_master="local[2]")
        env.land_version(VERSION_1)
        env.land_pool(POOL_1)
        assert all(o.success for o in env.runner.run_until_quiet())
        env.land_version(VERSION_2)
        assert all(o.success for o in env.runner.run_until_quiet())
        assert _engine(instance, POOL_1, VERSION_1) == "spark"  # nothing to start from
        assert _engine(instance, POOL_1, VERSION_2) == "incremental"
        stored = (env.storage / "scores" / POOL_1 / VERSION_2 / pipeline_spec().spec_id
                  / "per_query.parquet")
        full = tmp_path / "full"
        score_files(env.storage / "judgments" / VERSION_2 / "judgments.parquet",
                    env.storage / "pools" / POOL_1 / "candidates.parquet", pipeline_spec(),
                    str(full), engine="spark", spark_session=spark)
        assert _parts(stored) and _parts(stored) == _parts(full)
