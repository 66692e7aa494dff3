"""One Dagster instance, two storages: what is done is done for the storage it was written to.

The real main job in a subprocess, on the bundled landing (two judgment versions, two pools):
switching ``NDCG_EVAL_STORAGE`` on the same ``DAGSTER_HOME`` publishes and evaluates everything
in the new storage, and back again; and the main job never exits 0 while the landing holds an
input that its storage lacks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from evaluation_pipeline import settings
from tests.support.paths import EXAMPLES, REPO

MAIN_TIMEOUT = 900
EVALUATIONS = 4  # 2 judgment versions x 2 pools


def main_job(root: Path, storage: Path) -> tuple[int, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("NDCG_EVAL_")} | {
        settings.LANDING.name: str(root / "landing"),
        settings.QUERIES.name: str(root / "queries.csv"),
        settings.STORAGE.name: str(storage),
        "DAGSTER_HOME": str(root / "home"),
        "PYTHONPATH": str(REPO),
    }
    done = subprocess.run([sys.executable, "-m", "evaluation_pipeline.main_job"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=MAIN_TIMEOUT)
    return done.returncode, done.stdout + done.stderr


def reports(storage: Path) -> list[str]:
    return sorted(str(p.parent.relative_to(storage)) for p in storage.rglob("report.json"))


def landed(root: Path) -> Path:
    shutil.copytree(EXAMPLES / "landing", root / "landing")
    shutil.copy(EXAMPLES / "queries.csv", root / "queries.csv")
    return root


def test_switching_the_storage_of_one_instance_evaluates_everything_in_each(tmp_path: Path):
    root = landed(tmp_path)
    first, second = tmp_path / "first", tmp_path / "second"
    code, output = main_job(root, first)
    assert code == 0, output
    assert len(reports(first)) == EVALUATIONS
    code, output = main_job(root, second)  # the same content, already ingested elsewhere
    assert code == 0, output
    assert reports(second) == reports(first)
    for storage in (first, second):
        assert (storage / "queries" / "manifest.json").is_file()
        assert len(list((storage / "judgments").glob("*/manifest.json"))) == 2
    code, output = main_job(root, first)  # back: nothing new, everything still whole
    assert code == 0, output
    assert "nothing new in the landing folder" in output
    assert len(reports(first)) == EVALUATIONS


def test_the_main_job_exits_1_naming_what_the_storage_lacks(tmp_path: Path):
    root = landed(tmp_path)
    storage = tmp_path / "storage"
    code, output = main_job(root, storage)
    assert code == 0, output
    # The instance remembers this pool as ingested into this storage; the storage lost it.
    (pool,) = [p for p in (storage / "pools").iterdir() if p.name.endswith("11-29")]
    shutil.rmtree(pool)
    code, output = main_job(root, storage)
    assert code == 1, output
    assert "landed input(s) are not published in" in output
    assert f"pool {pool.name} ({root / 'landing' / 'pools' / pool.name})" in output
