"""Named helper threads for the compiled loops, which release the GIL: one second core's
worth of work handed off by the step that has it (ordering documents, hashing lines)."""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor


@functools.cache
def helper(name: str) -> ThreadPoolExecutor:
    """One worker thread per name, started on first use and kept for the process. Each name
    has its own, so that steps running at the same time do not queue behind each other."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
