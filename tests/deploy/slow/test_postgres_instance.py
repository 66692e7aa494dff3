"""The deployment's instance (deploy/dagster.yaml) on a real PostgreSQL server: the main job
gives the same reports as on SQLite, run keys deduplicate, and concurrent starts are safe."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from evaluation_pipeline import settings
from evaluation_pipeline.main_job import INSTANCE_YAML
from tests.support.example_run import example_storage
from tests.support.paths import EXAMPLES, REPO
from tests.support.processes import tree
from tests.support.refusals import assert_names

INSTANCE_FILE = REPO / "deploy" / "dagster.yaml"
RUN_SECONDS = 900
NOTHING_NEW = "nothing new in the landing folder"


def deployment(root: Path, instance_env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a main job with its own landing copy, storage and Dagster home, named
    by configuration only (no development switch); with ``instance_env`` the home holds
    deploy/dagster.yaml and those DAGSTER_PG_* variables."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(EXAMPLES / "landing", root / "landing")
    shutil.copy(EXAMPLES / "queries.csv", root / "queries.csv")
    home = root / "dagster_home"
    home.mkdir()
    if instance_env is not None:
        shutil.copy(INSTANCE_FILE, home / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if k != settings.DEV.name}
    return env | (instance_env or {}) | {
        "DAGSTER_HOME": str(home),
        "NDCG_EVAL_LANDING": str(root / "landing"),
        "NDCG_EVAL_QUERIES": str(root / "queries.csv"),
        "NDCG_EVAL_STORAGE": str(root / "storage"),
    }


def main_job(env: dict[str, str]) -> subprocess.Popen:
    # The main job keeps a dagster.yaml it did not write: the PostgreSQL instance file stays.
    code = "import sys, evaluation_pipeline.main_job as main\nsys.exit(main.main())\n"
    # Output to a file, not a pipe: a job blocked on a full pipe could hold what the other
    # job started at the same time waits for.
    log_path = Path(env["DAGSTER_HOME"]) / f"main-job-{uuid.uuid4().hex}.log"
    with open(log_path, "w") as log:
        job = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=env["DAGSTER_HOME"],
                               stdout=log, stderr=subprocess.STDOUT)
    job.log = log_path
    return job


def finished(job: subprocess.Popen) -> str:
    job.wait(timeout=RUN_SECONDS)
    output = job.log.read_text()
    assert job.returncode == 0, output[-4000:]
    return output


def results(env: dict[str, str]) -> dict[str, bytes]:
    """Every scores and report file of a main job's storage, by its place in the storage."""
    storage = Path(env["NDCG_EVAL_STORAGE"])
    files = {str(p.relative_to(storage)): p.read_bytes()
             for folder in ("scores", "reports") for p in sorted((storage / folder).rglob("*"))
             if p.is_file()}
    assert any(name.endswith("report.json") for name in files), sorted(files)
    return files


def postgres_instance(env: dict[str, str]):
    import dagster as dg

    keys = [k for k in env if k.startswith("DAGSTER_PG_")]
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update({k: env[k] for k in keys})
    try:
        return dg.DagsterInstance.from_config(env["DAGSTER_HOME"])
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key)
            else:
                os.environ[key] = value


def run_keys(instance) -> list[str]:
    return [run.tags["dagster/run_key"] for run in instance.get_runs()
            if "dagster/run_key" in run.tags]


@pytest.fixture(scope="module")
def sqlite_results(tmp_path_factory) -> dict[str, bytes]:
    """The reference: the main job on the SQLite instance it writes itself."""
    return results({"NDCG_EVAL_STORAGE": str(example_storage(tmp_path_factory))})


def test_the_example_instance_file_configures_the_deployment(postgres_server, tmp_path):
    from dagster_postgres import (
        PostgresEventLogStorage,
        PostgresRunStorage,
        PostgresScheduleStorage,
    )

    env = deployment(tmp_path, postgres_server.create_database("instance_file"))
    with postgres_instance(env) as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        assert isinstance(instance.schedule_storage, PostgresScheduleStorage)
        assert instance.run_monitoring_enabled
        assert instance.run_monitoring_max_runtime_seconds > 0  # the dead-run timeout
        assert instance.run_retries_enabled and 0 < instance.run_retries_max_retries <= 5
        # The concurrency limits are make run's.
        deployed = yaml.safe_load(INSTANCE_FILE.read_text())["concurrency"]
        assert deployed == yaml.safe_load(INSTANCE_YAML)["concurrency"]
        limits = instance.get_concurrency_config()
        assert (limits.pool_config.default_pool_limit,
                limits.run_queue_config.max_concurrent_runs) == (
            deployed["pools"]["default_limit"], deployed["runs"]["max_concurrent_runs"])


def test_the_main_job_on_postgres_gives_the_sqlite_reports_and_a_rerun_launches_nothing(
        postgres_server, sqlite_results, tmp_path):
    env = deployment(tmp_path, postgres_server.create_database("main_job"))
    finished(main_job(env))
    assert results(env) == sqlite_results
    with postgres_instance(env) as instance:
        keys = run_keys(instance)
    assert keys and len(keys) == len(set(keys))

    # The sensors' run keys, stored in PostgreSQL, deduplicate: a rerun launches nothing.
    assert NOTHING_NEW in finished(main_job(env))
    with postgres_instance(env) as instance:
        assert sorted(run_keys(instance)) == sorted(keys)
    assert results(env) == sqlite_results


def test_two_main_jobs_started_at_once_on_postgres_both_succeed(
        postgres_server, sqlite_results, tmp_path):
    env = deployment(tmp_path, postgres_server.create_database("two_at_once"))
    first, second = main_job(env), main_job(env)
    outputs = [finished(first), finished(second)]
    assert results(env) == sqlite_results, outputs


def test_a_main_job_killed_while_scoring_on_postgres_is_failed_and_rerun_to_completion(
        postgres_server, sqlite_results, tmp_path):
    """kill -9 while the first scores are written: the run left STARTED in PostgreSQL belongs
    to a dead process, so the next main job marks it failed (orchestration.liveness) and runs
    its key again, until the outputs equal the SQLite run's."""
    import dagster as dg

    env = deployment(tmp_path, postgres_server.create_database("killed"))
    job = main_job(env)
    _when_scoring(job, env)
    job.send_signal(signal.SIGKILL)
    job.wait()

    finished(main_job(env))
    assert results(env) == sqlite_results
    with postgres_instance(env) as instance:
        runs = instance.get_runs()
        # Nothing is left in flight, and the killed run is on record as failed.
        assert not [r for r in runs if r.status in (dg.DagsterRunStatus.STARTED,
                                                    dg.DagsterRunStatus.STARTING)]
        assert any(r.status == dg.DagsterRunStatus.FAILURE for r in runs)
    assert NOTHING_NEW in finished(main_job(env))


def _signal_all(pids: list[int], sig: int) -> None:
    """A backend may exit between the listing and the signal: that is not a failure."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


@contextmanager
def _frozen(postgres_server):
    """The postmaster, then every backend and helper it forked, stopped with SIGSTOP, and all
    resumed on leaving, whatever happens inside: a server left stopped would hang every later
    test of the session. The postmaster is stopped first, so it forks nothing after the
    listing."""
    postmaster = int((postgres_server.data / "postmaster.pid").read_text().split()[0])
    stopped = [postmaster]
    try:
        os.kill(postmaster, signal.SIGSTOP)
        stopped += [pid for pid in tree(postmaster) if pid != postmaster]
        _signal_all(stopped[1:], signal.SIGSTOP)
        yield
    finally:
        _signal_all(stopped, signal.SIGCONT)


def _when_scoring(job, env) -> None:
    """Wait until the main job writes its first scores (it must not have ended)."""
    scores = Path(env["NDCG_EVAL_STORAGE"]) / "scores"
    deadline = time.monotonic() + RUN_SECONDS
    while not scores.exists():
        assert job.poll() is None, job.log.read_text()[-4000:]
        assert time.monotonic() < deadline, "no scores folder appeared"
        time.sleep(0.05)


def test_a_frozen_postgres_is_named_within_the_timeout_and_a_rerun_completes(
        postgres_server, sqlite_results, tmp_path):
    """SIGSTOP on the server: the kernel still acknowledges its packets, so only the watch's
    timeout ends the wait; the main job names the database and exits 1 within it."""
    env = deployment(tmp_path, postgres_server.create_database("frozen"))
    env["NDCG_EVAL_DATABASE_TIMEOUT"] = "5"
    job = main_job(env)
    _when_scoring(job, env)
    with _frozen(postgres_server):
        stopped_at = time.monotonic()
        job.wait(timeout=120)
        waited = time.monotonic() - stopped_at
    output = job.log.read_text()
    assert job.returncode == 1, output[-4000:]
    # The database, and the setting that bounded the wait with its value.
    assert_names(output, f"postgresql://{postgres_server.host}:{postgres_server.port}/frozen",
                 f"{settings.DATABASE_TIMEOUT.name}=5")
    assert waited < 60
    finished(main_job(env))
    assert results(env) == sqlite_results


def test_a_stopped_postgres_is_named_and_a_rerun_after_its_restart_completes(
        postgres_server, sqlite_results, tmp_path):
    env = deployment(tmp_path, postgres_server.create_database("stopped"))
    job = main_job(env)
    _when_scoring(job, env)
    postgres_server.stop()
    try:
        job.wait(timeout=300)
    finally:
        postgres_server.restart()
    output = job.log.read_text()
    assert job.returncode == 1, output[-4000:]
    assert_names(output, f"postgresql://{postgres_server.host}:{postgres_server.port}/stopped",
                 "DAGSTER_PG_*")  # the database, and the settings that name its server
    finished(main_job(env))
    assert results(env) == sqlite_results
