"""What the main job advises when a SQLite instance's database fails: for a damaged file, to
move aside the part of the instance that file belongs to and nothing more; for a full disk, to
free space where the instance folder is, never a server's advice."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation_pipeline import main_job, settings
from evaluation_pipeline.orchestration.liveness import damaged_part, failure_message
from tests.support.refusals import assert_names
from tests.support.small_disk import small_disk

# Dagster's SQLite instance (dagster._core.storage.sqlite_storage): each database file of a
# fresh instance, and the folder that moving it aside takes with it.
FRESH_FILES = {
    "history/runs.db": "history",  # the runs; their event logs are below it
    "history/runs/index.db": "history/runs",  # the event logs' index: asset records
    "schedules/schedules.db": "schedules",  # the schedules' and sensors' state
}


def _fresh_instance(home: Path) -> Path:
    import dagster as dg

    main_job.prepare_instance_home(home)
    with dg.DagsterInstance.from_config(str(home)):
        pass  # creates every database file of the instance
    for part in FRESH_FILES:
        assert (home / part).is_file(), f"Dagster's layout changed: no {part}"
    return home


def _main_job(home: Path, storage: Path, monkeypatch) -> int:
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv(settings.STORAGE.name, str(storage))
    return main_job.main()


@pytest.mark.parametrize("damaged", sorted(FRESH_FILES))
def test_a_damaged_file_is_named_with_only_its_own_folder_to_move_aside(
        damaged, tmp_path, monkeypatch, capsys):
    home = _fresh_instance(tmp_path / "home")
    (home / damaged).write_bytes(b"not a database at all, as a torn copy would be\n" * 50)
    assert _main_job(home, tmp_path / "storage", monkeypatch) == 1
    err = capsys.readouterr().err
    folder = home / FRESH_FILES[damaged]
    # The database, and the command that moves its part aside, pasted as it is printed.
    assert_names(err, f"sqlite:///{home / damaged}", f"mv {folder} {folder}.damaged")
    for other in set(FRESH_FILES.values()) - {FRESH_FILES[damaged]}:
        assert f"mv {home / other} " not in err, err
    assert "DAGSTER_PG" not in err and "Traceback" not in err


def test_a_runs_own_event_log_is_moved_alone(tmp_path):
    """Its folder holds every run's event log: only the file itself is moved aside."""
    shard = tmp_path / "history" / "runs" / "0b7c7a4e-5f0e-4a43-9e26-1f3d1c2b9a10.db"
    aside, _ = damaged_part(shard, tmp_path)
    assert aside == shard
    message = failure_message("(sqlite3.DatabaseError) file is not a database",
                              f"sqlite:///{shard}", tmp_path)
    assert f"mv {shard.parent} " not in message


def test_a_full_disk_under_a_sqlite_instance_is_named_with_its_folder(tmp_path, monkeypatch,
                                                                      capsys):
    """The disk fills while the main job runs: SQLite says "database or disk is full"."""
    with small_disk(tmp_path / "home", "1m") as home:
        code = _main_job(home, tmp_path / "storage", monkeypatch)
    err = capsys.readouterr().err
    assert code == 1, err
    assert_names(err, f"df -h {home}")  # the command that shows the disk to free space on
    assert "DAGSTER_PG" not in err


def test_a_disk_full_before_the_run_is_named_with_its_folder(tmp_path, monkeypatch, capsys):
    """A disk already full when the main job starts: SQLite's words are then "disk I/O
    error" (its WAL index cannot grow), and the disk's free space tells what it is."""
    with small_disk(tmp_path / "home", "1m") as home:
        _fresh_instance(home)
        (home / ".ndcg-eval.lock").write_text("pid 1\n")  # the lock's page is there already
        _fill(home / "filler")
        code = _main_job(home, tmp_path / "storage", monkeypatch)
    err = capsys.readouterr().err
    assert code == 1, err
    assert_names(err, f"df -h {home}")
    assert "DAGSTER_PG" not in err


def _fill(path: Path) -> None:
    with open(path, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError:
            pass  # full


def test_a_server_that_is_full_or_down_gets_the_servers_advice(tmp_path):
    server = "postgresql://db.internal:5432/dagster"
    full = failure_message("(psycopg2.errors.DiskFull) could not extend file", server, tmp_path)
    assert_names(full, server)  # the server's disk: nothing in the instance folder to free
    assert "DAGSTER_PG" not in full and "df -h" not in full
    down = failure_message("too many retries", server, tmp_path)
    assert_names(down, server, "DAGSTER_PG_*")  # the settings that name the server


def test_a_disk_full_before_the_instance_exists_is_named_with_its_folder(tmp_path, monkeypatch,
                                                                         capsys):
    """The lock file or dagster.yaml cannot be written: a full disk, not a permission to fix."""
    with small_disk(tmp_path / "home", "1m") as home:
        _fill(home / "filler")
        code = _main_job(home, tmp_path / "storage", monkeypatch)
    err = capsys.readouterr().err
    assert code == 1, err
    assert_names(err, f"df -h {home}")
    assert "permissions" not in err, err
