"""Where a path argument points: a local file or folder, or a URL on object storage.

Every path the commands, the engines and the storage resource take is parsed here, once. A
local path becomes a ``pathlib.Path``, as it always was; a URL (``s3://bucket/key``,
``gs://...``, ``az://...``) becomes a ``UPath``, which carries its fsspec filesystem and the
storage options. A URL is never made a ``Path``: that folds ``s3://`` into ``s3:/``, and the
result is a local folder named ``s3:``.

Storage options (endpoint, region, profile, ...) are the keyword arguments of the fsspec
filesystem (for s3fs: ``endpoint_url``, ``client_kwargs``, ``profile``, ...). They come from
``NDCG_EVAL_STORAGE_OPTIONS`` (a JSON object), overridden key by key by the caller's own (the
CLI's ``--storage-options``, the storage resource's field). Credentials are not among them:
the filesystem finds them as it always does (for S3 the AWS provider chain: environment,
``~/.aws``, instance roles).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from upath import UPath

from evaluation_pipeline import settings
from schemas.errors import EvaluationError

# A scheme of two or more letters, then ":/": s3://b/x, s3a://b/x, hdfs://nn/x, file:///x,
# file:/x. One letter and a colon is a drive (C:/x); a colon without a slash is part of a file
# name (runs:2026/x.parquet).
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")

# The extra of this package that installs each protocol's filesystem, and its module.
EXTRAS = {
    "s3": ("s3", "s3fs"), "s3a": ("s3", "s3fs"),
    "gs": ("gcs", "gcsfs"), "gcs": ("gcs", "gcsfs"),
    "az": ("azure", "adlfs"), "abfs": ("azure", "adlfs"), "abfss": ("azure", "adlfs"),
    "adl": ("azure", "adlfs"),
}

Location = Path | UPath


class LocationError(EvaluationError):
    """A URL that cannot be reached as given: its filesystem is not installed, or the storage
    options are not a JSON object."""


def is_url(text: str | os.PathLike) -> bool:
    return isinstance(text, str) and _URL.match(text) is not None


def argument(text: str) -> Path | str:
    """The type of every path argument: a local ``Path``, or a URL kept as written (the
    command makes it a location with its storage options; Spark reads it as it is)."""
    return text if is_url(text) else Path(text)


def is_remote(where: Any) -> bool:
    """True for a location on object storage (or any fsspec filesystem but the local one)."""
    return isinstance(where, UPath) and where.protocol not in ("", "file", "local")


def location(where: str | os.PathLike, options: Mapping[str, Any] | None = None) -> Location:
    """``where`` as a local ``Path`` or a ``UPath`` with the storage options; a location passes
    through as it is. A URL whose filesystem is not installed is refused here, before anything
    is read or written, naming the extra that installs it."""
    if isinstance(where, UPath):
        return where
    if isinstance(where, Path):
        return where
    if not is_url(where):
        return Path(where)
    protocol = where.split(":", 1)[0].lower()
    if protocol in ("file", "local"):  # file:///x is a local path: read and written as one
        return Path(UPath(where).path)
    require_filesystem(protocol, where)
    return UPath(where, **storage_options(options))


def require_filesystem(protocol: str, url: str) -> None:
    extra, module = EXTRAS.get(protocol, (None, None))
    if module is not None and importlib.util.find_spec(module) is None:
        raise LocationError(f"{url}: {protocol}:// needs {module}, which is not installed: "
                            f"pip install 'ndcg-eval[{extra}]'")


def storage_options(own: Mapping[str, Any] | str | None = None) -> dict[str, Any]:
    """The environment's options (``NDCG_EVAL_STORAGE_OPTIONS``), then ``own`` over them."""
    options = _options((settings.STORAGE_OPTIONS.get() or ""), settings.STORAGE_OPTIONS.name)
    if isinstance(own, str):
        own = _options(own, "--storage-options")
    return {**options, **(own or {})}


def _options(text: str, where: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        options = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LocationError(f"{where} is not JSON: {exc}") from None
    if not isinstance(options, dict):
        raise LocationError(f"{where} must be a JSON object of storage options, such as "
                            '{"endpoint_url": "http://127.0.0.1:9000"}')
    return options
