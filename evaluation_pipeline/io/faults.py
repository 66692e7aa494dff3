"""A write failure on demand, for the fault tests of the pipeline (never set in production).

``NDCG_EVAL_FAIL_WRITE=NAME`` makes every write of a file named NAME by the storage raise
``OSError(ENOSPC)``, as a full disk would; ``NAME:N`` fails only the first N writes of it in the
process. The tests drive the real main job in a subprocess, where no monkeypatch reaches.
"""

from __future__ import annotations

import errno
import os
from collections import Counter
from pathlib import PurePath

FAIL_WRITE_ENV = "NDCG_EVAL_FAIL_WRITE"
_failures: Counter[str] = Counter()


def check_write(path: PurePath) -> None:
    """Raise the injected disk-full error when ``path`` is the file named by the variable."""
    name, _, times = os.environ.get(FAIL_WRITE_ENV, "").partition(":")
    if not name or PurePath(path).name != name:
        return
    if times and _failures[name] >= int(times):
        return
    _failures[name] += 1
    raise OSError(errno.ENOSPC, f"No space left on device (injected by {FAIL_WRITE_ENV})",
                  str(path))
