"""The main job's words for an instance folder it may not use (a lock file another user
owns: this process may not open it), without a traceback."""

from __future__ import annotations

import errno

import pytest

from evaluation_pipeline import main_job


def test_a_lock_file_of_another_user_is_named_with_what_to_do(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    lock = home / ".ndcg-eval.lock"

    def refused(folder, timeout, on_wait):
        raise PermissionError(errno.EACCES, "Permission denied", str(lock))

    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setattr(main_job, "folder_lock", refused)
    assert main_job.main() == 2
    err = capsys.readouterr().err
    assert (f"cannot use the Dagster instance folder {home}: Permission denied: {lock}. "
            "DAGSTER_HOME must be a folder this user can write") in err


def test_an_os_error_elsewhere_is_not_dressed_as_the_instances(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))

    def elsewhere(folder, timeout, on_wait):
        raise PermissionError(errno.EACCES, "Permission denied", "/somewhere/else")

    monkeypatch.setattr(main_job, "folder_lock", elsewhere)
    with pytest.raises(PermissionError):  # not reworded as the instance folder's
        main_job.main()
