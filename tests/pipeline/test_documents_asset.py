"""The documents table through the pipeline: the ``documents_changed`` sensor asks for an ingest
when the table lands and when its content changes, never for the same content twice; the
``documents`` asset publishes the validated rows under their content hash, refuses a bad table
by file, column, rule and rows without publishing anything, and ``judgments_llm`` reads the
published table, recording its hash."""

import json
import os
import shutil
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.analysis.quality import documents_sha256
from evaluation_pipeline.analysis.worklist import worklist
from evaluation_pipeline.definitions import pipeline_spec
from evaluation_pipeline.io.readers import read_queries
from evaluation_pipeline.judging.document_reader import read_documents
from evaluation_pipeline.orchestration.gate_record import recorded_verdict
from evaluation_pipeline.orchestration.judging_assets import JUDGE_ASSET, build_judging_assets
from evaluation_pipeline.orchestration.local_runner import LocalRunner
from evaluation_pipeline.orchestration.resources import EvaluationStorage, LandingZone
from tests.support.judge_server import JudgeServer
from tests.support.paths import EXAMPLES
from tests.support.serve_judge import example_grades
from tests.support.temporary_pipeline import (
    POOL_1,
    VERSION_2,
    Pipeline,
    make_pipeline,
    temporary_instance,
)

SENSOR = "documents_changed"
JUDGED = "maint-v2-llm"


def _pipeline(root: Path, instance) -> tuple[Pipeline, Path]:
    """A pipeline whose documents table is ``root/landed-documents.csv``, not there yet."""
    source = root / "landed-documents.csv"
    return make_pipeline(root, instance, documents_path=str(source)), source


def _published(env: Pipeline) -> tuple[Path, Path]:
    folder = env.storage / "documents"
    return folder / "documents.parquet", folder / "manifest.json"


def _skip_reason(env: Pipeline) -> str:
    result = env.defs.resolve_sensor_def(SENSOR)(dg.build_sensor_context(
        instance=env.instance, definitions=env.defs, resources=env.defs.resources,
        cursor=env.runner.cursors.get(SENSOR)))
    assert isinstance(result, dg.SkipReason), result
    return result.skip_message


def test_the_sensor_ingests_the_table_when_it_lands_and_when_its_content_changes(tmp_path):
    with temporary_instance(tmp_path / "dagster_home") as instance:
        env, source = _pipeline(tmp_path, instance)
        assert _skip_reason(env) == f"no documents table at {source}"
        assert env.runner.tick(SENSOR) == []

        shutil.copy(EXAMPLES / "documents.csv", source)
        (first,) = env.runner.tick(SENSOR)
        assert (first.job, first.partition, first.success) == ("ingest_documents", None, True)
        validated = read_documents(source)
        parquet, manifest_file = _published(env)
        published = pl.read_parquet(parquet)
        assert published.equals(validated)  # the rows, columns and dtypes the model validated
        manifest = json.loads(manifest_file.read_text())
        sha = documents_sha256(validated)
        assert {key: manifest[key] for key in ("sha256", "rows", "source")} == {
            "sha256": sha, "rows": validated.height, "source": str(source)}
        assert manifest["published_at"]
        event = instance.get_latest_materialization_event(dg.AssetKey("documents"))
        metadata = event.asset_materialization.metadata
        assert metadata["sha256"].value == sha
        assert metadata["dagster/row_count"].value == validated.height
        assert metadata["columns"].value == validated.columns
        assert metadata["source"].value == str(source)
        assert event.asset_materialization.tags["dagster/data_version"] == sha

        # Unchanged: not again, even with a new modification time.
        assert env.runner.tick(SENSOR) == []
        os.utime(source, (1_700_000_000, 1_700_000_000))
        assert env.runner.tick(SENSOR) == []
        assert _skip_reason(env) == "documents table unchanged"

        # Changed: ingested again, and the published table replaced.
        changed = validated.with_columns(
            pl.when(pl.col("doc_id") == validated["doc_id"][0]).then(pl.lit("re-extracted"))
            .otherwise(pl.col("text")).alias("text"))
        changed.write_csv(source)
        (second,) = env.runner.tick(SENSOR)
        assert second.success and second.run_key != first.run_key
        assert pl.read_parquet(parquet).equals(read_documents(source))
        assert json.loads(manifest_file.read_text())["sha256"] == documents_sha256(changed) != sha
        assert env.runner.tick(SENSOR) == []

        # A deployment that names no documents table: nothing to watch.
        landing = LandingZone(folder=str(env.landing), queries_path=str(tmp_path / "queries.csv"))
        unnamed = dg.build_sensor_context(instance=instance, definitions=env.defs, resources={
            **env.defs.resources, "landing": landing})
        result = env.defs.resolve_sensor_def(SENSOR)(unnamed)
        assert result.skip_message == (f"no documents table named ({settings.DOCUMENTS.name} "
                                       "unset)")


def _duplicate_doc_id(good: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    doc_id = good["doc_id"][3]
    # Line 1 is the header: the fourth row is line 5, the repeat the last line.
    return pl.concat([good, good[3:4]]), [
        "column 'doc_id'", "values must be unique",
        f"line 5 ('{doc_id}')", f"line {good.height + 2} ('{doc_id}')"]


def _no_text_column(good: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    return good.drop("text"), ["column 'text'", "required column is missing"]


@pytest.mark.parametrize("fault", [_duplicate_doc_id, _no_text_column])
def test_a_bad_table_fails_its_run_by_name_and_publishes_nothing(tmp_path, fault):
    good = read_documents(EXAMPLES / "documents.csv")
    bad, named = fault(good)
    with temporary_instance(tmp_path / "dagster_home") as instance:
        env, source = _pipeline(tmp_path, instance)
        bad.write_csv(source)
        (run,) = env.runner.tick(SENSOR)
        # The input's own fault: not retried, and said with the file, column, rule and rows.
        assert not run.success and not run.retriable and run.attempts == 1
        assert f"{source}: invalid input" in run.error
        for words in named:
            assert words in run.error, run.error
        assert not (env.storage / "documents").exists()

        # After a good table is published, a bad one leaves it as it was.
        good.write_csv(source)
        (fixed,) = env.runner.tick(SENSOR)
        assert fixed.success
        before = {path: path.read_bytes() for path in _published(env)}
        bad.write_csv(source)
        # The next main job's runner: this one does not run a key that failed in it again.
        runner = LocalRunner(env.defs, instance, cursors=dict(env.runner.cursors))
        (again,) = runner.tick(SENSOR)
        assert not again.success and named[0] in again.error
        assert {path: path.read_bytes() for path in _published(env)} == before


def _judge(instance, env: Pipeline, run_config: dict) -> dg.ExecuteInProcessResult:
    judge, check = build_judging_assets(pipeline_spec())
    return dg.materialize([judge, check], instance=instance, resources=env.defs.resources,
                          run_config=run_config, raise_on_error=False)


def _config(version: str, worklist_file: Path, url: str, cache: Path, **more) -> dict:
    return {"ops": {JUDGE_ASSET: {"config": {
        "version": version, "base_version": VERSION_2, "pool": POOL_1,
        "worklist": str(worklist_file), "judge_url": url, "model": "test-model",
        "budget": 10, "calibration": 30, "cache": str(cache), **more}}}}


def _failure(result: dg.ExecuteInProcessResult) -> str:
    return "; ".join(event.step_failure_data.error.message for event in result.all_events
                     if event.is_step_failure)


def test_the_judge_reads_the_published_table_and_records_its_hash(tmp_path):
    with temporary_instance(tmp_path / "dagster_home") as instance:
        env, source = _pipeline(tmp_path, instance)
        shutil.copy(EXAMPLES / "documents.csv", source)
        env.land_version(VERSION_2)
        env.land_pool(POOL_1)
        for sensor in ("queries_changed", SENSOR, "judgment_versions_landed",
                       "candidate_pools_landed"):
            assert [o.success for o in env.runner.tick(sensor)] == [True], sensor
        parquet, manifest_file = _published(env)
        published = json.loads(manifest_file.read_text())["sha256"]
        graph = env.defs.resolve_asset_graph()
        assert dg.AssetKey("documents") in graph.get(dg.AssetKey(JUDGE_ASSET)).parent_keys

        # The landing's table changes, and is not ingested: the judge reads the published one.
        read_documents(source).with_columns(pl.lit("a text no judge has seen").alias(
            "text")).write_csv(source)
        storage = EvaluationStorage(base=str(env.storage))
        people = storage.read_parquet("judgments", VERSION_2, "judgments.parquet")
        pool = storage.read_parquet("pools", POOL_1, "candidates.parquet")
        listed = tmp_path / "worklist.csv"
        worklist(people, pool, pipeline_spec(), read_queries(EXAMPLES / "queries.csv")).write_csv(
            listed)
        texts = dict(pl.read_csv(EXAMPLES / "queries.csv").select(
            "query_id", "query_text").iter_rows())
        needed = {texts[q] for q in pool["query_id"].unique()}
        grades = {key: grade for key, grade in example_grades().items() if key[0] in needed}
        cache = tmp_path / "cache"
        with JudgeServer(grades) as server:
            result = _judge(instance, env, _config(JUDGED, listed, server.base_url, cache))
            assert result.success, _failure(result)
            # Every question held a published text: the server knew each passage.
            assert server.calls > 0 and server.asked[None] == 0
            metadata = result.asset_materializations_for_node(JUDGE_ASSET)[0].metadata
            assert metadata["documents_sha256"].value == published
            assert metadata["documents"].value == str(parquet)
            verdict = recorded_verdict(storage, JUDGED)
            assert (verdict["documents_sha256"], verdict["documents"]) == (published,
                                                                           str(parquet))

            # Without a published table, the judge names the setting and the job to run.
            manifest_file.unlink()
            result = _judge(instance, env, _config(f"{JUDGED}-2", listed, server.base_url,
                                                   cache))
            assert not result.success
            message = _failure(result)
            assert "no documents table is published" in message
            assert settings.DOCUMENTS.name in message and "ingest_documents" in message
            assert not (env.landing / "judgments" / f"{JUDGED}-2.csv").exists()

            # A documents config overrides the published table, and its hash is recorded.
            own = EXAMPLES / "documents.csv"
            result = _judge(instance, env, _config(f"{JUDGED}-3", listed, server.base_url,
                                                   cache, documents=str(own)))
            assert result.success, _failure(result)
        metadata = result.asset_materializations_for_node(JUDGE_ASSET)[0].metadata
        assert metadata["documents_sha256"].value == documents_sha256(read_documents(own))
        assert metadata["documents"].value == str(own)
