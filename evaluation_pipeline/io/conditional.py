"""Conditional writes on object storage: compare-and-swap of one object by its ETag.

An object store has no lock and no append. What S3 (and the servers that speak its API: MinIO,
Ceph, moto) has instead is the conditional PUT: ``If-None-Match: *`` writes an object only if
none is there, ``If-Match: <etag>`` only if it is still the version that was read. A shared
file is then changed as read -> change -> put-if-unchanged, retried on a conflict, and no
writer's change is lost (``io.append_log``, ``io.object_lock``).

Other object stores (``gs://``, ``az://``) have their own preconditions, not reached through
fsspec alike; a shared file there is refused before anything is written (``require``).
"""

from __future__ import annotations

import threading
from typing import Any

from fsspec.asyn import sync

from evaluation_pipeline.io.locations import Location, is_remote
from schemas.errors import EvaluationError

CONDITIONAL_PROTOCOLS = ("s3", "s3a")
# fsspec's in-memory filesystem lives in one process: its writers are this process's threads,
# kept apart by one lock.
IN_PROCESS_PROTOCOLS = ("memory",)
IN_PROCESS_LOCK = threading.RLock()


class Conflict(Exception):
    """The object changed (or appeared) since it was read: read it again and retry."""


def supports(where: Location) -> bool:
    """True where shared files can be changed safely: a local path, or an S3-API bucket."""
    return not is_remote(where) or where.protocol in CONDITIONAL_PROTOCOLS + IN_PROCESS_PROTOCOLS


def in_process(where: Location) -> bool:
    """True for a filesystem only this process sees (``IN_PROCESS_LOCK`` orders its writers)."""
    return is_remote(where) and where.protocol in IN_PROCESS_PROTOCOLS


def require(where: Location, what: str) -> None:
    """Refuse, before any write, a storage where ``what`` (a file several runs change) would
    lose changes: an object store without conditional writes."""
    if not supports(where):
        raise EvaluationError(
            f"{where}: {what} is changed by concurrent runs, which needs conditional writes; "
            f"{where.protocol}:// is not supported for it (use a local folder or an S3-API "
            "bucket)")


def read_tagged(where: Location) -> tuple[bytes | None, str | None]:
    """(the object's bytes, its ETag) from one GET, or (None, None) if there is none: the tag
    is that of the bytes returned, never of a later version."""
    fs = where.fs
    bucket, key, _ = fs.split_path(where.path)

    async def get() -> tuple[bytes, str]:
        response = await fs._call_s3("get_object", Bucket=bucket, Key=key)
        try:
            return await response["Body"].read(), response["ETag"]
        finally:
            response["Body"].close()

    try:
        return sync(fs.loop, get)
    except FileNotFoundError:
        return None, None


def put_if(where: Location, data: bytes, tag: str | None) -> None:
    """Write ``data`` only if the object is still the version ``tag`` (None: only if there
    is no object); raises ``Conflict`` otherwise."""
    fs = where.fs
    match: dict[str, Any] = {"IfMatch": tag} if tag is not None else {"mode": "create"}
    try:
        fs.pipe_file(where.path, data, **match)
    except FileExistsError:
        raise Conflict(str(where)) from None
    except OSError as exc:
        if _precondition_failed(exc):
            raise Conflict(str(where)) from None
        raise
    finally:
        fs.invalidate_cache(where.path)


def delete_if(where: Location, tag: str) -> bool:
    """Remove the object if it is still the version ``tag``; False when it is not (someone
    else's now). Stores without conditional deletes get a read-compare-delete instead."""
    _, current = read_tagged(where)
    if current != tag:
        return False
    where.fs.rm_file(where.path)
    return True


def _precondition_failed(exc: BaseException) -> bool:
    cause = exc.__cause__
    response = getattr(cause, "response", None) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code in ("PreconditionFailed", "ConditionalRequestConflict") or status in (409, 412)
