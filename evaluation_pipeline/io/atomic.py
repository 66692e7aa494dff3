"""Atomic writes: a reader sees the old file or the new one, never half of either.

Each file is written to a temporary name in the same folder, flushed to disk, then renamed over
the target (``os.replace`` is atomic within a file system). On object storage, which has no
rename, the file is written to a local temporary file and then put as one object: a PUT (or a
multipart upload, completed at its end) makes the object appear whole or not at all. A result of
several files is made atomic by its marker, written last (``io.result_folder``).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
from upath import UPath

from evaluation_pipeline.io.locations import is_remote


def atomic_write(path: str | Path | UPath, write: Callable[[Path], None]) -> Path | UPath:
    """Call ``write(tmp_path)`` and move the result to ``path`` atomically."""
    if is_remote(path):
        return _put(path, write)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _put(target: UPath, write: Callable[[Path], None]) -> UPath:
    with tempfile.TemporaryDirectory(prefix="ndcg-eval-put-") as folder:
        tmp = Path(folder) / target.name
        write(tmp)
        target.fs.put_file(str(tmp), target.path)
    return target


def write_parquet(frame: pl.DataFrame, path: str | Path | UPath) -> Path | UPath:
    # Statistics and a fixed compression keep the bytes a function of the data alone.
    return atomic_write(
        path, lambda tmp: frame.write_parquet(tmp, compression="zstd", statistics=True)
    )


def json_text(data: Any) -> str:
    """The JSON text of every summary and report this project writes (no NaN: null instead)."""
    return json.dumps(data, indent=2, sort_keys=False, allow_nan=False) + "\n"


def write_json(data: Any, path: str | Path | UPath) -> Path | UPath:
    text = json_text(data)
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_text(text: str, path: str | Path | UPath) -> Path | UPath:
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
