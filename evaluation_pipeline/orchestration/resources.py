"""Resources: where published inputs and results live, where inputs land, check thresholds, the
nightly watch's configuration, and the memory budget of the steps' sorts.

Environments differ by the values handed to these resources (a local folder or an fsspec URL
such as ``s3://bucket/ndcg``, with its storage options), never by a branch inside an asset.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import dagster as dg
import polars as pl
import pydantic
from upath import UPath

from evaluation_pipeline import settings
from evaluation_pipeline.evaluation import Lineage, read_lineage, read_with_lineage
from evaluation_pipeline.ingest.verify import Verified, verify_published
from evaluation_pipeline.io import (
    conditional,
    integrity,
    landing,
    leftovers,
    result_set,
)
from evaluation_pipeline.io.atomic import atomic_write, copy_file
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.io.datasets import dataset_columns, read_dataset, scan_dataset
from evaluation_pipeline.io.faults import check_write
from evaluation_pipeline.io.locations import is_remote, location
from evaluation_pipeline.io.object_lock import object_lock
from evaluation_pipeline.io.result_folder import put_result
from evaluation_pipeline.io.storage import (
    POOL_FILE,
    READY_MARKER,
    SPILL_FOLDER,
    STAGING_FOLDER,
    Place,
    manifest_file,
)
from evaluation_pipeline.metric.hashing import HASH_VERSION, sha256_of
from evaluation_pipeline.nightly.alerts import AlertSettings
from evaluation_pipeline.nightly.watch import WatchSettings
from evaluation_pipeline.report.config import ReportConfig
from schemas import CandidatePool, Judgments, validate
from schemas.errors import EvaluationError
from schemas.names import check_safe_name


def hash_version(manifest: dict) -> int:
    """The content hash version of a manifest's ``sha256``: a manifest written before hash
    versions were recorded holds version 1."""
    return manifest.get("hash_version", 1)


def field_of(variable: settings.Setting, *, read_when_used: bool = False, over: bool = False
             ) -> Any:
    """A resource field standing for ``variable``: its meaning, and its default (none for a
    location a deployment must name). ``read_when_used``: unset (None), the variable, else its
    default, is read when the field is used; ``over``: the field's entries go over the
    variable's."""
    if variable.required:
        return pydantic.Field(description=variable.meaning)
    if variable.development:  # named, or none (definitions.py gives the development default)
        return pydantic.Field(None, description=f"{variable.meaning} ({variable.default})")
    if read_when_used:
        return pydantic.Field(None, description=f"{variable.meaning} (unset: {variable.name}, "
                                                f"else {variable.default})")
    if over:
        return pydantic.Field(variable.value_default, description=f"{variable.meaning}, over "
                                                                  f"those of {variable.name}")
    return pydantic.Field(variable.value_default, description=variable.meaning)


class PublishConflict(EvaluationError):
    """A published name asked to hold different content: published inputs are immutable."""


class EvaluationStorage(dg.ConfigurableResource):
    """Published inputs and results under one base: a local folder or an fsspec URL.

    The layout is ``evaluation_pipeline.io.storage``. Every path component is a fixed word or a
    name checked by ``check_safe_name``; every write is atomic (temporary file, then rename or
    move).
    """

    # definitions.py reads NDCG_EVAL_STORAGE when it is not given.
    base: str = field_of(settings.STORAGE)
    # endpoint_url, client_kwargs, profile... (io.locations); credentials are the provider
    # chain's, never these.
    storage_options: dict[str, Any] = field_of(settings.STORAGE_OPTIONS, over=True)

    # -- paths ----------------------------------------------------------------------------
    def root(self) -> Path | UPath:
        where = location(self.base, self.storage_options)
        return where if is_remote(where) else Path(where).resolve()

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
            def _write(tmp: Path) -> None:  # the fault hook is atomic_write's
                with open(tmp, "wb") as handle:
                    produce(handle)
            atomic_write(target, _write)
            return str(target)
        # Object stores have no rename: write a temporary key beside the target, then move it.
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
        try:
            check_write(target)
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
        return self.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", *parts)

    def write_text(self, text: str, *parts: str) -> str:
        return self.write(parts, lambda h: h.write(text.encode()))

    def put_tree(self, local: Path, *parts: str) -> dict[str, str]:
        """Copy every file of a local folder (its subfolders too: a report's traces/) to the
        folder ``parts``, in the place of what it held: on a local storage built beside it and
        swapped in whole (io.result_set); on object storage every file first, then the marker
        of a complete result (io.result_folder). Keys: the files' paths under the folder."""
        files = {p.relative_to(local).as_posix(): p for p in sorted(local.rglob("*"))
                 if p.is_file()}
        target = self.path(*parts)
        if not self.is_local():
            put_result(files, target)
            return {name: str(target / name) for name in files}
        with result_set.replacing(Path(target)) as staging:
            for name, source in files.items():
                (staging / name).parent.mkdir(parents=True, exist_ok=True)
                copy_file(source, staging / name)
        return {name: str(target / name) for name in files}

    @contextmanager
    def locked(self, *parts: str) -> Iterator[None]:
        """Hold an exclusive lock on ``parts`` so that concurrent runs read, change and write a
        shared file one after the other: a lock file's ``flock`` on a local storage, a lease
        object created by a conditional write on a bucket (``io.object_lock``)."""
        target = self.path(*parts)
        if conditional.in_process(target):
            with conditional.IN_PROCESS_LOCK:
                yield
            return
        if not self.is_local():
            conditional.require(target, "/".join(parts))
            # A wait on a lease may last its 10 minutes: it is said in the run's log as a
            # warning (make run's terminal shows those), or on stderr outside a run.
            try:
                say = dg.OpExecutionContext.get().log.warning
            except dg.DagsterInvariantViolationError:
                import sys
                from functools import partial
                say = partial(print, file=sys.stderr, flush=True)
            with object_lock(target, settings.lock_timeout(), say=say):
                yield
            return
        import fcntl  # POSIX; the pipeline's local storage runs there

        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target.parent / f".{target.name}.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

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
        """A local scratch folder for writers that only take a local path: under the
        storage's STAGING_FOLDER when it is local (where the next run removes it if this one
        is killed), else in the system's temporary folder."""
        parent = Path(self.root()) / STAGING_FOLDER if self.is_local() else None
        prefix = ".ndcg-eval-" if parent is not None else "ndcg-eval-"
        with leftovers.scratch_folder(prefix, parent) as folder:
            yield folder

    def clean_leftovers(self, spill_dir: Path | None = None) -> list[Path]:
        """Finish or remove what killed writers left: a result folder whose swap was killed
        is put back, and abandoned temporary files and staging and scratch folders are
        removed, in the storage, the system's temporary folder and ``spill_dir`` (the steps'
        spill folder, wherever it is configured; io.leftovers: never one a live process
        holds). Returns what was removed."""
        removed = leftovers.sweep_scratch()
        if spill_dir is not None and Path(spill_dir) != Path(tempfile.gettempdir()):
            removed += leftovers.sweep_scratch(Path(spill_dir))
        if self.is_local():
            result_set.recover_tree(Path(self.root()))
            removed += leftovers.sweep([Path(self.root())], recursive=True)
        return removed

    # -- reads ----------------------------------------------------------------------------
    def read_parquet(self, *parts: str, columns: list[str] | None = None) -> pl.DataFrame:
        """The rows at ``parts`` as their writer left them: one file, or (Spark) a folder of
        parts beside its _SUCCESS and checksum files (``io.datasets``)."""
        return read_dataset(self.path(*parts), columns)

    def scan_parquet(self, *parts: str, columns: Sequence[str],
                     optional: Sequence[str] = ()) -> pl.LazyFrame:
        """``columns`` of the rows at ``parts`` (one file or a folder of parts) as a lazy scan
        when local, streamed by whatever collects it; on object storage, read. ``optional``:
        columns read too where the rows have them (files written before them lack them)."""
        where = self.path(*parts)
        if optional:
            stored = set(dataset_columns(where))
            columns = [*columns, *(c for c in optional if c in stored)]
        if is_remote(where):
            return read_dataset(where, list(columns)).lazy()
        return scan_dataset(where).select(columns)

    def read_scores(self, *parts: str, columns: Sequence[str] | None = None
                    ) -> tuple[pl.DataFrame, Lineage]:
        """Per-query rows at ``parts`` and their lineage, the lineage columns read only once
        (``evaluation.read_with_lineage``); ``columns``: only these of the others."""
        return read_with_lineage(self.path(*parts), columns=columns)

    def read_lineage(self, *parts: str) -> Lineage:
        """The lineage of the per-query rows at ``parts``, no row read."""
        return read_lineage(self.path(*parts))

    def read_json(self, *parts: str) -> Any:
        where = self.path(*parts)
        try:
            return json.loads(where.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            # Written whole (atomically) by this project: a torn one was damaged since.
            raise EvaluationError(
                f"{where}: not a whole JSON file ({exc}); it was cut short or changed after it "
                "was written. Restore it, or remove its folder for the pipeline to write it "
                "again from the landing") from None

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
            landed = manifest["sha256"]
            version = hash_version(existing)
            if version != hash_version(manifest):
                # Published under an earlier hash version: the landed content is hashed in
                # that version (once, in bounded memory) to compare like with like.
                kind = "pool" if file_name == POOL_FILE else "judgments"
                landed = (verify_published(frame, kind, version).sha256 if isinstance(
                    frame, Path) else sha256_of(kind, frame, version))
            if existing["sha256"] == landed:
                return False
            raise PublishConflict(
                f"{what} is already published with content sha256 {existing['sha256']}; the "
                f"landed input has sha256 {landed}. A published {what.split()[0]} "
                "is immutable: land the changed content under a new name."
            )
        if isinstance(frame, Path):
            self.put_file(frame, *folder, file_name)
        else:
            self.write_parquet(frame, *folder, file_name)
        # The manifest is written last: its presence is what marks the folder as published.
        self.write_json(self.stamped(manifest, (*folder, file_name)), *manifest_file(folder))
        return True

    def content_sha256(self, place: Place, kind: str, version: int = HASH_VERSION) -> Verified:
        """The published file at ``place`` checked again (its model's rules; raises
        ``InputError``) and its content hash in hash ``version`` (``kind``: "pool" or
        "judgments"). Local storage reads it batch by batch, in bounded memory."""
        if self.is_local():
            return verify_published(self.path(*place), kind, version)
        frame = self.read_parquet(*place)
        validate(CandidatePool if kind == "pool" else Judgments, frame, str(self.path(*place)))
        return Verified(sha256_of(kind, frame, version), frame.height)

    def stamped(self, manifest: dict, place: Place) -> dict:
        """``manifest`` with the stamp of the file just written at ``place`` (local storage:
        object stores keep no modification time worth comparing)."""
        if not self.is_local():
            return manifest
        return manifest | {"file": {"name": place[-1], **integrity.stamp(self.path(*place),
                                                                         manifest["sha256"])}}

    def as_published(self, place: Place, manifest: dict) -> bool:
        """The published file at ``place`` has the very bytes that were validated and hashed to
        ``manifest``'s content hash when it was published (hashed again). False for object
        stores, and for a manifest without such a stamp of that file."""
        recorded = manifest.get("file")
        if recorded is None or recorded["name"] != place[-1] or not self.is_local():
            return False
        return integrity.same_bytes(self.path(*place), recorded, manifest["sha256"])

    def alteration(self, folder: Place) -> str | None:
        """Why the published file of ``folder`` is no longer the one its manifest stamped, or
        None (also for a manifest without a stamp, published before stamps were kept)."""
        manifest = self.manifest(*folder)
        if manifest is None or "file" not in manifest or not self.is_local():
            return None
        recorded = manifest["file"]
        return integrity.alteration(self.path(*folder, recorded["name"]), recorded)


class LandingZone(dg.ConfigurableResource):
    """Where judgment files, pool folders, the queries table and the documents table arrive."""

    folder: str = field_of(settings.LANDING)
    queries_path: str = field_of(settings.QUERIES)
    # None: the deployment names no documents table (it does not judge, or names one per run).
    documents_path: str | None = field_of(settings.DOCUMENTS)

    def root(self) -> Path:
        return Path(self.folder).resolve()

    def judgment_files(self, hashes: landing.FileHashes | None = None
                       ) -> tuple[list[landing.LandedItem], list[landing.Skipped]]:
        return landing.judgment_files(self.root(), hashes)

    def judgment_file(self, version: str) -> Path:
        return landing.judgment_file(self.root(), version)

    def pool_folders(self, hashes: landing.FileHashes | None = None
                     ) -> tuple[list[landing.LandedItem], list[landing.Skipped]]:
        return landing.pool_folders(self.root(), hashes)

    def pool_folder(self, pool: str) -> Path:
        landing.run_files(self.root(), pool)  # refuses entries that lead outside the landing
        return landing.pool_folder(self.root(), pool)

    def is_active(self, pool: str) -> bool:
        return landing.is_ready(self.root(), pool)

    def ready_at_ns(self, pool: str) -> int:
        """When the pool's READY_MARKER appeared (its modification time): the night's time."""
        return (self.pool_folder(pool) / READY_MARKER).stat().st_mtime_ns

    def queries_file(self) -> Path:
        return Path(self.queries_path).resolve()

    def documents_file(self) -> Path | None:
        """The documents table, or None when none is named."""
        return Path(self.documents_path).resolve() if self.documents_path else None


class QualityPolicy(dg.ConfigurableResource):
    """Thresholds of the asset checks, and which pools a new judgment version is scored
    against."""

    # A pool whose rankers rank different candidate sets is not a pure reranker comparison:
    # True blocks scoring, False only warns.
    require_shared_candidates: bool = True
    # Warn when the mean judged@K of a ranker falls below this share.
    min_judged_at_k: float = 0.75
    # Warn when the share of incomplete queries rises by more than this against the previous
    # judgment version of the same pool.
    max_incomplete_share_increase: float = 0.0
    backfill_nights: int | None = field_of(settings.BACKFILL_NIGHTS, read_when_used=True)

    def backfill(self) -> int:
        """The backfill window in nights (0: every night), checked by the setting's rule."""
        return settings.BACKFILL_NIGHTS.given(self.backfill_nights)


class NightlyWatch(dg.ConfigurableResource):
    """The nightly watch: verdict thresholds, a pinned baseline pool, and where alerts go.

    A verdict is ``regressed`` when the Holm-adjusted p is below ``alpha`` and the drop is at
    least ``min_effect``; ``power``: that of each comparison's detectable effect. Unset,
    ``baseline_pool`` and ``alert_webhook`` fall back to NDCG_EVAL_BASELINE_POOL and
    NDCG_EVAL_ALERT_WEBHOOK, read when a report is written.
    """

    alpha: float = field_of(settings.ALPHA)
    min_effect: float = field_of(settings.MIN_EFFECT)
    power: float = field_of(settings.POWER)
    baseline_pool: str | None = field_of(settings.BASELINE_POOL, read_when_used=True)
    # Without a webhook, alerts are recorded in history/alerts.jsonl and logged only.
    alert_webhook: str | None = field_of(settings.ALERT_WEBHOOK, read_when_used=True)

    def settings(self, config: ReportConfig) -> WatchSettings:
        """The watch's settings; its statistics are the report's (level, resamples, seed)."""
        return WatchSettings(
            alpha=self.alpha, min_effect=self.min_effect, power=self.power,
            baseline_pool=self.baseline_pool or settings.BASELINE_POOL.get() or None,
            ci_level=config.ci_level, n_bootstrap=config.n_bootstrap, seed=config.seed,
        )

    def alert_settings(self) -> AlertSettings:
        return AlertSettings.from_env(self.alert_webhook)


class MemoryBudget(dg.ConfigurableResource):
    """The steps' memory budget ("2GB", "512MB") and spill folder, each unset read from its
    variable when a step runs (else 2GB; SPILL_FOLDER under a local storage, else the system's
    temporary folder)."""

    memory_limit: str | None = field_of(settings.MEMORY_LIMIT, read_when_used=True)
    spill_dir: str | None = field_of(settings.SPILL_DIR, read_when_used=True)

    def budget(self, storage: EvaluationStorage) -> Budget:
        """The budget, checked: a size that is not one, or a spill folder that cannot be
        written, fails the step before it reads anything."""
        folder = self.spill_dir or settings.SPILL_DIR.get() or (
            # Beside the published files: one file system, so a staged file is renamed in.
            storage.root() / SPILL_FOLDER if storage.is_local() else None)
        try:
            budget = Budget.of(self.memory_limit, folder)
            budget.check_spill_dir()
        except ValueError as exc:
            raise dg.Failure(str(exc)) from None
        return budget
