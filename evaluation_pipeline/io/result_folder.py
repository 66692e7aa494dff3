"""A result of several files on object storage: every file first, then the marker readers require.

A local result folder is written file by file, each atomically (a temporary file, then a
rename). Object storage has no rename, and a reader may list or read a folder while it is
being written, so a result there (per_query.parquet and summary.json, the report's files) is
first written whole to a local staging folder, then put:

1. every file, each one object (a PUT is atomic for a reader: the object is whole or absent);
2. last, the marker ``RESULT_MARKER``: a JSON object naming each file of the result with the
   key it is stored at (relative to the folder) and its sha256.

Readers of a result on object storage require the marker and read each file at the key it
names (``result_file``). Without a marker the folder is refused as incomplete: a write is under
way, or was killed. A rewrite of a folder that already holds a complete result must not leave
new files beside the old marker, so it puts the new files under ``INCOMING_FOLDER/<id>/``
first, switches the marker to them (one PUT), copies them over the fixed names, switches the
marker back, and removes the incoming copies. Killed at any step, the marker names one
complete result: the earlier one until the first switch, the new one after it. A rewrite with
the same content writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from upath import UPath

from evaluation_pipeline.io.atomic import json_text
from evaluation_pipeline.io.locations import Location, is_remote
from evaluation_pipeline.io.storage import INCOMING_FOLDER, RESULT_MARKER
from schemas.errors import EvaluationError


class IncompleteResult(EvaluationError):
    """A folder on object storage without the marker of a complete result."""


@contextmanager
def writing(out: Location) -> Iterator[Path]:
    """The local folder to write a result into: ``out`` itself when it is local; otherwise a
    staging folder, put to ``out`` (every file, then the marker) when the block ends without
    an error. A failed block puts nothing."""
    if not is_remote(out):
        yield Path(out)
        return
    with tempfile.TemporaryDirectory(prefix="ndcg-eval-result-") as staging:
        yield Path(staging)
        put_result(files_of(Path(staging)), out)


def files_of(folder: Path) -> dict[str, Path]:
    """Every file under ``folder`` by its relative name (``traces/x.json``), in name order."""
    return {p.relative_to(folder).as_posix(): p
            for p in sorted(folder.rglob("*")) if p.is_file()}


def put_result(files: Mapping[str, Path], out: UPath) -> bool:
    """Put ``files`` (relative name: local file) into the result at ``out``; see the module
    docstring. The earlier result's other files stay part of it, as they stay beside a local
    rewrite. False when every file was already there with this content (nothing written)."""
    digests = {name: _sha256(path) for name, path in files.items()}
    earlier = read_marker(out)
    entries = dict(earlier["files"]) if earlier is not None else {}
    if earlier is not None and all(entries.get(n, {}).get("sha256") == d
                                   for n, d in digests.items()):
        return False

    def marker(prefix: str = "") -> None:
        _write_marker(out, {**entries, **{n: {"key": f"{prefix}{n}", "sha256": d}
                                          for n, d in digests.items()}})

    if earlier is None:
        for name, path in files.items():
            _put_file(path, out / name)
        marker()
        return True
    incoming = f"{INCOMING_FOLDER}/{uuid.uuid4().hex}/"
    for name, path in files.items():
        _put_file(path, out / f"{incoming}{name}")
    marker(incoming)  # the switch: from here on readers see the new files, where staged
    for name in files:
        _copy_file(out / f"{incoming}{name}", out / name)
    marker()
    out.fs.rm((out / incoming).path, recursive=True)
    return True


def read_marker(folder: UPath) -> dict | None:
    marker = folder / RESULT_MARKER
    folder.fs.invalidate_cache()  # another process may have written since the last listing
    try:
        return json.loads(marker.read_bytes())
    except FileNotFoundError:
        return None


def result_file(folder: Location, name: str) -> Location:
    """The file ``name`` of the result in ``folder``: beside it on a local disk; on object
    storage where the marker of the complete result says (``IncompleteResult`` without one)."""
    if not is_remote(folder):
        return folder / name
    marker = read_marker(folder)
    if marker is None:
        raise IncompleteResult(
            f"{folder}: no complete result here (no {RESULT_MARKER}, which is written after "
            "every file of a result): nothing was written here, or a write is under way or "
            "was interrupted")
    entry = marker["files"].get(name)
    if entry is None:
        raise IncompleteResult(f"{folder}: the result here has no {name}")
    return folder / entry["key"]


def _put_file(source: Path, target: UPath) -> None:
    target.fs.put_file(str(source), target.path)


def _copy_file(source: UPath, target: UPath) -> None:
    source.fs.copy(source.path, target.path)  # on the server: nothing passes through here


def _write_marker(out: UPath, entries: Mapping[str, Mapping[str, str]]) -> None:
    marker = {"files": {name: dict(entries[name]) for name in sorted(entries)}}
    (out / RESULT_MARKER).write_bytes(json_text(marker).encode())


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
