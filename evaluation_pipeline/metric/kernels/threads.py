"""Named helper threads for the compiled loops, which release the GIL: one second core's
worth of work handed off by the step that has it (ordering documents, hashing lines)."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_helpers: dict[tuple[int, str], ThreadPoolExecutor] = {}
_lock = threading.Lock()


def helper(name: str) -> ThreadPoolExecutor:
    """One worker thread per name, started on first use and kept for the process. Each name
    has its own, so that steps running at the same time do not queue behind each other.

    Keyed by process id too: a forked child (a multiprocess run launcher) inherits the
    executor but not its thread, and would wait forever on work submitted to it."""
    key = (os.getpid(), name)
    with _lock:
        if key not in _helpers:
            _helpers[key] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        return _helpers[key]
