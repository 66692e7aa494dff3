"""One Dagster instance, two storages: what is done is done for the storage it was written to.

The real main job in a subprocess, on the bundled landing (two judgment versions, two pools):
switching ``NDCG_EVAL_STORAGE`` on the same ``DAGSTER_HOME`` from a local folder to a bucket (an
S3-API server on 127.0.0.1) publishes and evaluates everything in the bucket, and back again;
and the main job never exits 0 while the landing holds an input that its storage lacks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from evaluation_pipeline import settings
from evaluation_pipeline.orchestration.resources import PublishConflict
from tests.support.paths import EXAMPLES, REPO
from tests.support.refusals import assert_names

MAIN_TIMEOUT = 900
EVALUATIONS = 4  # 2 judgment versions x 2 pools


def main_job(root: Path, storage, extra: dict[str, str] | None = None) -> tuple[int, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("NDCG_EVAL_")} | {
        settings.LANDING.name: str(root / "landing"),
        settings.QUERIES.name: str(root / "queries.csv"),
        settings.STORAGE.name: str(storage),
        # The bucket's endpoint (the S3 server's fixture sets it), when there is one.
        settings.STORAGE_OPTIONS.name: settings.STORAGE_OPTIONS.get() or "",
        "DAGSTER_HOME": str(root / "home"),
        "PYTHONPATH": str(REPO),
    } | (extra or {})
    done = subprocess.run([sys.executable, "-m", "evaluation_pipeline.main_job"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=MAIN_TIMEOUT)
    return done.returncode, done.stdout + done.stderr


def reports(storage) -> list[str]:
    return sorted(str(p.parent.relative_to(storage)) for p in storage.rglob("report.json"))


def objects(storage) -> dict[str, str]:
    """Every object of a bucket's storage with its ETag: what changes when anything is
    rewritten."""
    storage.fs.invalidate_cache()
    return {k: info["ETag"] for k, info in storage.fs.find(storage.path, detail=True).items()}


def landed(root: Path) -> Path:
    shutil.copytree(EXAMPLES / "landing", root / "landing")
    shutil.copy(EXAMPLES / "queries.csv", root / "queries.csv")
    return root


def test_switching_the_storage_of_one_instance_to_a_bucket_and_back(tmp_path: Path, endpoint):
    from evaluation_pipeline.io.locations import location
    from tests.support.s3_server import BUCKET

    root = landed(tmp_path)
    first, bucket = tmp_path / "first", location(f"s3://{BUCKET}/switch")
    code, output = main_job(root, first)
    assert code == 0, output
    assert len(reports(first)) == EVALUATIONS
    code, output = main_job(root, bucket)  # the same content, already ingested elsewhere
    assert code == 0, output
    assert reports(bucket) == reports(first)
    for storage in (first, bucket):
        assert (storage / "queries" / "manifest.json").is_file()
        assert len(list((storage / "judgments").glob("*/manifest.json"))) == 2
    assert not (root / "s3:").exists()
    code, output = main_job(root, first)  # back: nothing new, everything still whole
    assert code == 0, output
    assert "nothing new in the landing folder" in output
    assert len(reports(first)) == EVALUATIONS

    # The bucket again: nothing new, nothing rewritten.
    written = objects(bucket)
    code, output = main_job(root, bucket)
    assert code == 0 and "nothing new in the landing folder" in output, output
    assert objects(bucket) == written
    # A changed judgment version under a published name is refused; the published one stays.
    changed = root / "landing" / "judgments" / "maint-v2.csv"
    lines = changed.read_text().splitlines()
    changed.write_text("\n".join([lines[0], *lines[2:]]) + "\n")
    code, output = main_job(root, bucket)
    assert code != 0, output
    assert_names(output, PublishConflict.__name__, "'maint-v2'")
    manifest = [k for k in written if k.endswith("judgments/maint-v2/manifest.json")]
    assert {k: v for k, v in objects(bucket).items() if k in manifest} == {
        k: written[k] for k in manifest}


def test_the_main_job_exits_1_naming_what_the_storage_lacks(tmp_path: Path):
    """A published pool deleted from the storage is published again from the landing; while
    that cannot be done (here its write fails), the job exits 1 naming the pool."""
    root = landed(tmp_path)
    storage = tmp_path / "storage"
    code, output = main_job(root, storage)
    assert code == 0, output
    # The instance remembers this pool as ingested into this storage; the storage lost it.
    (pool,) = [p for p in (storage / "pools").iterdir() if p.name.endswith("11-29")]
    shutil.rmtree(pool)
    code, output = main_job(root, storage, {settings.FAIL_WRITE.name: "candidates.parquet"})
    assert code == 1, output
    # The storage that lacks it, the pool, and where it was landed.
    assert_names(output, str(storage), pool.name, str(root / "landing" / "pools" / pool.name))
    code, output = main_job(root, storage)  # the write works again: published anew
    assert code == 0, output
    assert (pool / "manifest.json").is_file()
