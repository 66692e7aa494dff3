"""Faults on the real main job (`python -m evaluation_pipeline.main_job`) in a subprocess.

Each test has its own landing folder (a copy of the examples), storage and Dagster home. A
clean run gives the reference outputs; after a kill -9 at several points, a failing write, or
two main jobs started at once, the next run must exit 0 with the same bytes.

Slow (each main job takes about a minute here): ``pytest tests/pipeline/slow/test_recovery.py``.
NDCG_EVAL_CONCURRENCY_TRIALS sets the number of simultaneous starts (3 unless set: 12 s a
trial, and the suite keeps under 15 minutes; set it higher to hunt a race).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluation_pipeline import settings
from tests.support.example_run import example_storage
from tests.support.paths import EXAMPLES, REPO

MAIN_TIMEOUT = 900
# The files of an evaluation that must be byte-identical to a clean run's.
COMPARED = {"per_query.parquet", "aggregates.parquet", "report.json", "report.html"}
EXPECTED_EVALUATIONS = 4  # the examples: 2 judgment versions x 2 pools


def _root(base: Path) -> Path:
    base.mkdir(parents=True, exist_ok=True)
    shutil.copytree(EXAMPLES / "landing", base / "landing")
    shutil.copy(EXAMPLES / "queries.csv", base / "queries.csv")
    return base


def _env(root: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != settings.FAIL_WRITE.name}
    return env | {
        "NDCG_EVAL_LANDING": str(root / "landing"),
        "NDCG_EVAL_STORAGE": str(root / "storage"),
        "NDCG_EVAL_QUERIES": str(root / "queries.csv"),
        "DAGSTER_HOME": str(root / "home"),
        "PYTHONPATH": str(REPO),
    } | extra


def _start(root: Path, log: str, **extra: str) -> subprocess.Popen:
    with open(root / log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "evaluation_pipeline.main_job"],
                                cwd=root, env=_env(root, **extra), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _finish(process: subprocess.Popen, root: Path, log: str) -> tuple[int, str]:
    code = process.wait(timeout=MAIN_TIMEOUT)
    return code, (root / log).read_text(encoding="utf-8", errors="replace")


def _main(root: Path, log: str, **extra: str) -> tuple[int, str]:
    return _finish(_start(root, log, **extra), root, log)


def _outputs(storage: Path) -> dict[str, bytes]:
    return {str(path.relative_to(storage)): path.read_bytes()
            for folder in ("scores", "reports") if (storage / folder).is_dir()
            for path in sorted((storage / folder).rglob("*")) if path.name in COMPARED}


def _leftovers(root: Path) -> list[str]:
    """Temporary files and staging or scratch folders left in the storage (and the system's
    temporary folder's scratch of this project, when the test's own run left any)."""
    from evaluation_pipeline.io.leftovers import is_ours

    return sorted(str(path.relative_to(root)) for path in (root / "storage").rglob("*")
                  if is_ours(path.name) or path.name.endswith(".tmp")
                  or ".staging-" in path.name or path.parent.name == ".staging")


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> dict[str, bytes]:
    outputs = _outputs(example_storage(tmp_path_factory))
    # per_query twice (scores and report folder), aggregates, report.json and .html
    assert len([name for name in outputs if name.endswith("report.json")]) == (
        EXPECTED_EVALUATIONS), sorted(outputs)
    return outputs


def _kill_when(process: subprocess.Popen, ready, what: str) -> None:
    deadline = time.monotonic() + MAIN_TIMEOUT
    while not ready():
        assert process.poll() is None, f"the main job ended before {what}"
        assert time.monotonic() < deadline, f"no {what} within {MAIN_TIMEOUT} s"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@pytest.mark.parametrize("point", ["judgments", "scores", "reports"])
def test_kill_9_then_rerun_gives_a_clean_runs_outputs(tmp_path: Path, clean, point: str):
    """Killed while ingesting (the first judgment version published), while scoring (the
    first scores folder) or while writing reports (the first report folder)."""
    root = _root(tmp_path)
    process = _start(root, "killed.log")
    _kill_when(process, lambda: (root / "storage" / point).exists(), f"storage/{point}")
    assert _outputs(root / "storage") != clean  # the kill left the outputs incomplete

    code, output = _main(root, "rerun.log")
    assert code == 0, output
    assert _outputs(root / "storage") == clean
    assert _leftovers(root) == []  # no temporary file, staging or scratch folder left
    # Once whole, the next run has nothing to do.
    code, output = _main(root, "again.log")
    assert code == 0 and "nothing new in the landing folder" in output, output


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_stops_the_job_and_a_rerun_resumes(tmp_path: Path, clean, stop):
    """SIGTERM or SIGINT while scoring: the job stops (the interrupted run is not retried,
    nothing more starts), exits 130 (Dagster takes either signal as SIGINT during a run) with
    a message, no traceback; the rerun finishes with a clean run's outputs."""
    root = _root(tmp_path)
    process = _start(root, "stopped.log")
    deadline = time.monotonic() + MAIN_TIMEOUT
    while not (root / "storage" / "scores").exists():
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(stop)
    code, output = _finish(process, root, "stopped.log")
    assert code == 128 + signal.SIGINT, output
    assert "stopped on request (" in output and "Traceback" not in output
    # It names the run it interrupted, or says it came between runs (the interruption lost).
    assert "interrupted (" in output or "came between runs" in output, output
    assert _outputs(root / "storage") != clean  # it did stop: the rest was never run
    code, output = _main(root, "rerun.log")
    assert code == 0, output
    assert _outputs(root / "storage") == clean
    assert _leftovers(root) == []


def test_full_disk_fails_loudly_and_a_rerun_once_space_is_back_completes(tmp_path: Path, clean):
    root = _root(tmp_path)
    full = "reports/pool-2026-11-28/maint-v1/*/report.json"
    code, output = _main(root, "full.log", **{settings.FAIL_WRITE.name: full})
    assert code != 0, output
    assert "No space left on device" in output and "report.json" in output
    assert "gave up after 3 attempts" in output
    assert "pool-2026-11-28 x maint-v1: missing" in output
    code, output = _main(root, "rerun.log")
    assert code == 0, output
    assert _outputs(root / "storage") == clean
    assert _leftovers(root) == []


def test_a_write_that_fails_once_is_retried_within_the_run(tmp_path: Path, clean):
    root = _root(tmp_path)
    code, output = _main(root, "once.log", **{settings.FAIL_WRITE.name: "per_query.parquet:1"})
    assert code == 0, output
    assert _outputs(root / "storage") == clean


def test_two_main_jobs_started_at_once_both_exit_cleanly(tmp_path: Path, clean):
    import dagster as dg

    # Three races of the two start-ups; more with NDCG_EVAL_CONCURRENCY_TRIALS when hunting.
    trials = int(os.environ.get("NDCG_EVAL_CONCURRENCY_TRIALS", "3"))
    for trial in range(trials):
        root = _root(tmp_path / f"trial-{trial}")
        first, second = _start(root, "a.log"), _start(root, "b.log")
        results = [_finish(first, root, "a.log"), _finish(second, root, "b.log")]
        for code, output in results:
            assert code == 0, f"trial {trial}: {output}"
        assert sum("waiting for it to finish" in output for _, output in results) == 1
        assert _outputs(root / "storage") == clean, f"trial {trial}"
        with dg.DagsterInstance.from_config(str(root / "home")) as instance:
            keys = [run.tags["dagster/run_key"] for run in instance.get_runs()]
        assert len(keys) == len(set(keys)), f"trial {trial}: a run key executed twice"
