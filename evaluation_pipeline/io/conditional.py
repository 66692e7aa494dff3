"""Conditional writes on object storage: compare-and-swap of one object by its ETag.

An object store has no lock and no append. What S3 (and the servers that speak its API: MinIO,
Ceph, moto) has instead is the conditional PUT: ``If-None-Match: *`` writes an object only if
none is there, ``If-Match: <etag>`` only if it is still the version that was read. A shared
file is then changed as read -> change -> put-if-unchanged, retried on a conflict, and no
writer's change is lost (``io.append_log``, ``io.object_lock``). A delete is conditional too
(``If-Match``), so a lock's holder never removes a lease that was taken over meanwhile.

The requests are botocore's public S3 calls (``get_object``, ``put_object``, ``head_object``,
``delete_object``) on the client s3fs builds from the storage options, so the endpoint,
credentials and region are the ones every other read and write of the storage uses.

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


class _Refused(Exception):
    """An error the S3 API answered: its code and HTTP status, and the error as s3fs raises
    it (``PermissionError`` for AccessDenied, ...), naming the object."""

    def __init__(self, where: Location, error: Exception):
        from s3fs.errors import translate_boto_error  # s3fs is there: the object is on S3

        response = getattr(error, "response", {})
        self.code = str(response.get("Error", {}).get("Code", ""))
        self.status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        message = response.get("Error", {}).get("Message") or str(error)
        self.error = translate_boto_error(error, f"{where}: {message}", set_cause=False)
        super().__init__(str(self.error))

    @property
    def precondition_failed(self) -> bool:
        return (self.code in ("PreconditionFailed", "ConditionalRequestConflict")
                or self.status in (409, 412))


def read_tagged(where: Location) -> tuple[bytes | None, str | None]:
    """(the object's bytes, its ETag) from one GET, or (None, None) if there is none: the tag
    is that of the bytes returned, never of a later version."""
    try:
        response = _request(where, "get_object")
    except _Refused as refused:
        if refused.status == 404:
            return None, None
        raise refused.error from refused.__cause__
    return response["Body"], response["ETag"]


def put_if(where: Location, data: bytes, tag: str | None) -> None:
    """Write ``data`` only if the object is still the version ``tag`` (None: only if there
    is no object); raises ``Conflict`` otherwise."""
    match = {"IfMatch": tag} if tag is not None else {"IfNoneMatch": "*"}
    try:
        _request(where, "put_object", Body=data, **match)
    except _Refused as refused:
        # The version read was deleted since (If-Match on no object): changed all the same.
        if refused.precondition_failed or (tag is not None and refused.code == "NoSuchKey"):
            raise Conflict(str(where)) from None
        raise refused.error from refused.__cause__
    finally:
        where.fs.invalidate_cache(where.path)


def delete_if(where: Location, tag: str) -> bool:
    """Remove the object if it is still the version ``tag``; False when it is not (someone
    else's now, or gone). The tag is compared first (a HEAD) and sent with the DELETE: a
    store that ignores ``If-Match`` on a delete still deletes only the version it compared."""
    try:
        if _request(where, "head_object")["ETag"] != tag:
            return False
        _request(where, "delete_object", IfMatch=tag)
    except _Refused as refused:
        if refused.status == 404 or refused.precondition_failed:
            return False
        raise refused.error from refused.__cause__
    finally:
        where.fs.invalidate_cache(where.path)
    return True


def _request(where: Location, method: str, **params: Any) -> dict:
    """One S3 request on the object ``where`` through its filesystem's botocore client (the
    one s3fs made from the storage options: endpoint, credentials, region), with the extra
    arguments the filesystem sends with every request (server-side encryption, requester
    pays) where the operation takes them. A body that comes back is read whole; an error
    answer is raised as ``_Refused``."""
    from botocore.exceptions import ClientError  # with s3fs: the object is on S3

    fs = where.fs
    bucket, key, _ = fs.split_path(where.path)

    async def call() -> dict:
        client = await fs.set_session()
        accepted = client.meta.service_model.operation_model(
            client.meta.method_to_api_mapping[method]).input_shape.members
        extra = {name: value for name, value in {**fs.s3_additional_kwargs, **fs.req_kw}.items()
                 if name in accepted}
        response = await getattr(client, method)(Bucket=bucket, Key=key, **extra, **params)
        if "Body" in response:
            async with response["Body"] as body:
                response["Body"] = await body.read()
        return response

    try:
        return sync(fs.loop, call)
    except ClientError as error:
        raise _Refused(where, error) from error
