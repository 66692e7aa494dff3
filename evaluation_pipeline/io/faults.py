"""A write failure on demand, for the fault tests of the pipeline (never set in production).

``NDCG_EVAL_FAIL_WRITE=PATTERN`` makes every write by the storage of a file whose path matches
PATTERN from the right (``PurePath.match``: ``report.json``, ``maint-v1/*/report.json``) raise
``OSError(ENOSPC)``, as a full disk would; ``PATTERN:N`` fails only the first N such writes in
the process. The tests drive the real main job in a subprocess, where no monkeypatch reaches.
"""

from __future__ import annotations

import errno
from collections import Counter
from pathlib import PurePath

from evaluation_pipeline import settings

_failures: Counter[str] = Counter()


def check_write(path: PurePath) -> None:
    """Raise the injected disk-full error when ``path`` matches the variable's pattern."""
    pattern, _, times = (settings.FAIL_WRITE.get() or "").partition(":")
    if not pattern or not PurePath(path).match(pattern):
        return
    if times and _failures[pattern] >= int(times):
        return
    _failures[pattern] += 1
    raise OSError(errno.ENOSPC, f"No space left on device (injected by {settings.FAIL_WRITE.name})",
                  str(path))
