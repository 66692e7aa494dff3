"""Stamps of published files: size, modification time and SHA-256 of the bytes, taken at publish.

Every run checks that the published inputs behind the reports are still what was published. The
check is cheap: a file whose size and mtime equal its stamp is taken as unchanged; only a file
whose size or mtime moved is read and hashed (a file restored byte for byte passes).
"""

from __future__ import annotations

from pathlib import Path

from evaluation_pipeline.io.landing import file_sha256


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
