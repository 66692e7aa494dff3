"""A local result folder replaced whole: built in a staging folder beside it, then swapped in.

A result (per_query.parquet and summary.json, the report's files and traces/) is never changed
in place, so the files of two results never meet in one folder:

1. every file is written into ``.<name>.staging-<id>/`` beside the folder (same file system);
2. the earlier folder, if any, is renamed to ``.<name>.previous-<id>/``;
3. the staging folder is renamed to ``<name>/``, and the parent folder is synced;
4. the previous folder is deleted.

Each rename is atomic on POSIX. Killed before step 2, the earlier result stands and a staging
folder is left; after step 3, the new result stands and a previous folder is left; the next
write into the folder removes them. Between steps 2 and 3 (two renames apart) there is no
``<name>/``, and the earlier result is whole under its previous name: the next write (or
``recover``) renames it back first. POSIX has no rename that exchanges two folders (Linux's
``renameat2(RENAME_EXCHANGE)`` is neither portable nor in Python), and ``os.replace`` does not
replace a folder that holds files. A manifest written last that readers require would leave
old and new files side by side in the folder for every reader that does not know it (pandas,
a browser opening report.html); a renamed folder is whole for all of them. On object storage,
which has no rename, the marker of ``io.result_folder`` is the atomic step instead.

Only a folder that holds nothing but a result (or nothing) is replaced: a folder holding other
files is refused, before anything is written, so that an ``--out`` pointing at a folder of
the user's never deletes it.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from evaluation_pipeline.io import leftovers
from evaluation_pipeline.io.atomic import WriteFailed
from evaluation_pipeline.io.storage import (
    AGGREGATES_FILE,
    HTML_FILE,
    PER_QUERY_FILE,
    REPORT_FILE,
    SUMMARY_FILE,
    TRACES_FOLDER,
)
from schemas.errors import EvaluationError

# What a result folder may hold; anything else makes it a folder that is not ours to replace.
RESULT_NAMES = frozenset({PER_QUERY_FILE, SUMMARY_FILE, REPORT_FILE, HTML_FILE,
                          AGGREGATES_FILE, TRACES_FOLDER})


class OutputFolderError(EvaluationError):
    """An output folder that cannot hold a result: a file, an input's folder, or a folder of
    other files. Refused before anything is read or written."""


def check_output_folder(out: Path, inputs: Iterable[Path | None] = ()) -> None:
    """Refuse ``out`` when it is a file, when it is or lies inside an input folder (or holds
    an input), or when it holds anything but a result."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise OutputFolderError(f"{out}: --out is an existing file, not a folder: give a new "
                                "or empty folder, or the folder of an earlier result")
    resolved = out.resolve()
    for given in inputs:
        if not isinstance(given, Path):
            continue  # none given, or a URL: never a local folder
        source = given.resolve()
        if source.is_dir() and (resolved == source or source in resolved.parents):
            where = "the input folder" if resolved == source else "inside the input folder"
            raise OutputFolderError(f"{out}: --out is {where} {given}: a result there would "
                                    "be read as an input; give a folder elsewhere")
        if resolved in source.parents:
            raise OutputFolderError(f"{out}: --out holds the input {given}, which replacing "
                                    "the folder would delete; give a folder elsewhere")
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir()
                         if p.name not in RESULT_NAMES and not leftovers.is_ours(p.name))
        if foreign:
            shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
            raise OutputFolderError(
                f"{out}: --out holds files that are not part of an ndcg-eval result ({shown}); "
                "a result replaces its folder whole: give a new or empty folder")


@contextmanager
def replacing(out: Path, keep: Mapping[str, bytes] | None = None) -> Iterator[Path]:
    """The staging folder to build the result for ``out`` in; swapped in whole when the block
    ends without an error (a failed block leaves the earlier result as it was). ``keep``: files
    (name: bytes) that are part of the new result as they are, written into it first."""
    out = Path(out)
    check_output_folder(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    recover(out)
    with leftovers.scratch_folder(f".{out.name}{leftovers.STAGING_MARK}", out.parent) as staging:
        for name, data in (keep or {}).items():
            (staging / name).write_bytes(data)
        try:
            yield staging
        except WriteFailed as exc:  # named where the user will look for the file
            raise exc.moved(staging, out) from exc
        swap(staging, out)


def swap(staging: Path, out: Path) -> None:
    """Put the folder ``staging`` in the place of ``out`` (steps 2 to 4 of the module)."""
    previous = None
    if out.exists():
        previous = out.parent / f".{out.name}{leftovers.PREVIOUS_MARK}{uuid.uuid4().hex[:12]}"
        os.rename(out, previous)
    os.rename(staging, out)
    _sync_folder(out.parent)
    if previous is not None:
        shutil.rmtree(previous, ignore_errors=True)


def recover(out: Path) -> None:
    """Finish what a killed swap left beside ``out``: the earlier result renamed back when
    there is no ``out`` (killed between the two renames), then every abandoned staging and
    previous folder of ``out`` removed."""
    out = Path(out)
    now = time.time()
    previous = sorted((p for p in out.parent.glob(f".{_glob_safe(out.name)}"
                                                  f"{leftovers.PREVIOUS_MARK}*")
                       if leftovers.abandoned(p, now)), key=lambda p: p.stat().st_mtime)
    if previous and not out.exists():
        os.rename(previous.pop(), out)
        _sync_folder(out.parent)
    for entry in previous:
        leftovers.remove(entry)
    for entry in leftovers.abandoned_entries(
            out.parent.glob(f".{_glob_safe(out.name)}{leftovers.STAGING_MARK}*")):
        leftovers.remove(entry)


def recover_tree(root: Path) -> None:
    """``recover`` every result folder under ``root`` that a killed swap left a previous
    folder of (the pipeline's storage, at the start of a run)."""
    for entry in sorted(Path(root).rglob(f".*{leftovers.PREVIOUS_MARK}*")):
        name = entry.name[1:].rsplit(leftovers.PREVIOUS_MARK, 1)[0]
        recover(entry.parent / name)


def _glob_safe(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def _sync_folder(folder: Path) -> None:
    """Make the renames in ``folder`` durable (a rename is in the folder's own data)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
