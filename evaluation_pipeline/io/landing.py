"""The landing folder: where judgment versions and candidate pools arrive.

Layout: ``<landing>/judgments/<version>.<ext>`` (one file per version) and
``<landing>/pools/<pool>/`` (one run file per ranker plus a ``_READY`` marker written last).

Readiness: a pool is ready once its ``_READY`` marker exists; a judgment file is ready once it
has its final name. Writers of judgments write then rename: copy to a hidden name (``.v3.csv``)
or a temporary one (``v3.csv.part``, ``v3.csv.tmp``), which is never read, and rename it to
``v3.csv`` when complete (a rename within a folder is atomic, so no half file is ever seen).
Names become path components, so every name is checked with ``check_safe_name`` and every entry
must resolve inside the landing folder: a symlink that points outside it is refused.

Listing the folder hashes what landed, so that changed content is told from unchanged content.
A ``FileHashes`` carries the hashes of an earlier listing: a file whose size and modification
time are the same is not read again.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from evaluation_pipeline.io.locations import Location, is_remote
from evaluation_pipeline.io.storage import (
    LANDED_JUDGMENTS_FOLDER,
    LANDED_POOLS_FOLDER,
    READY_MARKER,
)
from schemas.errors import EvaluationError
from schemas.names import UnsafeNameError, check_safe_name

JUDGMENT_EXTENSIONS = (".parquet", ".csv", ".qrels", ".txt", ".trec")
RUN_EXTENSIONS = (".parquet", ".pq", ".csv", ".run", ".txt", ".trec", ".qrels")
# A file modified this recently may be written again within the same timestamp tick (coarse on
# many filesystems, 2 s on FAT): its hash is used, but not remembered for the next listing.
SETTLED_NS = 2_000_000_000


class LandingError(EvaluationError):
    """A landing entry that cannot be ingested (unsafe name, outside the folder, missing)."""


class Skipped(str):
    """Why a landing entry was passed over. ``refused`` entries are errors of the landing (an
    unsafe name, a link outside the folder) that the ingest sensor fails its tick on; the others
    are only warned about."""

    refused: bool

    def __new__(cls, reason: str, refused: bool = True) -> Self:
        skipped = super().__new__(cls, reason)
        skipped.refused = refused
        return skipped


def is_regular_file(path: Path) -> bool:
    """True for a regular file (after symlinks). Checked by ``stat`` before any ``open``: opening
    a FIFO blocks until a writer comes, and a directory cannot be read."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


@dataclass(frozen=True)
class LandedItem:
    """One judgment file or pool folder, with a hash of its bytes for change detection."""

    name: str
    path: Path
    files_sha256: str
    mtime_ns: int


def inside(root: Path, path: Path, what: str) -> Path:
    """``path`` resolved, refused when it (or a symlink on the way) leads outside ``root``."""
    resolved = path.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise LandingError(f"{what} {path} is refused: it resolves to {resolved}, outside the "
                           f"landing folder {root}")
    return resolved


def file_sha256(path: Path | Location) -> str:
    """The SHA-256 of the bytes at ``path``: a local file, or an object (read as a stream)."""
    with (path.open("rb") if is_remote(path) else open(path, "rb")) as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


@dataclass(frozen=True)
class FileStamp:
    """A file's size and modification time when it was hashed, and the hash."""

    size: int
    mtime_ns: int
    sha256: str


class FileHashes:
    """SHA-256 of files, read again only when a file's size or modification time changed.

    ``known`` holds the stamps of an earlier listing; ``settled`` collects the stamps worth
    keeping for the next one (every file hashed here, except the ones modified just now).
    """

    def __init__(self, known: Mapping[str, FileStamp] | None = None) -> None:
        self.known = dict(known or {})
        self.settled: dict[str, FileStamp] = {}

    def sha256(self, path: Path) -> str:
        # Stat before reading: a write during the read moves the mtime past this stamp, so the
        # next listing reads the file again.
        stat = path.stat()
        key = str(path)
        stamp = self.known.get(key)
        if stamp is None or (stamp.size, stamp.mtime_ns) != (stat.st_size, stat.st_mtime_ns):
            stamp = FileStamp(stat.st_size, stat.st_mtime_ns, file_sha256(path))
        if time.time_ns() - stat.st_mtime_ns > SETTLED_NS:
            self.settled[key] = stamp
        return stamp.sha256


def _entries(folder: Path) -> list[Path]:
    """A landing subfolder's entries by name, without hidden (``.``) and marker (``_``) ones."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if not p.name.startswith((".", "_")))


def _by_arrival(items: list[LandedItem]) -> list[LandedItem]:
    return sorted(items, key=lambda i: (i.mtime_ns, i.name))


def judgment_files(root: Path, hashes: FileHashes | None = None
                   ) -> tuple[list[LandedItem], list[Skipped]]:
    """Landed judgment versions by arrival (mtime, then name), and why any entry was skipped.

    Only final names count: a hidden name or a temporary suffix (``.part``, ``.tmp``) is a file
    still being written, and has no judgment extension."""
    hashes = hashes if hashes is not None else FileHashes()
    items, skipped = [], []
    seen: dict[str, Path] = {}
    for path in _entries(root / LANDED_JUDGMENTS_FOLDER):
        if path.suffix.lower() not in JUDGMENT_EXTENSIONS:
            continue
        try:
            name = check_safe_name(path.stem, "judgment version")
            resolved = inside(root, path, "judgment file")
            if not is_regular_file(resolved):
                raise LandingError(f"judgment file {path} is not a regular file")
            if name in seen:
                raise LandingError(f"judgment version {name!r} landed twice: {seen[name].name} "
                                   f"and {path.name}; keep one file per version")
        except (UnsafeNameError, LandingError) as exc:
            skipped.append(Skipped(str(exc)))
            continue
        seen[name] = path
        items.append(LandedItem(name, path, hashes.sha256(resolved), resolved.stat().st_mtime_ns))
    return _by_arrival(items), skipped


def judgment_file(root: Path, version: str) -> Path:
    check_safe_name(version, "judgment version")
    folder = root / LANDED_JUDGMENTS_FOLDER
    matches = [p for p in folder.glob(f"{version}.*") if p.suffix.lower() in JUDGMENT_EXTENSIONS]
    if len(matches) != 1:
        found = "no file" if not matches else f"{len(matches)} files"
        raise LandingError(f"judgment version {version!r}: expected one file "
                           f"{folder}/{version}.<parquet|csv|qrels>, found {found}")
    return inside(root, matches[0], "judgment file")


def pool_folders(root: Path, hashes: FileHashes | None = None
                 ) -> tuple[list[LandedItem], list[Skipped]]:
    """Pools whose ``_READY`` marker has landed, by arrival of the marker, and skipped entries
    (refused pools, and entries of a pool that are not regular files)."""
    hashes = hashes if hashes is not None else FileHashes()
    items, skipped = [], []
    for path in _entries(root / LANDED_POOLS_FOLDER):
        if not (path / READY_MARKER).exists():
            continue
        try:
            name = check_safe_name(path.name, "candidate pool")
            files = run_files(root, name)
        except (UnsafeNameError, LandingError) as exc:
            skipped.append(Skipped(str(exc)))
            continue
        skipped += [Skipped(f"{entry} is not a regular file; the pool is read without it",
                            refused=False) for entry in irregular_entries(root, name)]
        digest = hashlib.sha256()
        for run in files:
            digest.update(f"{run.name}\t{hashes.sha256(run)}\n".encode())
        marker = (path / READY_MARKER).stat().st_mtime_ns
        items.append(LandedItem(name, path, digest.hexdigest(), marker))
    return _by_arrival(items), skipped


def is_ready(root: Path, pool: str) -> bool:
    """A pool is ready, and stays active, while its folder and READY_MARKER are landed."""
    return (root / LANDED_POOLS_FOLDER / check_safe_name(pool, "candidate pool")
            / READY_MARKER).exists()


def pool_folder(root: Path, pool: str) -> Path:
    path = root / LANDED_POOLS_FOLDER / pool
    if not is_ready(root, pool):
        raise LandingError(f"candidate pool {pool!r}: {path} has no {READY_MARKER} marker")
    return inside(root, path, "pool folder")


def _pool_entries(root: Path, pool: str) -> list[tuple[Path, Path]]:
    """(entry, resolved) of a ready pool; every entry must resolve inside the landing folder."""
    # Every entry, not only run files: the reader lists the folder by itself.
    return [(path, inside(root, path, "pool entry")) for path in _entries(pool_folder(root, pool))]


def run_files(root: Path, pool: str) -> list[Path]:
    """The run files of a ready pool: regular files with a run extension (a directory or a FIFO
    under a run file's name is passed over, as the reader passes it over)."""
    files = [resolved for path, resolved in _pool_entries(root, pool)
             if path.suffix.lower() in RUN_EXTENSIONS and is_regular_file(resolved)]
    if not files:
        raise LandingError(f"candidate pool {pool!r}: {pool_folder(root, pool)} holds no run "
                           "file")
    return files


def irregular_entries(root: Path, pool: str) -> list[Path]:
    """Entries of a ready pool under a run file's name that are not regular files."""
    return [path for path, resolved in _pool_entries(root, pool)
            if path.suffix.lower() in RUN_EXTENSIONS and not is_regular_file(resolved)]
