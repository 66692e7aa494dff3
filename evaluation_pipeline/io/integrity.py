"""Stamps of published files: size, modification time and SHA-256 of the bytes, taken at publish.

Every run checks that the published inputs behind the reports are still what was published. The
check is cheap: a file whose size and mtime equal its stamp is taken as unchanged; only a file
whose size or mtime moved is read and hashed (a file restored byte for byte passes).

Results the pipeline writes and reads back later (a version's per-query scores, which the next
version's increment and the report start from) are stamped the same way when written, and
hashed again before they are trusted (``dataset_stamp``, ``dataset_alteration``).
"""

from __future__ import annotations

from pathlib import Path

from evaluation_pipeline.io.datasets import NoDataFiles, data_files
from evaluation_pipeline.io.landing import file_sha256
from evaluation_pipeline.io.locations import Location


def stamp(path: Path, content_sha256: str) -> dict:
    """The stamp of a file just published with content hash ``content_sha256``, for its
    manifest."""
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": file_sha256(path),
            "content_sha256": content_sha256}


def same_bytes(path: Path, recorded: dict, content_sha256: str) -> bool:
    """The file at ``path`` holds, byte for byte, what was stamped ``recorded`` when it was
    published with content hash ``content_sha256`` (its bytes hashed again: size and mtime
    are not proof enough for a blocking check). Stamps taken before stamps named their
    content hash prove nothing."""
    if recorded.get("content_sha256") != content_sha256:
        return False
    try:
        return path.stat().st_size == recorded["size"] and file_sha256(path) == recorded["sha256"]
    except FileNotFoundError:
        return False


def alteration(path: Path, recorded: dict) -> str | None:
    """Why the file at ``path`` is no longer the one stamped ``recorded``, or None when it is."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return f"{path} is missing"
    if (stat.st_size, stat.st_mtime_ns) == (recorded["size"], recorded["mtime_ns"]):
        return None
    if stat.st_size != recorded["size"]:
        return f"{path} has {stat.st_size} bytes; {recorded['size']} were published"
    if file_sha256(path) != recorded["sha256"]:
        return f"{path} has other bytes than were published (sha256 {recorded['sha256']})"
    return None


# -- results written once and read back (a per-query scores file, or Spark's folder of parts) --


def dataset_stamp(where: Path) -> dict:
    """The stamp of a result just written at ``where``: each of its data files' name (relative
    to ``where``; a single file: its own), size and SHA-256, in name order. Only data files are
    stamped: a writer's markers and checksums (``io.datasets``) are not what a reader reads."""
    return {"files": [{"name": _name_in(where, part), "size": part.stat().st_size,
                       "sha256": file_sha256(part)} for part in data_files(where)]}


def dataset_alteration(where: Path, recorded: dict | None) -> str | None:
    """Why the result at ``where`` does not hold the bytes stamped ``recorded`` (every data
    file hashed again: this is the proof a reader relies on), or None when it does. No stamp
    proves nothing."""
    if not recorded or not isinstance(recorded.get("files"), list):
        return f"{where} has no stamp of its bytes (it was written before stamps were kept)"
    try:
        parts = data_files(where)
    except (FileNotFoundError, NoDataFiles):
        return f"{where} is missing"
    found = {_name_in(where, part): part for part in parts}
    expected = {entry["name"]: entry for entry in recorded["files"]}
    if set(found) != set(expected):
        return (f"{where} holds the files {sorted(found)}; {sorted(expected)} were written")
    for name, entry in expected.items():
        part = found[name]
        size = part.stat().st_size
        if size != entry["size"]:
            return f"{part} has {size} bytes; {entry['size']} were written"
        if file_sha256(part) != entry["sha256"]:
            return f"{part} has other bytes than were written (sha256 {entry['sha256']})"
    return None


def _name_in(where: Path, part: Path) -> str:
    return part.name if part == where else part.relative_to(where).as_posix()


# -- a file the pipeline rewrites in place (the evaluation history) ---------------------------


def rewrite_stamp(current: str | None, new: str) -> dict:
    """The stamp written just before a file is replaced: both its current bytes' hash and the
    new bytes', so a run killed between the stamp and the file leaves a file it still
    proves (the old bytes or the new, never a false alarm)."""
    return {"sha256": [digest for digest in (current, new) if digest is not None]}


def rewrite_alteration(where: Location, recorded: dict | None, digest: str) -> str | None:
    """Why the file at ``where``, whose bytes hash to ``digest``, is not one its writer
    stamped ``recorded`` (``rewrite_stamp``), or None when it is. A file written before stamps
    were kept (no stamp) is taken as it is, once: its next rewrite stamps it."""
    if recorded is None or digest in recorded.get("sha256", ()):
        return None
    return (f"{where} has other bytes (sha256 {digest[:12]}) than the pipeline wrote "
            f"({', '.join(d[:12] for d in recorded['sha256'])})")
