"""Resources: where published inputs and results live, where inputs land, and check thresholds.

Environments differ by the values handed to these resources (a local folder or an fsspec URL
such as ``s3://bucket/ndcg``), never by a branch inside an asset.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import dagster as dg
import polars as pl
from upath import UPath

from evaluation_pipeline.engines import AUTO, DEFAULT_BATCH_ROWS, ENGINES, score_files
from evaluation_pipeline.io import landing
from evaluation_pipeline.io.atomic import atomic_write
from evaluation_pipeline.io.storage import (
    DEFAULT_LANDING,
    DEFAULT_QUERIES,
    DEFAULT_STORAGE,
    Place,
    manifest_file,
)
from schemas.errors import EvaluationError
from schemas.names import check_safe_name


class PublishConflict(EvaluationError):
    """A published name asked to hold different content: published inputs are immutable."""


class EvaluationStorage(dg.ConfigurableResource):
    """Published inputs and results under one base: a local folder or an fsspec URL.

    The layout is ``evaluation_pipeline.io.storage``. Every path component is a fixed word or a
    name checked by ``check_safe_name``; every write is atomic (temporary file, then rename or
    move).
    """

    base: str = str(DEFAULT_STORAGE)

    # -- paths ----------------------------------------------------------------------------
    def root(self) -> Path | UPath:
        return UPath(self.base) if "://" in self.base else Path(self.base).resolve()

    def path(self, *parts: str) -> Path | UPath:
        target = self.root()
        for part in parts:
            target = target / check_safe_name(part, "storage path component")
        return target

    def is_local(self) -> bool:
        return isinstance(self.root(), Path) and not isinstance(self.root(), UPath)

    def exists(self, *parts: str) -> bool:
        return self.path(*parts).exists()

    # -- writes ---------------------------------------------------------------------------
    def write(self, parts: Place, produce: Callable[[IO[bytes]], None]) -> str:
        """Write ``parts`` atomically by calling ``produce(binary_handle)``; returns the path."""
        target = self.path(*parts)
        if self.is_local():
            def _write(tmp: Path) -> None:
                with open(tmp, "wb") as handle:
                    produce(handle)
            atomic_write(target, _write)
            return str(target)
        # Object stores have no rename: write a temporary key beside the target, then move it.
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
        try:
            with tmp.open("wb") as handle:
                produce(handle)
            tmp.fs.mv(tmp.path, target.path)
        except BaseException:
            if tmp.exists():
                tmp.unlink()
            raise
        return str(target)

    def write_parquet(self, frame: pl.DataFrame, *parts: str) -> str:
        # Fixed compression and statistics keep the bytes a function of the data alone.
        return self.write(parts, lambda h: frame.write_parquet(h, compression="zstd",
                                                               statistics=True))

    def write_json(self, data: Any, *parts: str) -> str:
        text = json.dumps(data, indent=2, allow_nan=False) + "\n"
        return self.write(parts, lambda h: h.write(text.encode()))

    def put_tree(self, local: Path, *parts: str) -> dict[str, str]:
        """Copy every file of a local folder to ``parts``, each file atomically."""
        written = {}
        for source in sorted(p for p in local.iterdir() if p.is_file()):
            def copy(handle: IO[bytes], source: Path = source) -> None:
                with open(source, "rb") as data:
                    shutil.copyfileobj(data, handle)
            written[source.name] = self.write((*parts, source.name), copy)
        return written

    def put_file(self, local: Path, *parts: str) -> str:
        """Move a local file to ``parts``: a rename on the same file system, else a copy."""
        target = self.path(*parts)
        if self.is_local():
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(local, target)
                return str(target)
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise

        def copy(handle: IO[bytes]) -> None:
            with open(local, "rb") as data:
                shutil.copyfileobj(data, handle)
        return self.write(parts, copy)

    @contextmanager
    def staging(self) -> Iterator[Path]:
        """A local scratch folder for writers that only take a local path."""
        with tempfile.TemporaryDirectory(prefix="ndcg-eval-") as tmp:
            yield Path(tmp)

    # -- reads ----------------------------------------------------------------------------
    def read_per_query(self, *parts: str, columns: list[str] | None = None) -> pl.DataFrame:
        """Per-query rows as an engine wrote them: one file, or (Spark) a folder of parts."""
        target = self.path(*parts)
        if self.is_local() and Path(target).is_dir():
            return pl.read_parquet(Path(target) / "*.parquet", columns=columns)
        return self.read_parquet(*parts, columns=columns)

    def read_parquet(self, *parts: str, columns: list[str] | None = None) -> pl.DataFrame:
        target = self.path(*parts)
        if self.is_local():
            return pl.read_parquet(target, columns=columns)
        with target.open("rb") as handle:
            return pl.read_parquet(handle, columns=columns)

    def read_json(self, *parts: str) -> Any:
        return json.loads(self.path(*parts).read_text(encoding="utf-8"))

    # -- published inputs -----------------------------------------------------------------
    def manifest(self, *folder: str) -> dict | None:
        place = manifest_file(folder)
        return self.read_json(*place) if self.exists(*place) else None

    def publish(self, folder: Place, file_name: str, frame: pl.DataFrame | Path,
                manifest: dict, what: str) -> bool:
        """Publish ``frame`` (or a local Parquet file, moved in) under ``folder`` once. True
        when written, False when the same content was already there; different content under
        a published name is refused."""
        existing = self.manifest(*folder)
        if existing is not None:
            if existing["sha256"] == manifest["sha256"]:
                return False
            raise PublishConflict(
                f"{what} is already published with content sha256 {existing['sha256']}; the "
                f"landed input has sha256 {manifest['sha256']}. A published {what.split()[0]} "
                "is immutable: land the changed content under a new name."
            )
        if isinstance(frame, Path):
            self.put_file(frame, *folder, file_name)
        else:
            self.write_parquet(frame, *folder, file_name)
        # The manifest is written last: its presence is what marks the folder as published.
        self.write_json(manifest, *manifest_file(folder))
        return True


class LandingZone(dg.ConfigurableResource):
    """Where judgment files, pool folders and the queries table arrive."""

    folder: str = str(DEFAULT_LANDING)
    queries_path: str = str(DEFAULT_QUERIES)

    def root(self) -> Path:
        return Path(self.folder).resolve()

    def judgment_files(self, hashes: landing.FileHashes | None = None
                       ) -> tuple[list[landing.LandedItem], list[str]]:
        return landing.judgment_files(self.root(), hashes)

    def judgment_file(self, version: str) -> Path:
        return landing.judgment_file(self.root(), version)

    def pool_folders(self, hashes: landing.FileHashes | None = None
                     ) -> tuple[list[landing.LandedItem], list[str]]:
        return landing.pool_folders(self.root(), hashes)

    def pool_folder(self, pool: str) -> Path:
        landing.run_files(self.root(), pool)  # refuses entries that lead outside the landing
        return landing.pool_folder(self.root(), pool)

    def is_active(self, pool: str) -> bool:
        return landing.is_ready(self.root(), pool)

    def queries_file(self) -> Path:
        return Path(self.queries_path).resolve()


class ScoringEngine(dg.ConfigurableResource):
    """Which executor of the one kernel scores a pool x version (evaluation_pipeline.engines).

    ``auto`` streams Parquet inputs and reads small ones into memory (``engines.choice``);
    ``local`` reads both inputs into memory; ``streaming`` reads the published Parquet files in
    batches of whole queries (memory bounded by ``batch_rows``; from an object store, the files
    are copied to a local scratch folder first, ``orchestration.scoring``); ``spark``
    runs on a Spark session (any URL Spark reads) at ``spark_master`` (``spark://host:7077``,
    ``yarn``, ``k8s://...``); unset, a local session, or under spark-submit its ``--master``.
    """

    engine: str = AUTO
    batch_rows: int = DEFAULT_BATCH_ROWS
    spark_master: str | None = None

    def score(self, judgments_path: str, pool_path: str, spec, out_path: str, budget=None):
        if self.engine not in ENGINES:
            raise dg.Failure(f"engine {self.engine!r} is not one of {', '.join(ENGINES)}")
        return score_files(judgments_path, pool_path, spec, out_path, engine=self.engine,
                           batch_rows=self.batch_rows, progress=False,
                           spark_master=self.spark_master, budget=budget)


class QualityPolicy(dg.ConfigurableResource):
    """Thresholds of the asset checks."""

    # A pool whose rankers rank different candidate sets is not a pure reranker comparison:
    # True blocks scoring, False only warns.
    require_shared_candidates: bool = True
    # Warn when the mean judged@K of a ranker falls below this share.
    min_judged_at_k: float = 0.75
    # Warn when the share of incomplete queries rises by more than this against the previous
    # judgment version of the same pool.
    max_incomplete_share_increase: float = 0.0
