"""Recovery, in process: dead runs, retries, redo after deleted outputs, tampered published
files, a changed queries table, landing hygiene and the instance lock."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import uuid
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.definitions import pipeline_spec
from evaluation_pipeline.io import landing
from evaluation_pipeline.io.lock import LockTimeout, folder_lock
from evaluation_pipeline.orchestration.liveness import (
    HOST_TAG,
    PID_TAG,
    PROCESS_START_TAG,
    fail_dead_runs,
    process_tags,
)
from evaluation_pipeline.orchestration.partitions import evaluation_key
from evaluation_pipeline.orchestration.selection import expected_evaluations
from tests.support.temporary_pipeline import (
    LANDING,
    POOL_1,
    POOL_2,
    VERSION_1,
    VERSION_2,
    make_pipeline,
    temporary_instance,
)


@pytest.fixture
def pipeline(tmp_path: Path):
    with temporary_instance(tmp_path / "dagster_home") as instance:
        env = make_pipeline(tmp_path, instance)
        env.runner.backoff_seconds = 0.0
        env.land_version(VERSION_1)
        env.land_pool(POOL_1)
        yield env


def _states(pipeline):
    resources = pipeline.defs.resources
    return expected_evaluations(pipeline.instance, resources["landing"], resources["storage"],
                                resources["policy"], pipeline_spec())


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


# -- dead runs and retries ------------------------------------------------------------------------


def test_a_run_left_started_by_a_dead_process_is_failed_and_run_again(pipeline):
    pipeline.runner.run_until_quiet()
    tags = process_tags() | {PID_TAG: str(_dead_pid())}
    orphan = pipeline.instance.add_run(dg.DagsterRun(
        job_name="ingest_queries", run_id=str(uuid.uuid4()),
        status=dg.DagsterRunStatus.STARTED, tags=tags))
    alive = pipeline.instance.add_run(dg.DagsterRun(
        job_name="ingest_queries", run_id=str(uuid.uuid4()),
        status=dg.DagsterRunStatus.STARTED, tags=process_tags()))
    assert [run.run_id for run in fail_dead_runs(pipeline.instance)] == [orphan.run_id]
    assert pipeline.instance.get_run_by_id(orphan.run_id).status == dg.DagsterRunStatus.FAILURE
    assert pipeline.instance.get_run_by_id(alive.run_id).status == dg.DagsterRunStatus.STARTED
    # A run of the same pid but another process start time is a dead one too (pid reuse).
    reused = pipeline.instance.add_run(dg.DagsterRun(
        job_name="ingest_queries", run_id=str(uuid.uuid4()),
        status=dg.DagsterRunStatus.STARTED, tags=process_tags() | {PROCESS_START_TAG: "1"}))
    other_host = pipeline.instance.add_run(dg.DagsterRun(
        job_name="ingest_queries", run_id=str(uuid.uuid4()),
        status=dg.DagsterRunStatus.STARTED, tags={PID_TAG: "1", HOST_TAG: "elsewhere"}))
    assert [run.run_id for run in fail_dead_runs(pipeline.instance)] == [reused.run_id]
    assert pipeline.instance.get_run_by_id(other_host.run_id).status == (
        dg.DagsterRunStatus.STARTED)


def test_a_killed_evaluation_is_not_in_flight_and_is_evaluated_again(pipeline):
    pipeline.runner.run_until_quiet()
    pipeline.report(POOL_1, VERSION_1).unlink()
    key = evaluation_key(POOL_1, VERSION_1)
    # What a kill -9 mid-evaluation leaves: a STARTED run of a process that is gone.
    pipeline.instance.add_run(dg.DagsterRun(
        job_name="evaluate", run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.STARTED,
        tags=process_tags() | {PID_TAG: str(_dead_pid()), "dagster/partition": str(key)}))
    (outcome,) = pipeline.runner.tick("evaluations_ready")
    assert outcome.success and outcome.partition == key
    assert all(state.whole for state in _states(pipeline))


def test_deleted_report_is_evaluated_again_under_a_new_run_key(pipeline):
    (first,) = [o for o in pipeline.runner.run_until_quiet() if o.job == "evaluate"]
    before = pipeline.report(POOL_1, VERSION_1).read_bytes()
    pipeline.report(POOL_1, VERSION_1).unlink()
    (state,) = _states(pipeline)
    assert not state.whole and "report.json" in state.missing
    (again,) = pipeline.runner.tick("evaluations_ready")
    assert again.success and again.run_key == f"{first.run_key}:redo-1"
    assert pipeline.report(POOL_1, VERSION_1).read_bytes() == before
    assert pipeline.runner.tick("evaluations_ready") == []


def test_a_failing_write_is_retried_and_an_input_error_is_not(pipeline, monkeypatch):
    monkeypatch.setenv(settings.FAIL_WRITE.name, "queries.parquet:1")
    (queries,) = pipeline.runner.tick("queries_changed")
    assert queries.success and queries.attempts == 2
    monkeypatch.setenv(settings.FAIL_WRITE.name, "judgments.parquet")
    (ingest,) = pipeline.runner.tick("judgment_versions_landed")
    assert not ingest.success and ingest.attempts == pipeline.runner.max_attempts
    assert "No space left on device" in ingest.error and "judgments.parquet" in ingest.error
    assert "gave up after 3 attempts" in ingest.error
    monkeypatch.delenv(settings.FAIL_WRITE.name)
    bad = pipeline.landing / "judgments" / "maint-bad.csv"
    bad.write_text("query_id,doc_id,grade\nq1,d1,-1\n")
    (refused,) = pipeline.runner.tick("judgment_versions_landed")
    assert not refused.success and refused.attempts == 1


@pytest.mark.parametrize("written", ["judgments.parquet", "report.json"])
def test_a_full_disk_names_the_file_where_the_storage_keeps_it(pipeline, monkeypatch, written):
    """The step's error, not the OSError behind it, and the published or reported file's
    place, not the scratch or staging folder it was being written in."""
    pipeline.runner.max_attempts = 1
    monkeypatch.setenv(settings.FAIL_WRITE.name, written)
    outcomes = pipeline.runner.run_until_quiet()
    (failed,) = [o for o in outcomes if not o.success][:1]
    storage = Path(pipeline.defs.resources["storage"].root())
    expected = (storage / "judgments" / VERSION_1 / written if written == "judgments.parquet"
                else storage / "reports" / POOL_1 / VERSION_1)
    assert f"could not write {expected}" in failed.error, failed.error
    assert "OSError" not in failed.error and "ndcg-eval-" not in failed.error
    assert ".staging" not in failed.error


def test_a_pool_file_replaced_during_ingest_is_not_published_and_a_restore_recovers(
        pipeline, monkeypatch):
    from evaluation_pipeline.ingest import inputs

    run = sorted((pipeline.landing / "pools" / POOL_1).glob("*.parquet"))[0]
    original = run.read_bytes()
    screen = inputs.screen_batches

    def screened_then_replaced(*args, **kwargs):
        result = screen(*args, **kwargs)
        broken = pl.read_parquet(run).with_columns(pl.lit(float("nan")).alias("score"))
        fresh = run.with_name(".incoming")
        broken.write_parquet(fresh)
        os.replace(fresh, run)
        return result

    monkeypatch.setattr(inputs, "screen_batches", screened_then_replaced)
    outcomes = pipeline.runner.run_until_quiet()
    monkeypatch.undo()
    # The attempt that screened the old bytes published nothing; the retry read the new ones
    # and refused them by the rules (as does the run the new bytes' own key asks for).
    failed = [o for o in outcomes if not o.success]
    assert failed[0].attempts == 2 and {o.job for o in failed} == {"ingest_candidate_pool"}
    assert all("NaN" in o.error for o in failed), failed
    storage = Path(pipeline.defs.resources["storage"].root())
    assert not (storage / "pools" / POOL_1 / "manifest.json").exists()
    # Restored: the next run (a new process, as make run is) publishes it and evaluates it.
    from evaluation_pipeline.orchestration.local_runner import LocalRunner

    fresh = run.with_name(".restored")
    fresh.write_bytes(original)
    os.replace(fresh, run)
    runner = LocalRunner(pipeline.defs, pipeline.instance)
    runner.backoff_seconds = 0.0
    outcomes = runner.run_until_quiet()
    assert outcomes and all(o.success for o in outcomes), [o.error for o in outcomes]
    assert (storage / "pools" / POOL_1 / "manifest.json").exists()
    states = _states(pipeline)
    assert states and all(state.whole for state in states)


# -- what a report is made of ---------------------------------------------------------------------


def test_truncated_or_regraded_published_judgments_are_caught_and_a_restore_passes(pipeline):
    pipeline.runner.run_until_quiet()
    published = pipeline.storage / "judgments" / VERSION_1 / "judgments.parquet"
    original = published.read_bytes()
    published.write_bytes(original[: len(original) // 2])
    (state,) = _states(pipeline)
    assert state.altered and str(published) in state.missing and "bytes" in state.missing
    assert pipeline.runner.tick("evaluations_ready") == []
    # The same size, other bytes (a grade changed in place).
    published.write_bytes(original[:-9] + bytes(reversed(original[-9:])))
    (state,) = _states(pipeline)
    assert state.altered and "other bytes than were published" in state.missing
    published.write_bytes(original)  # restored byte for byte: a new mtime, the same hash
    assert all(state.whole for state in _states(pipeline))


def test_changed_query_weights_refresh_the_reports(pipeline):
    pipeline.runner.run_until_quiet()
    before = pipeline.report(POOL_1, VERSION_1).read_bytes()
    queries = pipeline.root / "queries.csv"
    header, *rows = queries.read_text().splitlines()
    column = header.split(",").index("weight")
    # Every query weighs 1 from now on: the weighted NDCG becomes the macro one.
    rows = [",".join("1" if i == column else value for i, value in enumerate(row.split(",")))
            for row in rows]
    queries.write_text("\n".join([header, *rows]) + "\n")
    outcomes = pipeline.runner.run_until_quiet()
    assert [(o.job, o.success) for o in outcomes] == [("ingest_queries", True),
                                                      ("evaluate", True)]
    assert pipeline.report(POOL_1, VERSION_1).read_bytes() != before
    assert all(state.whole for state in _states(pipeline))


# -- landing hygiene ------------------------------------------------------------------------------


def _list_pools_without_hanging(root: Path):
    result = {}
    thread = threading.Thread(target=lambda: result.update(listing=landing.pool_folders(root)),
                              daemon=True)
    thread.start()
    thread.join(timeout=20)
    assert "listing" in result, "listing the pools hung (a FIFO was opened?)"
    return result["listing"]


def test_pool_entries_that_are_not_files_are_skipped_with_a_warning(tmp_path: Path):
    root = tmp_path / "landing"
    shutil.copytree(LANDING, root)
    pool = root / "pools" / POOL_1
    (pool / "extra.parquet").mkdir()
    os.mkfifo(pool / "stream.csv")
    pools, skipped = _list_pools_without_hanging(root)
    assert [item.name for item in pools] == sorted(p.name for p in (root / "pools").iterdir()
                                                   if (p / "_READY").exists())
    assert sorted(skipped) == sorted(
        f"{pool / name} is not a regular file; the pool is read without it"
        for name in ("extra.parquet", "stream.csv"))
    assert not any(entry.refused for entry in skipped)
    assert all(f.is_file() for f in landing.run_files(root, POOL_1))


def test_half_copied_judgment_file_is_not_published_until_renamed(pipeline):
    complete = (LANDING / "judgments" / f"{VERSION_2}.csv").read_text()
    half = complete[: len(complete) // 2]
    for partial in (f"{VERSION_2}.csv.part", f".{VERSION_2}.csv", f"{VERSION_2}.csv.tmp"):
        path = pipeline.landing / "judgments" / partial
        path.write_text(half)
        versions, skipped = pipeline.defs.resources["landing"].judgment_files()
        assert [v.name for v in versions] == [VERSION_1] and not skipped
        path.unlink()
    staged = pipeline.landing / "judgments" / f"{VERSION_2}.csv.part"
    staged.write_text(complete)
    staged.rename(pipeline.landing / "judgments" / f"{VERSION_2}.csv")
    versions, _ = pipeline.defs.resources["landing"].judgment_files()
    (landed,) = [v for v in versions if v.name == VERSION_2]
    assert landed.files_sha256 == landing.file_sha256(LANDING / "judgments" / f"{VERSION_2}.csv")


def test_refused_landing_name_fails_the_tick_after_the_valid_entries_are_requested(pipeline):
    (pipeline.landing / "judgments" / "bad name!.csv").write_text("query_id,doc_id,grade\n")
    sensor = pipeline.defs.resolve_sensor_def("judgment_versions_landed")
    context = dg.build_sensor_context(instance=pipeline.instance, definitions=pipeline.defs,
                                      resources=pipeline.defs.resources)
    first = sensor(context)
    assert [r.partition_key for r in first.run_requests] == [VERSION_1]
    pipeline.instance.add_dynamic_partitions("judgment_versions", [VERSION_1])
    again = dg.build_sensor_context(instance=pipeline.instance, cursor=first.cursor,
                                    definitions=pipeline.defs, resources=pipeline.defs.resources)
    with pytest.raises(landing.LandingError, match="1 judgments landing entry is refused.*bad"):
        sensor(again)
    # The runner executes the valid version, then records the failed tick (main exits 1).
    outcomes = [o for _ in range(2) for o in pipeline.runner.tick("judgment_versions_landed")]
    assert [(o.partition, o.success) for o in outcomes] == [(VERSION_1, True)]
    (error,) = pipeline.runner.tick_errors
    assert error.startswith("judgment_versions_landed: ") and "bad name!" in error


# -- the instance lock ----------------------------------------------------------------------------


def test_a_second_holder_of_the_instance_lock_waits_then_times_out(tmp_path: Path):
    waited = []
    with (folder_lock(tmp_path, timeout=1),
          pytest.raises(LockTimeout, match="still locked after 0.3 s"),
          folder_lock(tmp_path, timeout=0.3, on_wait=waited.append)):
        pass
    assert waited == [f"pid {os.getpid()}"]
    with folder_lock(tmp_path, timeout=0.3, on_wait=waited.append):
        assert len(waited) == 1  # free again: taken without waiting


# -- a published input's manifest deleted or torn -------------------------------------------------


@pytest.mark.parametrize("what", ["pool", "judgments", "queries"])
def test_a_deleted_manifest_is_published_again_from_the_landing(pipeline, what):
    """What is expected comes from the landing: an input whose manifest vanished after it was
    published is ingested again (a new run key), and nothing is reported current meanwhile."""
    from evaluation_pipeline.orchestration.selection import unpublished_inputs

    assert all(o.success for o in pipeline.runner.run_until_quiet())
    folder = {"pool": ("pools", POOL_1), "judgments": ("judgments", VERSION_1),
              "queries": ("queries",)}[what]
    manifest = pipeline.storage.joinpath(*folder, "manifest.json")
    manifest.unlink()
    resources = pipeline.defs.resources
    assert len(unpublished_inputs(resources["landing"], resources["storage"])) == 1
    again = pipeline.runner.run_until_quiet()
    assert again and all(o.success for o in again), again
    assert manifest.is_file()
    assert unpublished_inputs(resources["landing"], resources["storage"]) == []
    assert all(state.whole for state in _states(pipeline))
    assert pipeline.runner.run_until_quiet() == []  # done again: nothing more


def test_a_pool_landing_after_a_deleted_version_manifest_is_evaluated_under_it(pipeline):
    """The version whose manifest vanished is still expected: a pool that lands next is
    evaluated under it (nothing says "current" while an evaluation is missing)."""
    assert all(o.success for o in pipeline.runner.run_until_quiet())
    (pipeline.storage / "judgments" / VERSION_1 / "manifest.json").unlink()
    pipeline.land_pool(POOL_2)
    again = pipeline.runner.run_until_quiet()
    assert again and all(o.success for o in again), again
    states = _states(pipeline)
    assert {(s.pool, s.version) for s in states} == {(POOL_1, VERSION_1), (POOL_2, VERSION_1)}
    assert all(state.whole for state in states)
    assert pipeline.report(POOL_2, VERSION_1).is_file()


def test_a_torn_manifest_is_named_not_a_traceback(pipeline):
    from schemas.errors import EvaluationError

    assert all(o.success for o in pipeline.runner.run_until_quiet())
    manifest = pipeline.storage / "pools" / POOL_1 / "manifest.json"
    manifest.write_text(manifest.read_text()[:20])
    with pytest.raises(EvaluationError, match=f"{manifest}: not a whole JSON file"):
        _states(pipeline)


def test_a_new_runner_on_a_whole_storage_runs_nothing(pipeline):
    """A new process starts with no sensor cursor: what is published stays done."""
    from evaluation_pipeline.orchestration.local_runner import LocalRunner

    assert all(o.success for o in pipeline.runner.run_until_quiet())
    assert LocalRunner(pipeline.defs, pipeline.instance).run_until_quiet() == []
