"""A landing whose spill folder (``NDCG_EVAL_SPILL_DIR``) is a full disk of its own fails naming
the spill folder and what to do, not the storage it never wrote; a full storage is still named
by its file. On real small disks (tmpfs: root only, else skipped)."""

from __future__ import annotations

import errno
import os
import re

import dagster as dg
import numpy as np
import polars as pl
import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.orchestration.ingest_assets import judgments
from evaluation_pipeline.orchestration.partitions import judgment_version_partitions
from evaluation_pipeline.orchestration.resources import (
    EvaluationStorage,
    LandingZone,
    MemoryBudget,
)
from evaluation_pipeline.orchestration.scoring import ScoringEngine
from tests.support.refusals import assert_names
from tests.support.small_disk import small_disk

VERSION = "maint-v1"


@pytest.fixture(scope="module")
def instance():
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(judgment_version_partitions.name, [VERSION])
        yield instance


def _grades(rows: int) -> pl.DataFrame:
    rng = np.random.default_rng(4)
    return pl.DataFrame({
        "query_id": [f"q{q}" for q in rng.integers(0, rows // 20, rows)],
        "doc_id": [f"https://example.org/docs/{d}" for d in range(rows)],
        "grade": rng.integers(0, 4, rows), "grade_status": "graded"})


def _land(landing, landed: str, rows: int) -> None:
    """The version as CSV, or as Parquet whose grade is text (not the contract's type: read
    whole by its reader, then spilled)."""
    folder = landing / "judgments"
    folder.mkdir(parents=True)
    grades = _grades(rows)
    if landed == "csv":
        grades.write_csv(folder / f"{VERSION}.csv")
    else:
        grades.with_columns(pl.col("grade").cast(pl.String)).write_parquet(
            folder / f"{VERSION}.parquet")


def _ingest(instance, landing, storage) -> dict[str, str]:
    """The step's errors, read down through Dagster's wrapping to its cause: each class's name
    and its message."""
    result = dg.materialize(
        [judgments], partition_key=VERSION, instance=instance, raise_on_error=False,
        resources={"landing": LandingZone(folder=str(landing),
                                               queries_path=str(landing / "q.csv")),
                   "storage": EvaluationStorage(base=str(storage)),
                   "memory": MemoryBudget(), "scoring": ScoringEngine()})
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.error
    chain = {}
    while failure is not None:
        chain[failure.cls_name] = failure.message
        failure = failure.cause
    return chain


def _published(storage) -> list:
    return list(storage.rglob("judgments.parquet")) if storage.exists() else []


@pytest.mark.parametrize("landed", ["csv", "parquet"])
def test_a_full_spill_folder_is_named_not_the_storage(instance, tmp_path, monkeypatch, landed):
    """The landed file's spilled copy does not fit: the spill folder is named, with its free
    space and the setting that moves it; no polars ComputeError, no storage file blamed."""
    landing, storage = tmp_path / "landing", tmp_path / "storage"
    _land(landing, landed, 100_000)
    with small_disk(tmp_path / "spill", "256k") as spill:
        monkeypatch.setenv(settings.SPILL_DIR.name, str(spill))
        chain = _ingest(instance, landing, storage)
        assert "SpillFolderFull" in chain and "WriteFailed" not in chain, chain
        said = assert_names(chain["SpillFolderFull"], repr(str(spill)), "--spill-dir",
                            settings.SPILL_DIR.name, "--memory-limit",
                            settings.MEMORY_LIMIT.name, absent=["ComputeError"])
        assert re.search(r"\b[\d.]+(B|MB|GB) free\b", said), said  # the free space left
        assert list(spill.iterdir()) == []
    assert _published(storage) == []


def test_a_published_file_stopped_in_the_spill_folder_names_the_spill_folder(
        instance, tmp_path, monkeypatch):
    """The published file is written in the spill folder before it is moved into the storage:
    a full disk there (injected, as the recovery tests inject it) is the spill folder's when it
    is a disk of its own, though the file was bound for the storage."""
    landing, storage = tmp_path / "landing", tmp_path / "storage"
    _land(landing, "csv", 1000)
    with small_disk(tmp_path / "spill", "64m") as spill:
        monkeypatch.setenv(settings.SPILL_DIR.name, str(spill))
        monkeypatch.setenv(settings.FAIL_WRITE.name, "judgments.parquet")
        chain = _ingest(instance, landing, storage)
        bound_for = storage / "judgments" / VERSION / "judgments.parquet"
        assert "SpillFolderFull" in chain and "WriteFailed" not in chain, chain
        # The file it was bound for, and the spill folder; not its staging name there.
        assert_names(chain["SpillFolderFull"], str(bound_for), repr(str(spill)),
                     settings.SPILL_DIR.name, absent=["ndcg-eval-"])
    assert _published(storage) == []


def test_a_full_storage_is_still_named_by_its_file(instance, tmp_path, monkeypatch):
    """The other side (it held before the spill folder was told apart, and must still): the
    spill folder has room, the storage's disk has not."""
    landing = tmp_path / "landing"
    _land(landing, "csv", 100_000)
    monkeypatch.setenv(settings.SPILL_DIR.name, str(tmp_path / "spill"))
    with small_disk(tmp_path / "storage", "256k") as storage:
        chain = _ingest(instance, landing, storage)
        published = storage / "judgments" / VERSION / "judgments.parquet"
        assert "WriteFailed" in chain and "SpillFolderFull" not in chain, chain
        # docs/reliability.md gives this line's form, "could not write <file>: <reason>".
        assert f"could not write {published}: {os.strerror(errno.ENOSPC)}" in chain["WriteFailed"]
