"""Compare-and-swap of one object by its ETag (io.conditional) against an S3-API server on
127.0.0.1: a create only where there is none, a write or delete only of the version read, a
version deleted meanwhile counted as changed, and other errors naming the object."""

from __future__ import annotations

import json
import uuid

import pytest

from evaluation_pipeline.io import conditional
from evaluation_pipeline.io.locations import location
from tests.support.refusals import assert_names
from tests.support.s3_server import BUCKET

pytest.importorskip("moto.server")
pytest.importorskip("s3fs")


@pytest.fixture
def where(endpoint):
    return location(f"s3://{BUCKET}/conditional-{uuid.uuid4().hex[:8]}/shared.jsonl")


def test_a_create_happens_once(where):
    assert conditional.read_tagged(where) == (None, None)
    conditional.put_if(where, b"first", None)
    with pytest.raises(conditional.Conflict):
        conditional.put_if(where, b"second", None)
    data, tag = conditional.read_tagged(where)
    assert data == b"first" and tag == where.fs.info(where.path)["ETag"]


def test_a_write_lands_only_on_the_version_read(where):
    conditional.put_if(where, b"1", None)
    _, read = conditional.read_tagged(where)
    conditional.put_if(where, b"2", read)
    with pytest.raises(conditional.Conflict):
        conditional.put_if(where, b"3", read)  # another writer's version is there now
    assert conditional.read_tagged(where)[0] == b"2"


def test_a_version_deleted_since_it_was_read_is_a_conflict_not_a_missing_file(where):
    conditional.put_if(where, b"1", None)
    _, read = conditional.read_tagged(where)
    where.fs.rm_file(where.path)
    with pytest.raises(conditional.Conflict):
        conditional.put_if(where, b"2", read)
    assert conditional.read_tagged(where) == (None, None)


def test_a_delete_removes_only_the_version_read(where):
    conditional.put_if(where, b"1", None)
    _, first = conditional.read_tagged(where)
    conditional.put_if(where, b"2", first)
    assert conditional.delete_if(where, first) is False
    _, second = conditional.read_tagged(where)
    assert conditional.read_tagged(where)[0] == b"2"
    assert conditional.delete_if(where, second) is True
    assert not where.exists()
    assert conditional.delete_if(where, second) is False  # gone already


def test_an_error_of_the_store_names_the_object(endpoint):
    missing = location(f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/history/alerts.jsonl")
    with pytest.raises(FileNotFoundError) as refused:
        conditional.put_if(missing, b"x", None)
    assert_names(refused, str(missing))
    assert refused.value.__cause__.response["Error"]["Code"] == "NoSuchBucket"  # the store's


def test_the_storage_options_request_arguments_go_where_the_operation_takes_them(endpoint):
    """Server-side encryption asked for in the storage options is sent with the writes, and
    left out of the reads and deletes that do not take it (botocore would refuse them)."""
    options = {"endpoint_url": endpoint,
               "s3_additional_kwargs": {"ServerSideEncryption": "AES256"}}
    where = location(f"s3://{BUCKET}/conditional-sse-{uuid.uuid4().hex[:8]}/lease",
                     options)
    conditional.put_if(where, json.dumps({"owner": "x"}).encode(), None)
    data, tag = conditional.read_tagged(where)
    assert json.loads(data) == {"owner": "x"}
    bucket, key, _ = where.fs.split_path(where.path)
    head = where.fs.call_s3("head_object", Bucket=bucket, Key=key)
    assert head.get("ServerSideEncryption") == "AES256", head
    assert conditional.delete_if(where, tag) is True
