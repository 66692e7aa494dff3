"""The reliability issue's reproduction, through the pipeline: the first version's scores are
altered on disk (a query's rows deleted, an ndcg set by hand, the file cut short), then a second
version lands. Its scores are a full scoring's bytes, the run succeeds, and its report says it
was scored in full and why. A report whose own scores were altered after they were written
scores them again before it reads them."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

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
from tests.unit.orchestration.test_scores_proof import ALTERATIONS


def _scores(env, version: str) -> Path:
    return env.storage / "scores" / POOL_1 / version / env.spec_id() / "per_query.parquet"


def _full_bytes(env, version: str, tmp_path: Path) -> bytes:
    full = tmp_path / f"full-{version}.parquet"
    score_files(env.storage / "judgments" / version / "judgments.parquet",
                env.storage / "pools" / POOL_1 / "candidates.parquet", pipeline_spec(), full,
                engine="local", progress=False)
    return full.read_bytes()


@pytest.mark.parametrize("alteration", ["one query's rows deleted", "one ndcg set",
                                        "truncated"])
def test_a_new_version_never_starts_from_altered_scores(tmp_path, alteration):
    with temporary_instance(tmp_path / "dagster_home") as instance:
        env = make_pipeline(tmp_path, instance)
        env.land_version(VERSION_1)
        env.land_pool(POOL_1)
        assert all(o.success for o in env.runner.run_until_quiet())
        ALTERATIONS[alteration](_scores(env, VERSION_1))
        env.land_version(VERSION_2)
        assert all(o.success for o in env.runner.run_until_quiet())
        assert _scores(env, VERSION_2).read_bytes() == _full_bytes(env, VERSION_2, tmp_path)
        scoring = json.loads(env.report(POOL_1, VERSION_2).read_text())["scoring"]
        assert scoring["path"] == "full" and str(_scores(env, VERSION_1)) in scoring["reason"]


def test_a_report_scores_again_what_was_altered_before_it_reads_it(tmp_path):
    with temporary_instance(tmp_path / "dagster_home") as instance:
        env = make_pipeline(tmp_path, instance)
        env.land_version(VERSION_1)
        env.land_pool(POOL_1)
        assert all(o.success for o in env.runner.run_until_quiet())
        scores = _scores(env, VERSION_1)
        expected = scores.read_bytes()
        ALTERATIONS["one ndcg set"](scores)
        outcome = env.runner.execute("evaluate", dg.RunRequest(
            partition_key=evaluation_key(POOL_1, VERSION_1),
            asset_selection=[dg.AssetKey("evaluation_report"),
                             dg.AssetKey("evaluation_history")]))
        assert outcome.success
        assert scores.read_bytes() == expected
        report_rows = pl.read_parquet(env.report(POOL_1, VERSION_1).parent / "per_query.parquet")
        assert report_rows.equals(pl.read_parquet(scores))
