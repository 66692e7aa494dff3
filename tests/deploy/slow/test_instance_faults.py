"""Faults of the Dagster instance itself, on the real main job: a damaged run history and an
instance folder that cannot be written are named with what to do, not a traceback."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

from tests.support.refusals import assert_names
from tests.support.small_disk import small_disk


def _main_job(home: Path, storage: Path) -> subprocess.CompletedProcess:
    env = os.environ | {"DAGSTER_HOME": str(home), "NDCG_EVAL_STORAGE": str(storage),
                        "NDCG_EVAL_DEV": "1"}
    return subprocess.run([sys.executable, "-m", "evaluation_pipeline.main_job"], env=env,
                          capture_output=True, text=True, timeout=600)


def test_a_damaged_run_history_is_named_and_moving_it_aside_recovers(tmp_path):
    home = tmp_path / "home"
    (home / "history").mkdir(parents=True)
    runs = home / "history" / "runs.db"
    runs.write_text("not a database at all, as a torn copy would be\n")
    done = _main_job(home, tmp_path / "storage")
    assert done.returncode == 1, done.stdout + done.stderr
    # The database, SQLite's own words, and the command that moves its folder aside.
    assert_names(done.stderr, f"sqlite:///{runs}", "(sqlite3.DatabaseError) file is not a database",
                 f"mv {home / 'history'} {home / 'history'}.damaged")
    (home / "history").rename(home / "history.damaged")
    done = _main_job(home, tmp_path / "storage")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_a_read_only_instance_folder_is_named(tmp_path):
    with small_disk(tmp_path / "home", "1m") as home:
        subprocess.run(["mount", "-o", "remount,ro", str(home)], check=True)
        done = _main_job(home, tmp_path / "storage")
    assert done.returncode == 2, done.stderr
    assert_names(done.stderr, str(home), os.strerror(errno.EROFS), str(home / ".ndcg-eval.lock"),
                 "DAGSTER_HOME")
