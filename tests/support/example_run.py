"""Main jobs that several test files need alike, run once per version of the code.

- ``example_storage``: a clean main job on the example landing (two judgment versions x two
  pools), the reference the recovery, PostgreSQL and Spark files compare their own runs to.
  Nobody writes to that storage afterwards.
- ``example_week``: `make run`'s main job (the nightly week, landed night by night) on a fresh
  instance, for the Dagster UI's tests and the hint `make run` prints.

The main job in a subprocess is most of the suite's time, and these files each ran the same
job. Its outputs depend only on the code, the example data and the installed packages, so a
run is kept in a cache folder keyed by them (``tests.support.cache``): the first test to ask,
in any worker or session, runs the job there under an exclusive lock, and every later one
reads what it left. A change to the code is a new key, hence a new run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from evaluation_pipeline.main_job import INSTANCE_YAML
from tests.support.cache import built_once
from tests.support.paths import EXAMPLES, REPO
from tests.support.spark_session import LOCAL_SPARK_ENV

MAIN_TIMEOUT = 900


@dataclass(frozen=True)
class Week:
    home: Path  # the Dagster instance's folder
    storage: Path
    stdout: str  # what the main job printed


# ``tmp_path_factory`` is unused: the runs live in the cache, not in the session's folder. It
# stays a parameter so that the files calling these keep their calls.
def example_storage(tmp_path_factory=None) -> Path:
    """The storage of a clean main job on a copy of the example landing and queries table,
    with a fresh Dagster home. Read it; never write to it."""
    def landing(root: Path) -> None:
        shutil.copytree(EXAMPLES / "landing", root / "landing")
        shutil.copy(EXAMPLES / "queries.csv", root / "queries.csv")
        _run(root, {"NDCG_EVAL_LANDING": str(root / "landing"),
                    "NDCG_EVAL_QUERIES": str(root / "queries.csv")}, cwd=root)

    return built_once("example-run", landing) / "storage"


def example_week(tmp_path_factory=None, engine: str | None = None) -> Week:
    """`make run`'s main job (no landing named: the example week, night by night) on a fresh
    instance with `make run`'s dagster.yaml, run from the checkout; ``engine`` names the scoring
    engine (``NDCG_EVAL_ENGINE``; spark on ``local[2]``), else the default's. Read it; never
    write to it."""
    given = {"NDCG_EVAL_DEV": "1"} | (LOCAL_SPARK_ENV if engine == "spark" else
                                      {"NDCG_EVAL_ENGINE": engine} if engine else {})

    def instance(root: Path) -> None:
        (root / "home").mkdir()
        (root / "home" / "dagster.yaml").write_text(INSTANCE_YAML)
        _run(root, given, cwd=REPO)

    root = built_once(f"example-week-{engine}" if engine else "example-week", instance)
    return Week(root / "home", root / "storage", (root / "stdout").read_text())


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
