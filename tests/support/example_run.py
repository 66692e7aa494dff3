"""One clean main job on the example landing (two judgment versions x two pools), shared by the
test files that compare their own runs against it (recovery, PostgreSQL, Spark).

The main job in a subprocess is most of the suite's time, and these files each ran the same
clean run for their reference. Under xdist the workers share the session's temporary root: the
first file to ask runs the job under an exclusive lock there, and every later one, on any
worker, reads its storage. Nobody writes to that storage afterwards.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.paths import EXAMPLES, REPO

MAIN_TIMEOUT = 900


def _shared_root(tmp_path_factory) -> Path:
    base = tmp_path_factory.getbasetemp()
    # A worker's base is <session root>/popen-gwN; alone, the base is the session root.
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def example_storage(tmp_path_factory) -> Path:
    """The storage of a clean main job on a copy of the example landing and queries table,
    with a fresh Dagster home: run once per test session, then read."""
    root = _shared_root(tmp_path_factory) / "example-run"
    root.mkdir(exist_ok=True)
    done = root / "done"
    with open(root.parent / "example-run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            _run(root)
            done.touch()
    return root / "storage"


def _run(root: Path) -> None:
    for leftover in ("landing", "storage", "home"):  # of a run that failed before
        shutil.rmtree(root / leftover, ignore_errors=True)
    shutil.copytree(EXAMPLES / "landing", root / "landing")
    shutil.copy(EXAMPLES / "queries.csv", root / "queries.csv")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("NDCG_EVAL_", "DAGSTER_"))} | {
        "NDCG_EVAL_LANDING": str(root / "landing"),
        "NDCG_EVAL_STORAGE": str(root / "storage"),
        "NDCG_EVAL_QUERIES": str(root / "queries.csv"),
        "DAGSTER_HOME": str(root / "home"),
        "PYTHONPATH": str(REPO),
    }
    run = subprocess.run([sys.executable, "-m", "evaluation_pipeline.main_job"], cwd=root,
                         env=env, capture_output=True, text=True, timeout=MAIN_TIMEOUT)
    output = run.stdout + run.stderr
    assert run.returncode == 0 and "FAILED" not in run.stdout, output[-4000:]
