"""A second judgment version's scores of a pool are built from the first's, rescoring only the
queries whose grades changed: the same bytes as a full scoring, said in the materialization;
NDCG_EVAL_INCREMENTAL=0 scores in full."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.definitions import pipeline_spec
from evaluation_pipeline.engines import score_files
from evaluation_pipeline.orchestration.partitions import evaluation_key
from tests.support.temporary_pipeline import (
    POOL_1,
    VERSION_1,
    VERSION_2,
    make_pipeline,
    temporary_instance,
)


def _engine(instance, pool: str, version: str) -> str:
    (record,) = instance.fetch_materializations(dg.AssetRecordsFilter(
        asset_key=dg.AssetKey("query_scores"),
        asset_partitions=[evaluation_key(pool, version)]), limit=1).records
    return record.asset_materialization.metadata["engine"].value


@pytest.mark.parametrize("incremental", ["1", "0"])
def test_a_second_version_is_scored_from_the_first(tmp_path: Path, monkeypatch, incremental):
    monkeypatch.setenv(settings.INCREMENTAL.name, incremental)
    with temporary_instance(tmp_path / "dagster_home") as instance:
        env = make_pipeline(tmp_path, instance)
        env.land_version(VERSION_1)
        env.land_pool(POOL_1)
        assert all(o.success for o in env.runner.run_until_quiet())
        env.land_version(VERSION_2)
        assert all(o.success for o in env.runner.run_until_quiet())
        assert _engine(instance, POOL_1, VERSION_1) != "incremental"  # nothing to start from
        second = _engine(instance, POOL_1, VERSION_2)
        assert (second == "incremental") == (incremental == "1")
        spec_id = pipeline_spec().spec_id
        stored = env.storage / "scores" / POOL_1 / VERSION_2 / spec_id / "per_query.parquet"
        full = tmp_path / "full.parquet"
        score_files(env.storage / "judgments" / VERSION_2 / "judgments.parquet",
                    env.storage / "pools" / POOL_1 / "candidates.parquet", pipeline_spec(),
                    full, engine="local", progress=False)
        assert stored.read_bytes() == full.read_bytes()
