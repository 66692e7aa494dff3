"""An exclusive lock on a bucket: a lease object created only if there is none.

The lock of ``<folder>/<name>`` is the object ``<folder>/.<name>.lock``, written with
``If-None-Match: *`` (``io.conditional``): of the runs that try together, exactly one creates
it. It holds who took it and when. Released, it is deleted, unless it is no longer this run's.

A run killed while holding it leaves the object behind. A lease older than ``lease_seconds``
is then taken over by a conditional overwrite of the very version that was read, so of the
runs that find it stale, one takes it. The lease outlasts by far what a holder does under it
(the history's read, extend and write), so a live holder is never taken over.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from evaluation_pipeline.io import conditional
from evaluation_pipeline.io.locations import Location
from evaluation_pipeline.io.lock import LockTimeout

LEASE_SECONDS = 600.0
POLL_SECONDS = 0.2


def lock_object(target: Location) -> Location:
    return target.parent / f".{target.name}.lock"


@contextmanager
def object_lock(target: Location, timeout: float, *, lease_seconds: float = LEASE_SECONDS,
                say=None) -> Iterator[None]:
    """Hold the lock of ``target`` (a UPath on an S3-API bucket) for the block; give up
    with ``LockTimeout`` after ``timeout`` seconds, naming the lock and its holder."""
    lock = lock_object(target)
    owner = f"{socket.gethostname()}|{os.getpid()}|{uuid.uuid4().hex}"
    body = json.dumps({"owner": owner, "since": datetime.now(UTC).isoformat()}).encode()
    deadline = time.monotonic() + timeout
    told = False
    while True:
        try:
            conditional.put_if(lock, body, None)
            break
        except conditional.Conflict:
            pass
        held, tag = conditional.read_tagged(lock)
        if held is not None and _stale(held, lease_seconds):
            try:
                conditional.put_if(lock, body, tag)  # one of the runs that found it stale
                break
            except conditional.Conflict:
                continue
        if time.monotonic() >= deadline:
            raise LockTimeout(f"{lock} is held by {_holder(held)}")
        if say is not None and not told:
            say(_holder(held))
            told = True
        time.sleep(POLL_SECONDS)
    try:
        yield
    finally:
        current, tag = conditional.read_tagged(lock)
        if current is not None and _owner(current) == owner:
            conditional.delete_if(lock, tag)


def _stale(held: bytes, lease_seconds: float) -> bool:
    try:
        since = datetime.fromisoformat(json.loads(held)["since"])
    except (ValueError, KeyError, TypeError):
        return True  # not a lease this module wrote (a torn write): nobody holds it
    return (datetime.now(UTC) - since).total_seconds() > lease_seconds


def _owner(held: bytes) -> str | None:
    try:
        return json.loads(held).get("owner")
    except (ValueError, AttributeError):
        return None


def _holder(held: bytes | None) -> str:
    if held is None:
        return "another run"
    try:
        record = json.loads(held)
        return f"{record['owner']} since {record['since']}"
    except (ValueError, KeyError, TypeError):
        return "another run"
