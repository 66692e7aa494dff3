"""``judgments_llm`` and its gate: on demand only (no job, schedule or sensor selects it); a
materialization judges a worklist's holes and documents people graded, records the gate's
verdict, lands the version, and the pipeline re-scores it incrementally (only the queries whose
grades changed, with the bytes of a full scoring); a version the gate refused is published and
reported, but is not the night's headline."""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg
import polars as pl
import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.analysis.worklist import worklist
from evaluation_pipeline.definitions import build_definitions, pipeline_spec
from evaluation_pipeline.engines import score_files
from evaluation_pipeline.io.readers import read_queries
from evaluation_pipeline.nightly.history import headline_of, read_history
from evaluation_pipeline.orchestration.assets import _nights
from evaluation_pipeline.orchestration.gate_record import (
    headline_candidates,
    recorded_verdict,
    verdict_place,
)
from evaluation_pipeline.orchestration.jobs import build_jobs
from evaluation_pipeline.orchestration.judging_assets import (
    GATE_CHECK,
    JUDGE_ASSET,
    build_judging_assets,
)
from evaluation_pipeline.orchestration.partitions import DEFAULT, evaluation_key
from evaluation_pipeline.orchestration.resources import EvaluationStorage
from tests.support.judge_server import JudgeServer
from tests.support.paths import EXAMPLES
from tests.support.serve_judge import example_grades
from tests.support.temporary_pipeline import (
    POOL_1,
    POOL_2,
    VERSION_2,
    make_pipeline,
    temporary_instance,
)

JUDGED = "maint-v2-llm"


def test_no_job_schedule_or_sensor_selects_the_judge(tmp_path, monkeypatch):
    # An instance of its own: resolving the definitions reads the current instance.
    with dg.instance_for_test():
        monkeypatch.setenv(settings.DEV.name, "1")
        defs = build_definitions(storage_base=str(tmp_path / "storage"))
        key = dg.AssetKey(JUDGE_ASSET)
        assert defs.resolve_assets_def(key).group_names_by_key[key] == "judging"
        graph = defs.resolve_asset_graph()
        for job in build_jobs():
            assert key not in job.selection.resolve(graph), job.name
        nightly = defs.resolve_schedule_def("nightly_evaluation")
        assert nightly.job_name == build_jobs().evaluation.name
        for sensor in defs.sensors:
            target = getattr(sensor, "asset_selection", None)
            if target is not None:
                assert key not in target.resolve(graph), sensor.name
        assert defs.resolve_assets_def(key).automation_conditions_by_key.get(key) is None


def test_a_refused_version_is_no_headline_candidate(tmp_path):
    storage = EvaluationStorage(base=str(tmp_path))
    versions = {"v1": {"published_at": "1"}, "v2": {"published_at": "2"},
                "v3": {"published_at": "3"}}
    storage.write_json({"promoted": True, "reason": "promoted"}, *verdict_place("v2"))
    storage.write_json({"promoted": False, "reason": "refused"}, *verdict_place("v3"))
    assert list(headline_candidates(storage, versions)) == ["v1", "v2"]
    # A verdict that cannot be read proves no promotion.
    storage.path(*verdict_place("v2")).write_text("{")
    assert list(headline_candidates(storage, versions)) == ["v1"]


def _run_config(tmp_path, worklist_file, url: str) -> dict:
    return {"ops": {JUDGE_ASSET: {"config": {
        "version": JUDGED, "base_version": VERSION_2, "pool": POOL_1,
        "worklist": str(worklist_file), "documents": str(EXAMPLES / "documents.csv"),
        "judge_url": url, "model": "test-model", "budget": 40, "calibration": 40,
        "concurrency": 4, "price_per_1k_tokens": 0.5, "cache": str(tmp_path / "cache")}}}}


@pytest.mark.slow
@pytest.mark.parametrize("promoted", [True, False])
def test_the_judge_lands_a_gated_version_rescored_incrementally(tmp_path, monkeypatch,
                                                                promoted):
    # The example's passages repeat across documents (two manuals on one topic read alike),
    # so even a judge faithful to the text agrees with people only so far: the thresholds
    # are set to promote it, or to refuse it.
    monkeypatch.setenv(settings.GATE_MIN_KAPPA.name, "0.3" if promoted else "0.99")
    monkeypatch.setenv(settings.GATE_MIN_TAU.name, "-1")
    monkeypatch.setenv(settings.GATE_MIN_OVERLAP.name, "30")
    with temporary_instance(tmp_path / "dagster_home") as instance:
        env = make_pipeline(tmp_path, instance)
        env.land_version(VERSION_2)
        env.land_pool(POOL_1)
        assert all(o.success for o in env.runner.run_until_quiet())
        storage = EvaluationStorage(base=str(env.storage))
        people = storage.read_parquet("judgments", VERSION_2, "judgments.parquet")
        pool = storage.read_parquet("pools", POOL_1, "candidates.parquet")
        spec = pipeline_spec()
        listed = tmp_path / "worklist.csv"
        worklist(people, pool, spec, read_queries(EXAMPLES / "queries.csv")).write_csv(listed)
        wanted = {(q, d) for q, d in pool.select("query_id", "doc_id").iter_rows()}
        texts = dict(pl.read_csv(EXAMPLES / "queries.csv").select(
            "query_id", "query_text").iter_rows())
        needed = {texts[q] for q, _ in wanted}
        grades = {key: grade for key, grade in example_grades().items() if key[0] in needed}
        with JudgeServer(grades, accuracy=0.9) as server:
            judge, check = build_judging_assets(spec)
            assert {k.name for k in check.check_keys} == {GATE_CHECK}
            result = dg.materialize([judge, check], instance=instance,
                                    resources=env.defs.resources,
                                    run_config=_run_config(tmp_path, listed, server.base_url),
                                    raise_on_error=False)
            calls = server.calls
        assert result.success
        metadata = result.asset_materializations_for_node(JUDGE_ASSET)[0].metadata
        holes = pl.read_csv(listed).height
        assert metadata["holes_judged"].value == min(40, holes) > 0
        calibrated = metadata["calibration_judged"].value
        assert calibrated >= 40  # whole queries
        assert metadata["pairs_judged"].value == min(40, holes) + calibrated == calls
        assert metadata["tokens"].value == metadata["tokens_paid"].value > 0
        assert metadata["estimated_cost_usd"].value == pytest.approx(
            metadata["tokens"].value * 0.5 / 1000)
        assert metadata["promoted"].value is promoted
        assert metadata["min_kappa_quadratic"].value is not None
        (evaluation,) = result.get_asset_check_evaluations()
        assert evaluation.passed is promoted
        assert evaluation.severity == dg.AssetCheckSeverity.ERROR
        verdict = recorded_verdict(storage, JUDGED)
        assert evaluation.description.startswith(verdict["reason"])
        if not promoted:
            assert "below 0.99 (NDCG_EVAL_GATE_MIN_KAPPA)" in evaluation.description
            assert "not promoted" in evaluation.description
        landed = env.landing / "judgments" / f"{JUDGED}.csv"
        assert landed.is_file()

        # The landing sensor publishes it; the evaluation sensor scores it from maint-v2's.
        assert all(o.success for o in env.runner.run_until_quiet())
        (record,) = instance.fetch_materializations(dg.AssetRecordsFilter(
            asset_key=dg.AssetKey("query_scores"),
            asset_partitions=[evaluation_key(POOL_1, JUDGED)]), limit=1).records
        scoring = record.asset_materialization.metadata["scoring"].value
        new = storage.read_parquet("judgments", JUDGED, "judgments.parquet")
        key = ["query_id", "doc_id", "grade", "grade_status"]
        changed = pl.concat([people.select(key), new.select(key)]).unique(keep="none")[
            "query_id"].n_unique()
        assert scoring["path"] == "incremental" and scoring["from_version"] == VERSION_2
        assert scoring["rescored_queries"] == changed > 0
        stored = env.storage / "scores" / POOL_1 / JUDGED / spec.spec_id / "per_query.parquet"
        full = tmp_path / "full.parquet"
        score_files(env.storage / "judgments" / JUDGED / "judgments.parquet",
                    env.storage / "pools" / POOL_1 / "candidates.parquet", spec, full,
                    engine="local", progress=False)
        assert stored.read_bytes() == full.read_bytes()

        # The next night: the headline is the judge's version only if the gate promoted it.
        _, published = _nights(instance, storage, DEFAULT)
        assert (JUDGED in published) is promoted
        env.land_pool(POOL_2)
        assert all(o.success for o in env.runner.run_until_quiet())
        history = read_history(env.storage / "history" / "history.parquet")
        assert headline_of(history, POOL_2, spec.spec_id) == (JUDGED if promoted else VERSION_2)
        # And the nightly schedule evaluates the last promoted version.
        requests = env.defs.resolve_schedule_def("nightly_evaluation")(
            dg.build_schedule_context(instance=instance, resources=env.defs.resources,
                                      scheduled_execution_time=datetime(2026, 12, 9, 2,
                                                                        tzinfo=UTC)))
        headline = JUDGED if promoted else VERSION_2
        assert requests and {r.partition_key.keys_by_dimension["judgment_version"]
                             for r in requests} == {headline}
