"""A result of several files on object storage: every file first, then the marker readers require.

A local result folder is built in a staging folder beside it and swapped in whole
(``io.result_set``). Object storage has no rename, and a reader may list or read a folder while
it is being written, so a result there (per_query.parquet and summary.json, the report's files) is
first written whole to a local staging folder, then put:

1. every file, each one object (a PUT is atomic for a reader: the object is whole or absent);
2. last, the marker ``RESULT_MARKER``: a JSON object naming each file of the result with the
   key it is stored at (relative to the folder) and its sha256.

Readers of a result on object storage require the marker and read each file at the key it
names (``result_file``). Without a marker the folder is refused as incomplete: a write is under
way, or was killed. The one exception is a result Spark wrote at a URL itself (``ndcg-eval
score --engine spark --out s3a://...``): its parts, Spark's ``_SUCCESS`` after them, then the
summary; with both of those it is whole. A rewrite of a folder that already holds a complete result
must not leave new files beside the old marker, so it puts the new files under
``INCOMING_FOLDER/<id>/`` first, switches the marker to them (one PUT), copies them over the fixed
names, switches the marker back, and removes the incoming copies and the files of the earlier result
that the new one does not have. Killed at any step, the marker names one complete result: the
earlier one until the first switch, the new one after it. A rewrite with the same content writes
nothing.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from upath import UPath

from evaluation_pipeline.io import leftovers
from evaluation_pipeline.io.atomic import json_text
from evaluation_pipeline.io.locations import Location, is_remote
from evaluation_pipeline.io.result_set import check_output_folder, replacing
from evaluation_pipeline.io.storage import (
    INCOMING_FOLDER,
    PER_QUERY_FILE,
    RESULT_MARKER,
    SPARK_SUCCESS,
    SUMMARY_FILE,
    scores_folder,
)
from schemas.errors import EvaluationError


class IncompleteResult(EvaluationError):
    """A folder on object storage without the marker of a complete result."""


@contextmanager
def writing(out: Location, keep: Mapping[str, bytes] | None = None,
            inputs: Iterable[Any] = ()) -> Iterator[Path]:
    """The local folder to write a result into: a staging folder, swapped in whole for a
    local ``out`` (``io.result_set``; an ``out`` that is a file, an input folder or a folder
    of other files is refused first); put to ``out`` on object storage (every file, then the
    marker). A failed block changes nothing. ``keep``: files (name: bytes) of the new result
    as they are (the score's summary beside a report written into its folder)."""
    if not is_remote(out):
        check_output_folder(Path(out), inputs)
        with replacing(Path(out), keep) as staging:
            yield staging
        return
    leftovers.sweep_scratch()
    with leftovers.scratch_folder("ndcg-eval-result-") as staging:
        for name, data in (keep or {}).items():
            (staging / name).write_bytes(data)
        yield staging
        put_result(files_of(staging), out)


def files_of(folder: Path) -> dict[str, Path]:
    """Every file under ``folder`` by its relative name (``traces/x.json``), in name order."""
    return {p.relative_to(folder).as_posix(): p
            for p in sorted(folder.rglob("*")) if p.is_file()}


def put_result(files: Mapping[str, Path], out: UPath) -> bool:
    """Put ``files`` (relative name: local file) as the result at ``out``, in the place of
    the earlier one (whose other files are no part of it: results never mix); see the module
    docstring. False when the result there was already this one (nothing written)."""
    digests = {name: _sha256(path) for name, path in files.items()}
    earlier = read_marker(out)
    entries = dict(earlier["files"]) if earlier is not None else {}
    if earlier is not None and {n: e.get("sha256") for n, e in entries.items()} == digests:
        return False

    def marker(prefix: str = "") -> None:
        _write_marker(out, {n: {"key": f"{prefix}{n}", "sha256": d} for n, d in digests.items()})

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
    # Every incoming copy (also those of killed rewrites) and the earlier result's other files.
    out.fs.rm((out / INCOMING_FOLDER).path, recursive=True)
    for name in sorted(set(entries) - set(files)):
        if (out / name).exists():
            (out / name).unlink()
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
    if marker is None and (_written_by_spark(folder) or _written_by_the_pipeline(folder, name)):
        return folder / name
    if marker is None:
        raise IncompleteResult(
            f"{folder}: no complete result here (no {RESULT_MARKER}, which is written after "
            "every file of a result): nothing was written here, or a write is under way or "
            "was interrupted")
    entry = marker["files"].get(name)
    if entry is None:
        raise IncompleteResult(f"{folder}: the result here has no {name}")
    return folder / entry["key"]


def _written_by_spark(folder: UPath) -> bool:
    """Whether ``folder`` holds a whole result that ``ndcg-eval score --engine spark`` wrote
    at a URL itself (without the marker): Spark's parts with their SPARK_SUCCESS, which the
    committer writes after every part, and the summary, written after that."""
    return ((folder / PER_QUERY_FILE / SPARK_SUCCESS).exists()
            and (folder / SUMMARY_FILE).exists())


def _written_by_the_pipeline(folder: UPath, name: str) -> bool:
    """Whether ``name`` in ``folder`` is the per-query rows of the pipeline's scores folder
    (``scores/<pool>/<version>/<spec_id>/``, ``io.storage.scores_folder``): one object, which
    the storage moves in whole, not a result of several files that needs the marker."""
    place = scores_folder("pool", "version", "spec")
    return (name == PER_QUERY_FILE and len(folder.parts) > len(place)
            and folder.parts[-len(place)] == place[0] and (folder / name).exists())


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
