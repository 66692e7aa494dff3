"""A log of JSON lines that concurrent runs append to, on a local disk or a bucket.

Locally a line is appended under an exclusive lock of the file and flushed to disk, so runs add
whole lines one after the other. On a bucket there is no append: the object is read, extended
and put back only if it did not change meanwhile (``io.conditional``), retried on a conflict, so
two runs that append together both keep their line.

``append`` takes a ``decide`` function that sees the lines already there and returns the line
to add (or None: add nothing). It is called again after every conflict, on the lines as they
are then: "add unless already there" holds even against a concurrent writer.

Reading is lenient where a crash leaves damage: a last line cut short (a full disk, a killed
writer) is skipped; any other line that is not a JSON object is reported by number and
skipped, and never stops the lines after it from being read.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evaluation_pipeline.io import conditional
from evaluation_pipeline.io.locations import Location, is_remote

LOG = logging.getLogger(__name__)
CONFLICT_ATTEMPTS = 50


@dataclass(frozen=True)
class Lines:
    """The records of a log, and what was skipped: (line number, why)."""

    records: list[dict]
    skipped: list[tuple[int, str]] = field(default_factory=list)


Decide = Callable[[Sequence[dict]], dict | None]


def parse(text: str, where: str = "") -> Lines:
    records, skipped = [], []
    lines = text.split("\n")
    torn_last = not text.endswith("\n") and text != ""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if torn_last and number == len(lines):
                skipped.append((number, "a last line cut short (a write that did not finish)"))
            else:
                skipped.append((number, f"not JSON ({exc.msg})"))
            continue
        if not isinstance(record, dict):
            skipped.append((number, "not a JSON object"))
            continue
        records.append(record)
    for number, why in skipped:
        LOG.warning(f"{where}: line {number} skipped: {why}")
    return Lines(records, skipped)


def read(where: Location) -> Lines:
    """Every record of the log (an absent log has none)."""
    if is_remote(where):
        data, _ = conditional.read_tagged(where)
        return parse((data or b"").decode("utf-8", errors="replace"), str(where))
    path = Path(where)
    if not path.exists():
        return Lines([])
    return parse(path.read_text(encoding="utf-8", errors="replace"), str(path))


def encode(record: dict) -> str:
    return json.dumps(record, allow_nan=False) + "\n"


def append(where: Location, decide: Decide) -> dict | None:
    """Add the line ``decide`` returns for the records there now; returns it (None: none)."""
    if is_remote(where):
        return _append_remote(where, decide)
    return _append_local(Path(where), decide)


def _append_local(path: Path, decide: Decide) -> dict | None:
    import fcntl  # POSIX: the pipeline's local storage runs there

    path.parent.mkdir(parents=True, exist_ok=True)
    # flock on the log's own handle, not filelock (io.lock): the one open file is locked, read
    # and appended to, where filelock locks a descriptor of its own, which it lends only to a
    # callback, and spends about 1 ms of Python a hold against flock's microseconds.
    with open(path, "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.seek(0)
            text = handle.read()
            record = decide(parse(text, str(path)).records)
            if record is None:
                return None
            # A torn last line is closed first, so the new record starts a line of its own.
            handle.write(("\n" if text and not text.endswith("\n") else "") + encode(record))
            handle.flush()
            os.fsync(handle.fileno())
            return record
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _append_remote(where: Location, decide: Decide) -> dict | None:
    if conditional.in_process(where):
        with conditional.IN_PROCESS_LOCK:
            text = where.read_text(encoding="utf-8") if where.exists() else ""
            record = decide(parse(text, str(where)).records)
            if record is not None:
                sep = "\n" if text and not text.endswith("\n") else ""
                where.write_text(text + sep + encode(record), encoding="utf-8")
            return record
    for attempt in range(CONFLICT_ATTEMPTS):
        data, tag = conditional.read_tagged(where)
        text = (data or b"").decode("utf-8", errors="replace")
        record = decide(parse(text, str(where)).records)
        if record is None:
            return None
        if text and not text.endswith("\n"):
            text += "\n"
        try:
            conditional.put_if(where, (text + encode(record)).encode("utf-8"), tag)
            return record
        except conditional.Conflict:
            # Another run appended meanwhile: back off a little, at random, and read again.
            time.sleep(random.uniform(0, 0.05 * (attempt + 1)))
    raise TimeoutError(f"{where}: could not append after {CONFLICT_ATTEMPTS} conflicting "
                       "writes by other runs")
