"""The main job's words for an instance folder it may not use (a lock file another user
owns: this process may not open it), without a traceback."""

from __future__ import annotations

import errno
import os

import pytest

from evaluation_pipeline import main_job
from tests.support.refusals import assert_names


def test_a_lock_file_of_another_user_is_named_with_what_to_do(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    lock = home / ".ndcg-eval.lock"

    def refused(folder, timeout, on_wait):
        raise PermissionError(errno.EACCES, "Permission denied", str(lock))

    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setattr(main_job, "folder_lock", refused)
    assert main_job.main() == 2
    # The folder, what the system said of which file, and the variable that moves it.
    assert_names(capsys.readouterr().err, str(home), os.strerror(errno.EACCES), str(lock),
                 "DAGSTER_HOME")


def test_an_os_error_elsewhere_is_not_dressed_as_the_instances(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))

    def elsewhere(folder, timeout, on_wait):
        raise PermissionError(errno.EACCES, "Permission denied", "/somewhere/else")

    monkeypatch.setattr(main_job, "folder_lock", elsewhere)
    with pytest.raises(PermissionError):  # not reworded as the instance folder's
        main_job.main()
