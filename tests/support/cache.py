"""A folder of test inputs that are costly to build (a main job, the example week), kept
between test sessions and keyed by what they are built from.

The key hashes the tracked and new files of the package, the table models, the examples and
pyproject.toml, with the interpreter's version and every installed distribution's; a build's
folder is named by it and by the file that defines the build. A change to any of them is a
new folder, so a stale build is never read. The cache is on disk
(``$XDG_CACHE_HOME`` or ``~/.cache``, ``ndcg-eval-tests/<key>/``), not under the tests' memory
backed TMPDIR, which would hold it in RAM until a reboot; keys unused for two days are removed
when another is built.

Each build runs under an exclusive file lock: two xdist workers, or two sessions in the same
checkout, build it once and the later ones wait, then read it. A build that failed leaves no
``done`` mark and is built again from scratch on the next request.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from functools import cache
from importlib import metadata
from pathlib import Path

from tests.support.paths import REPO

# What the builds are made of (paths in the checkout).
SOURCES = ("evaluation_pipeline", "schemas", "examples", "pyproject.toml")
KEEP_SECONDS = 2 * 24 * 3600
DONE = "done"


def cache_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ndcg-eval-tests"


@cache
def code_key() -> str:
    """A hash of the sources' bytes, the interpreter and the installed distributions."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *SOURCES],
        cwd=REPO, check=True, capture_output=True).stdout.decode().split("\0")
    digest = hashlib.sha256(sys.version.encode())
    for name in sorted(filter(None, listed)):
        path = REPO / name
        if path.is_file():  # not a file deleted in the working tree
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    installed = sorted(f"{dist.metadata['Name']}=={dist.version}"
                       for dist in metadata.distributions())
    digest.update("\n".join(installed).encode())
    return digest.hexdigest()[:16]


def built_once(name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``name`` of this code's key, which ``build`` fills (it is given the empty
    folder) unless an earlier build of the same code and the same ``build`` finished."""
    key_folder = cache_home() / code_key()
    key_folder.mkdir(parents=True, exist_ok=True)
    builder = Path(build.__code__.co_filename).read_bytes()
    name = f"{name}-{hashlib.sha256(builder).hexdigest()[:8]}"
    root = key_folder / name
    with open(key_folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / DONE).exists():
            _remove_stale_keys(key_folder)
            _remove(root)  # what a build that failed before left
            root.mkdir()
            build(root)
            (root / DONE).touch()
    os.utime(key_folder)  # last used: kept while in use
    return root


def _remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def _remove_stale_keys(current: Path) -> None:
    for folder in current.parent.iterdir():
        if (folder.is_dir() and folder != current
                and time.time() - folder.stat().st_mtime > KEEP_SECONDS):
            _remove(folder)
