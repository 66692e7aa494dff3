"""An exclusive lock on a bucket: a lease object created only if there is none.

The lock of ``<folder>/<name>`` is the object ``<folder>/.<name>.lock``, written with
``If-None-Match: *`` (``io.conditional``): of the runs that try together, exactly one creates
it. It holds who took it and when. Released, it is deleted, unless it is no longer this run's.

A run killed while holding it leaves the object behind. A lease older than ``lease_seconds``
is then taken over by a conditional overwrite of the very version that was read, so of the
runs that find it stale, one takes it. The lease outlasts by far what a holder does under it
(the history's read, extend and write), so a live holder is never taken over.

A lease records its holder's machine, pid and start time (``io.lock.this_process``). A holder
of this very machine that provably no longer runs (its pid free, or another process's now) is
taken over at once, the same way: nothing else could release it, and waiting out its lease
would stall every run behind it for 10 minutes. A holder of another machine cannot be looked
at from here, and is waited for. Whoever waits is told, when the wait starts and every
``SAY_SECONDS`` after: which lock, who holds it, and when its lease is taken over.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from evaluation_pipeline.io import conditional
from evaluation_pipeline.io.locations import Location
from evaluation_pipeline.io.lock import LockTimeout, process_is_gone, this_process

LEASE_SECONDS = 600.0
POLL_SECONDS = 0.2
SAY_SECONDS = 60.0  # between two lines of one wait: a wait may last a lease


def lock_object(target: Location) -> Location:
    return target.parent / f".{target.name}.lock"


@contextmanager
def object_lock(target: Location, timeout: float, *, lease_seconds: float = LEASE_SECONDS,
                say: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the lock of ``target`` (a UPath on an S3-API bucket) for the block; give up
    with ``LockTimeout`` after ``timeout`` seconds, naming the lock and its holder.

    ``say(words)`` is told that this run waits, naming the lock, its holder and when the
    lease is taken over: when the wait starts and every ``SAY_SECONDS`` after; and that it
    took the lock over, when it does."""
    lock = lock_object(target)
    owner = f"{socket.gethostname()}|{os.getpid()}|{uuid.uuid4().hex}"
    deadline = time.monotonic() + timeout
    gives_up = datetime.now(UTC) + timedelta(seconds=timeout)
    next_say = time.monotonic()
    while True:
        try:
            conditional.put_if(lock, _lease(owner), None)
            break
        except conditional.Conflict:
            pass
        held, tag = conditional.read_tagged(lock)
        if held is None:
            continue  # released between the two requests: try again at once
        if _owner(held) == owner:
            break  # this run's own create, which landed though its answer was lost and retried
        why = _why_free(held, lease_seconds)
        if why is not None:
            try:
                conditional.put_if(lock, _lease(owner), tag)  # one of the runs that found it free
            except conditional.Conflict:
                continue
            if say is not None:
                say(f"took over the lock {lock} from {_holder(held)}: {why}")
            break
        if time.monotonic() >= deadline:
            raise LockTimeout(f"{lock} is held by {_holder(held)}")
        if say is not None and time.monotonic() >= next_say:
            say(_waiting(lock, held, lease_seconds, gives_up))
            next_say = time.monotonic() + SAY_SECONDS
        time.sleep(POLL_SECONDS)
    try:
        yield
    finally:
        current, tag = conditional.read_tagged(lock)
        if current is not None and _owner(current) == owner:
            conditional.delete_if(lock, tag)


def _lease(owner: str) -> bytes:
    """The lease as it is written: dated now, not when the wait began, or a run that waited
    out a lease would hold one that others find already expired."""
    return json.dumps({"owner": owner, "since": datetime.now(UTC).isoformat(),
                       "process": this_process()}).encode()


def _why_free(held: bytes, lease_seconds: float) -> str | None:
    """Why the lease ``held`` may be taken over now, or None while its holder may live."""
    record = _record(held)
    since = _since(record)
    if since is None:
        return "it is not a lease (a torn write): nobody holds it"
    if datetime.now(UTC) - since > timedelta(seconds=lease_seconds):
        return f"its lease expired at {_when(since + timedelta(seconds=lease_seconds))}"
    process = record.get("process")
    if isinstance(process, dict) and process_is_gone(process):
        return (f"its holder, pid {process.get('pid')} on this machine "
                f"({process.get('host')}), no longer runs")
    return None


def _waiting(lock: Location, held: bytes, lease_seconds: float, gives_up: datetime) -> str:
    """The line that says this run waits: which lock, its holder, when it is taken over."""
    taken_over = _since(_record(held)) + timedelta(seconds=lease_seconds)
    words = (f"waiting for the lock {lock}, held by {_holder(held)}: its lease is taken over at "
             f"{_when(taken_over)} unless it is released before")
    if gives_up < taken_over:
        words += f"; this run gives up at {_when(gives_up)}"
    return words


def _record(held: bytes) -> dict:
    try:
        record = json.loads(held)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _since(record: dict) -> datetime | None:
    try:
        since = datetime.fromisoformat(record["since"])
    except (KeyError, TypeError, ValueError):
        return None  # not a lease this module wrote
    return since if since.tzinfo else since.replace(tzinfo=UTC)


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _owner(held: bytes) -> str | None:
    return _record(held).get("owner")


def _holder(held: bytes | None) -> str:
    """The holder as its lease records it: pid and host (the owner's first two fields), and
    since when."""
    record = _record(held) if held is not None else {}
    owner, since = record.get("owner"), _since(record)
    if not isinstance(owner, str) or since is None:
        return "another run"
    host, _, rest = owner.partition("|")
    pid = rest.partition("|")[0]
    who = f"pid {pid} on {host}" if pid else owner
    return f"{who} (since {_when(since)})"
