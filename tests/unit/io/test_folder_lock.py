"""The exclusive lock of a folder (io.lock.folder_lock) between processes: the waiter names the
holder by the pid it wrote, a killed holder's lock is free at once, and a failed write of the
holder's record names the lock file."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time

import pytest

from evaluation_pipeline.io import lock
from evaluation_pipeline.io.lock import LOCK_FILE, LockTimeout, folder_lock
from tests.support.refusals import assert_names

HOLD = """
import sys, time
from pathlib import Path
from evaluation_pipeline.io.lock import folder_lock
with folder_lock(Path(sys.argv[1]), timeout=5):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def holder(tmp_path):
    """Another process that holds the lock of ``tmp_path`` until it is killed."""
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline() == "held\n"
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_waiter_names_the_holder_process_and_gives_up_at_its_timeout(tmp_path, holder):
    waited = []
    started = time.monotonic()
    with pytest.raises(LockTimeout) as timed_out:
        with folder_lock(tmp_path, timeout=0.4, on_wait=waited.append):
            pass
    assert_names(timed_out, str(tmp_path), "0.4 s")  # the folder, and the time it waited
    assert time.monotonic() - started >= 0.4
    assert waited == [f"pid {holder.pid}"]


def test_a_killed_holders_lock_is_free_at_once(tmp_path, holder):
    holder.kill()
    holder.wait()
    waited = []
    with folder_lock(tmp_path, timeout=0.4, on_wait=waited.append):
        assert (tmp_path / LOCK_FILE).read_text() == f"pid {os.getpid()}\n"
    assert waited == []


def test_the_holder_record_replaces_a_longer_one_whole(tmp_path):
    (tmp_path / LOCK_FILE).write_text("pid 4194304000\nleft by an older writer\n")
    with folder_lock(tmp_path, timeout=0.4):
        assert (tmp_path / LOCK_FILE).read_text() == f"pid {os.getpid()}\n"


def test_a_record_that_cannot_be_written_names_the_lock_file_and_frees_the_lock(
        tmp_path, monkeypatch):
    def full(descriptor, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(lock.os, "pwrite", full)
        with pytest.raises(OSError) as raised:
            with folder_lock(tmp_path, timeout=0.4):
                pass
    assert (raised.value.errno, raised.value.filename) == (errno.ENOSPC,
                                                             str(tmp_path / LOCK_FILE))
    with folder_lock(tmp_path, timeout=0.4, on_wait=pytest.fail):
        pass
