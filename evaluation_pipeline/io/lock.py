"""An exclusive lock on a folder, held for as long as a process works in it.

``fcntl.flock`` on a lock file inside the folder: the kernel releases it when the holder exits,
also when it is killed, so a crash never leaves a stale lock behind (unlike a pid file).
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = ".ndcg-eval.lock"
POLL_SECONDS = 0.2


class LockTimeout(TimeoutError):
    """Another process held the lock for longer than the caller would wait."""


@contextmanager
def folder_lock(folder: Path, timeout: float,
                on_wait: Callable[[str], None] = lambda holder: None) -> Iterator[Path]:
    """Hold the exclusive lock of ``folder``; wait up to ``timeout`` seconds for it.

    ``on_wait(holder)`` is called once when the lock is taken, with what the holder wrote (its
    pid); on timeout ``LockTimeout`` is raised."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_FILE
    with open(path, "a+", encoding="utf-8") as handle:
        deadline = time.monotonic() + timeout
        waited = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waited:
                    handle.seek(0)
                    on_wait(handle.read().strip() or "another process")
                    waited = True
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"{folder} is still locked after {timeout:g} s") from None
                time.sleep(POLL_SECONDS)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        try:
            yield path
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
