"""Main jobs that several test files need alike, run once per test session.

- ``example_storage``: a clean main job on the example landing (two judgment versions x two
  pools), the reference the recovery, PostgreSQL and Spark files compare their own runs to.
  Nobody writes to that storage afterwards.
- ``example_week``: `make run`'s main job (the nightly week, landed night by night) on a fresh
  instance, for the Dagster UI's tests and the hint `make run` prints.

The main job in a subprocess is most of the suite's time, and these files each ran the same
job. Under xdist the workers share the session's temporary root: the first file to ask runs the
job under an exclusive lock there, and every later one, on any worker, reads what it left.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from evaluation_pipeline.main_job import INSTANCE_YAML
from tests.support.paths import EXAMPLES, REPO

MAIN_TIMEOUT = 900


def _shared_root(tmp_path_factory) -> Path:
    base = tmp_path_factory.getbasetemp()
    # A worker's base is <session root>/popen-gwN; alone, the base is the session root.
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@dataclass(frozen=True)
class Week:
    home: Path  # the Dagster instance's folder
    storage: Path
    stdout: str  # what the main job printed


def example_storage(tmp_path_factory) -> Path:
    """The storage of a clean main job on a copy of the example landing and queries table,
    with a fresh Dagster home: run once per test session, then read."""
    def landing(root: Path) -> dict[str, str]:
        shutil.copytree(EXAMPLES / "landing", root / "landing")
        shutil.copy(EXAMPLES / "queries.csv", root / "queries.csv")
        return {"NDCG_EVAL_LANDING": str(root / "landing"),
                "NDCG_EVAL_QUERIES": str(root / "queries.csv")}

    return _once(tmp_path_factory, "example-run", landing) / "storage"


def example_week(tmp_path_factory) -> Week:
    """`make run`'s main job (no landing named: the example week, night by night) on a fresh
    instance with `make run`'s dagster.yaml, run from the checkout once per test session."""
    def instance(root: Path) -> dict[str, str]:
        (root / "home").mkdir()
        (root / "home" / "dagster.yaml").write_text(INSTANCE_YAML)
        return {"NDCG_EVAL_DEV": "1"}

    root = _once(tmp_path_factory, "example-week", instance, cwd=REPO)
    return Week(root / "home", root / "storage", (root / "stdout").read_text())


def _once(tmp_path_factory, name: str, prepare, cwd: Path | None = None) -> Path:
    """The folder of the main job ``name``, run there unless a run of this session did."""
    root = _shared_root(tmp_path_factory) / name
    with open(root.parent / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "done").exists():
            shutil.rmtree(root, ignore_errors=True)  # what a run that failed before left
            root.mkdir()
            _run(root, prepare(root), cwd or root)
            (root / "done").touch()
    return root


def _run(root: Path, given: dict[str, str], cwd: Path) -> None:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("NDCG_EVAL_", "DAGSTER_"))} | {
        "NDCG_EVAL_STORAGE": str(root / "storage"),
        "DAGSTER_HOME": str(root / "home"),
        "PYTHONPATH": str(REPO),
    } | given
    run = subprocess.run([sys.executable, "-m", "evaluation_pipeline.main_job"], cwd=cwd,
                         env=env, capture_output=True, text=True, timeout=MAIN_TIMEOUT)
    output = run.stdout + run.stderr
    assert run.returncode == 0 and "FAILED" not in run.stdout, output[-4000:]
    (root / "stdout").write_text(run.stdout)
