"""Temporary files and scratch folders: held while their writer lives, removed by the next run.

Every temporary file (``.<name>.<id>.tmp``, ``io.atomic``) and every scratch or staging folder
of this project is created where the next run looks (beside its target, or under the storage's
``.staging/`` folder) and is held under an exclusive ``flock`` for as long as its writer works
on it. The kernel drops the lock when the writer exits, also on ``kill -9``, so a leftover is
exactly an entry of ours whose lock can be taken: ``sweep`` removes those, and never one that a
live process still writes. (A pid in the name would do the same until pids are reused.)
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

TMP_SUFFIX = ".tmp"
# Folders of a result being built beside it, and of the result it replaces (io.result_set).
STAGING_MARK = ".staging-"
PREVIOUS_MARK = ".previous-"
# Scratch folders: the streaming engine's, and every other one of this project; hidden
# (".ndcg-...") beside outputs and in the storage, where a name of the user's may begin alike.
SCRATCH_PREFIXES = ("ndcg-stream-", "ndcg-eval-")
# An entry younger than this may be one whose creator has not locked it yet (the lock is taken
# just after the name is made): a sweep waits until it is this old and asks again.
MIN_AGE_SECONDS = 1.0

_OURS = re.compile(
    rf"^\.(.+\.[0-9a-z_]+{re.escape(TMP_SUFFIX)}|.+{re.escape(STAGING_MARK)}[0-9a-f]+"
    rf"|.+{re.escape(PREVIOUS_MARK)}[0-9a-f]+|(?:{'|'.join(map(re.escape, SCRATCH_PREFIXES))}).+)$")


def is_ours(name: str) -> bool:
    """True for the (hidden) name of a temporary file, a staging or previous folder, or a
    scratch folder beside an output or in the storage."""
    return bool(_OURS.match(name))


def hold(path: Path) -> int:
    """Lock ``path`` (a file or a folder) as in use; the descriptor to close when done."""
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


@contextmanager
def scratch_folder(prefix: str, parent: Path | None = None) -> Iterator[Path]:
    """A new folder ``<prefix><id>`` in ``parent`` (the system's temporary folder unless
    given), held while the block runs and removed after it; created with the permissions of
    normal folder creation (the umask), since a staging folder may become a result."""
    parent = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    folder = parent / f"{prefix}{uuid.uuid4().hex[:12]}"
    os.mkdir(folder)
    fd = hold(folder)
    try:
        yield folder
    finally:
        os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)


def is_held(path: Path) -> bool:
    """True while a live process holds ``path`` (or when it cannot be opened to tell)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the lock just taken
    return False


def abandoned(path: Path, now: float | None = None) -> bool:
    """True for an entry of ours that no live process holds (and is not brand new)."""
    age = _age(path, now)
    return age is not None and age >= MIN_AGE_SECONDS and not _held(path)


def _age(path: Path, now: float | None = None) -> float | None:
    try:
        return (now or time.time()) - path.lstat().st_mtime
    except FileNotFoundError:
        return None


def _held(path: Path) -> bool:
    return path.is_symlink() or is_held(path)


def abandoned_entries(entries: Iterable[Path]) -> list[Path]:
    """The entries no live process holds. One that is brand new and unheld is asked again
    once it is MIN_AGE_SECONDS old: its creator may be between making the name and locking
    it, or it may be what a writer killed a moment ago left (the next run starts within a
    second of a kill -9, and skipping it then would leave it for good)."""
    found, young = [], {}
    for entry in entries:
        age = _age(entry)
        if age is None or _held(entry):
            continue
        if age >= MIN_AGE_SECONDS:
            found.append(entry)
        else:
            young[entry] = age
    if young:
        # Until the youngest is old enough.
        time.sleep(MIN_AGE_SECONDS - min(young.values()) + 0.01)
        found += [entry for entry in young if abandoned(entry)]
    return sorted(found)


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def sweep(folders: Iterable[Path], recursive: bool = False) -> list[Path]:
    """Remove every abandoned entry of ours in ``folders`` (their trees with ``recursive``);
    returns what was removed. A result's previous folder is not swept here: it may be the only
    copy of a result whose swap was killed (``io.result_set.recover`` restores or removes it)."""
    candidates = []
    for folder in folders:
        if not Path(folder).is_dir():
            continue
        entries = Path(folder).rglob(".*") if recursive else Path(folder).glob(".*")
        candidates += [entry for entry in sorted(entries)
                       if is_ours(entry.name) and PREVIOUS_MARK not in entry.name]
    found = abandoned_entries(candidates)
    # An abandoned folder goes whole: what it holds is not listed again.
    folders_found = set(found)
    removed = [entry for entry in found if folders_found.isdisjoint(entry.parents)]
    for entry in removed:
        remove(entry)
    return removed


def sweep_scratch(root: Path | None = None) -> list[Path]:
    """Remove the abandoned scratch folders of this project in ``root``: the system's
    temporary folder unless given (where writes to object storage stage, since their staging
    cannot be beside their target), or a spill folder (a sort's scratch, named without a
    leading dot, which the storage's sweep of hidden names does not see)."""
    root = Path(root) if root is not None else Path(tempfile.gettempdir())
    try:
        entries = sorted(p for p in root.iterdir()
                         if p.name.startswith(SCRATCH_PREFIXES) and p.is_dir())
    except OSError:
        return []
    removed = abandoned_entries(entries)
    for entry in removed:
        remove(entry)
    return removed
