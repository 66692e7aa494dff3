"""Path arguments: a local Path or a URL with its filesystem and options, never folded."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.io.locations import (
    LocationError,
    argument,
    is_remote,
    location,
    storage_options,
)
from tests.support.refusals import assert_names

pytest.importorskip("s3fs")


def test_a_url_keeps_its_double_slash_and_takes_the_options(monkeypatch):
    monkeypatch.setenv(settings.STORAGE_OPTIONS.name,
                       '{"endpoint_url": "http://127.0.0.1:1", "a": 1}')
    where = location("s3://bucket/out/rep", {"a": 2})
    assert is_remote(where) and str(where) == "s3://bucket/out/rep"
    assert str(where / "report.html") == "s3://bucket/out/rep/report.html"
    assert where.storage_options == {"endpoint_url": "http://127.0.0.1:1", "a": 2}
    assert argument("s3://bucket/out/rep") == "s3://bucket/out/rep"


def test_local_paths_and_file_urls_are_paths(tmp_path):
    assert location("out/rep") == Path("out/rep")
    assert location(tmp_path.as_uri()) == tmp_path
    assert not is_remote(location(str(tmp_path)))


def test_a_missing_filesystem_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("s3fs", "gcsfs") else real(name, *a))
    # The URL, the missing module, and the command that installs it, pasted as it is said.
    for url, module, extra in [("s3://bucket/x.parquet", "s3fs", "s3"),
                               ("gs://bucket/x.parquet", "gcsfs", "gcs")]:
        with pytest.raises(LocationError) as refused:
            location(url)
        assert_names(refused, url, module, f"pip install 'ndcg-eval[{extra}]'")


@pytest.mark.parametrize("text", ["{not json", "[1, 2]"])
def test_storage_options_must_be_a_json_object(text, monkeypatch):
    monkeypatch.setenv(settings.STORAGE_OPTIONS.name, text)
    with pytest.raises(LocationError) as refused:
        storage_options()
    assert_names(refused, settings.STORAGE_OPTIONS.name)
