"""Ingest (bounded, spilling) and scoring (auto, streaming) of the large pool through the Dagster
assets, under the budget whose sorts of it spill: the in-memory path's rows and content hashes."""

from __future__ import annotations

import json

import dagster as dg
import polars as pl

from evaluation_pipeline import settings
from evaluation_pipeline.definitions import pipeline_spec
from evaluation_pipeline.evaluation import evaluate
from evaluation_pipeline.io.readers import read_judgments, read_pool
from evaluation_pipeline.metric.hashing import judgments_sha256, pool_sha256
from tests.support.pools import POOL, SPILL_BUDGET, VERSION
from tests.support.temporary_pipeline import make_pipeline, temporary_instance


def test_assets_spill_and_equal_the_in_memory_path(large_inputs, tmp_path, monkeypatch):
    """Ingest (bounded, spilling) and scoring (auto, streaming) through the Dagster assets give
    the in-memory path's per-query rows and content hashes."""
    judgments, pool = large_inputs
    # The budget whose sorts of this pool spill, below the in-memory estimate: auto streams.
    monkeypatch.setenv(settings.MEMORY_LIMIT.name, f"{SPILL_BUDGET.memory_limit}B")
    monkeypatch.setenv(settings.SPILL_DIR.name, str(tmp_path / "spill"))
    root = tmp_path / "pipeline"
    root.mkdir()
    with temporary_instance(root / "dagster_home") as instance:
        env = make_pipeline(root, instance)
        env.land_pool(POOL, pool)
        (env.landing / "judgments" / judgments.name).write_bytes(judgments.read_bytes())
        outcomes = env.runner.run_until_quiet()
        assert all(o.success for o in outcomes), outcomes
        scores = instance.get_latest_materialization_event(dg.AssetKey("query_scores"))
        assert scores.asset_materialization.metadata["engine"].value == "streaming"
    expected_pool = read_pool(pool, pool=POOL)
    expected_grades = read_judgments(judgments, version=VERSION)
    for folder, sha in ((env.storage / "pools" / POOL, pool_sha256(expected_pool)),
                        (env.storage / "judgments" / VERSION, judgments_sha256(expected_grades))):
        assert json.loads((folder / "manifest.json").read_text())["sha256"] == sha
    expected, _ = evaluate(expected_grades, expected_pool, pipeline_spec())
    per_query = pl.read_parquet(env.report(POOL, VERSION).parent / "per_query.parquet")
    assert per_query.equals(expected)
    assert list((tmp_path / "spill").iterdir()) == []
