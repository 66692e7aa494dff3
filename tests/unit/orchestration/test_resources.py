"""Pieces of the pipeline that need no Dagster run: landing, storage, quality facts, spec."""

import os
import shutil
from pathlib import Path

import polars as pl
import pytest

from evaluation_pipeline.aggregation.comparison import candidate_set_differences
from evaluation_pipeline.analysis import quality
from evaluation_pipeline.io import landing
from evaluation_pipeline.io.readers import read_pool
from evaluation_pipeline.io.storage import JUDGMENTS_FILE
from evaluation_pipeline.metric.hashing import HASH_VERSION, judgments_sha256, sha256_of
from evaluation_pipeline.orchestration.assets import evaluation_code_version
from evaluation_pipeline.orchestration.checks import _published_check
from evaluation_pipeline.orchestration.resources import (
    EvaluationStorage,
    PublishConflict,
)
from evaluation_pipeline.orchestration.scoring import ScoringEngine
from evaluation_pipeline.spec import EvaluationSpec
from schemas.errors import EvaluationError
from schemas.names import UnsafeNameError
from tests.support.paths import EXAMPLES

POOL = EXAMPLES / "landing" / "pools" / "pool-2026-11-28"


@pytest.fixture
def landed(tmp_path: Path) -> Path:
    root = tmp_path / "landing"
    (root / "judgments").mkdir(parents=True)
    shutil.copy(EXAMPLES / "landing" / "judgments" / "maint-v1.csv", root / "judgments")
    shutil.copytree(POOL, root / "pools" / POOL.name)
    return root


def test_landing_lists_versions_and_ready_pools(landed: Path):
    (landed / "pools" / "not-ready").mkdir()
    shutil.copy(POOL / "bm25-v3.parquet", landed / "pools" / "not-ready")
    versions, skipped = landing.judgment_files(landed)
    pools, pool_skipped = landing.pool_folders(landed)
    assert [v.name for v in versions] == ["maint-v1"] and not skipped
    assert [p.name for p in pools] == [POOL.name] and not pool_skipped
    assert len(versions[0].files_sha256) == 64


def test_landing_refuses_symlinks_that_leave_the_folder(landed: Path, tmp_path: Path):
    outside = tmp_path / "elsewhere.csv"
    shutil.copy(EXAMPLES / "landing" / "judgments" / "maint-v2.csv", outside)
    os.symlink(outside, landed / "judgments" / "maint-v2.csv")
    os.symlink(tmp_path / "elsewhere.csv", landed / "pools" / POOL.name / "extra.csv")
    versions, skipped = landing.judgment_files(landed)
    assert [v.name for v in versions] == ["maint-v1"]
    assert len(skipped) == 1 and "outside the landing folder" in skipped[0]
    with pytest.raises(landing.LandingError, match="outside the landing folder") as refused:
        landing.judgment_file(landed, "maint-v2")
    assert isinstance(refused.value, EvaluationError)  # a user's mistake, told as a message
    with pytest.raises(landing.LandingError, match="outside the landing folder"):
        landing.run_files(landed, POOL.name)
    pools, pool_skipped = landing.pool_folders(landed)
    assert pools == [] and "outside the landing folder" in pool_skipped[0]


def test_landing_skips_unsafe_names(landed: Path):
    shutil.copy(EXAMPLES / "landing" / "judgments" / "maint-v2.csv",
                landed / "judgments" / "maint v2.csv")
    versions, skipped = landing.judgment_files(landed)
    assert [v.name for v in versions] == ["maint-v1"]
    assert "refused" in skipped[0]


@pytest.mark.parametrize("base", ["local", "memory"])
def test_storage_publishes_once_and_refuses_different_content(base: str, tmp_path: Path):
    storage = EvaluationStorage(base=str(tmp_path / "store") if base == "local"
                                else f"memory://ndcg-test-{os.getpid()}")
    frame = pl.DataFrame({"query_id": ["q1", "q2"], "grade": [1, 2]})
    assert storage.publish(("judgments", "v1"), "judgments.parquet", frame,
                           {"sha256": "a" * 64}, "judgment version 'v1'") is True
    assert storage.read_parquet("judgments", "v1", "judgments.parquet").equals(frame)
    before = storage.path("judgments", "v1", "judgments.parquet").read_bytes()
    # The same content again writes nothing.
    assert storage.publish(("judgments", "v1"), "judgments.parquet", frame.head(1),
                           {"sha256": "a" * 64}, "judgment version 'v1'") is False
    assert storage.path("judgments", "v1", "judgments.parquet").read_bytes() == before
    with pytest.raises(PublishConflict, match="already published with content sha256 a+; the "
                       "landed input has sha256 b+") as conflict:
        storage.publish(("judgments", "v1"), "judgments.parquet", frame.head(1),
                        {"sha256": "b" * 64}, "judgment version 'v1'")
    assert isinstance(conflict.value, EvaluationError)
    names = [p.name for p in storage.path("judgments", "v1").iterdir()]
    assert sorted(names) == ["judgments.parquet", "manifest.json"]  # no temporary left over


@pytest.mark.parametrize("old_version", [1, 2])
@pytest.mark.parametrize("base", ["local", "memory"])
def test_a_version_published_under_an_earlier_hash_version_stays_comparable(
        base: str, old_version: int, tmp_path: Path):
    """A manifest without ``hash_version`` holds the version-1 hash, one with 2 the version-2
    hash: landing the same content again is a no-op, other content is refused, and the
    published-file check passes, each compared in the manifest's version."""
    storage = EvaluationStorage(base=str(tmp_path / "store") if base == "local"
                                else f"memory://ndcg-test-v{old_version}-{os.getpid()}")
    frame = pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "a"],
                          "grade": [1, None, 0], "grade_status": ["graded", "unknown", "graded"],
                          "judgment_version": ["v1"] * 3})
    old = sha256_of("judgments", frame, version=old_version)
    assert old != judgments_sha256(frame)
    place = ("judgments", "v1")
    recorded = {"sha256": old} if old_version == 1 else {"sha256": old, "hash_version": 2}
    storage.publish(place, JUDGMENTS_FILE, frame, recorded, "judgment version 'v1'")
    assert _published_check(storage, (*place, JUDGMENTS_FILE), "judgments", "v1").passed
    current = {"sha256": judgments_sha256(frame), "hash_version": HASH_VERSION}
    assert storage.publish(place, JUDGMENTS_FILE, frame.reverse(), current, "v1") is False
    changed = frame.with_columns(grade=pl.Series([2, None, 0]))
    with pytest.raises(PublishConflict, match=f"content sha256 {old}; the landed input has "
                       f"sha256 {sha256_of('judgments', changed, version=old_version)}"):
        storage.publish(place, JUDGMENTS_FILE, changed, {
            "sha256": judgments_sha256(changed), "hash_version": HASH_VERSION}, "v1")
    storage.write_json({"sha256": old, "hash_version": HASH_VERSION}, *place, "manifest.json")
    assert not _published_check(storage, (*place, JUDGMENTS_FILE), "judgments", "v1").passed


def test_a_landed_file_spelling_two_rows_in_one_id_is_not_the_published_version(
        tmp_path: Path):
    """Under hash version 2, one row whose doc_id holds a tab and a newline hashed as the two
    rows it spells, so a version replaced by it was taken as unchanged. Now it is refused."""
    storage = EvaluationStorage(base=str(tmp_path / "store"))
    two = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "grade": [3, 1],
                        "grade_status": ["graded", "graded"], "judgment_version": ["B"] * 2})
    one = pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1\t3\tgraded\nq1\td2"], "grade": [1],
                        "grade_status": ["graded"], "judgment_version": ["B"]})
    assert sha256_of("judgments", one, 2) == sha256_of("judgments", two, 2)
    place = ("judgments", "B")
    storage.publish(place, JUDGMENTS_FILE, two, {
        "sha256": judgments_sha256(two), "hash_version": HASH_VERSION}, "judgment version 'B'")
    with pytest.raises(PublishConflict, match="immutable"):
        storage.publish(place, JUDGMENTS_FILE, one, {
            "sha256": judgments_sha256(one), "hash_version": HASH_VERSION},
            "judgment version 'B'")


def test_published_check_proves_unchanged_bytes_without_reading_rows(tmp_path: Path,
                                                                     monkeypatch):
    """A published file with the bytes stamped at publish passes on their SHA-256 alone; other
    bytes (even of the same rows) are read and hashed again, and a manifest whose content hash
    is not the stamped one is never taken on the stamp's word."""
    storage = EvaluationStorage(base=str(tmp_path / "store"))
    frame = pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "a"],
                          "grade": [1, None, 0], "grade_status": ["graded", "unknown", "graded"],
                          "judgment_version": ["v1"] * 3})
    place = ("judgments", "v1")
    manifest = {"sha256": judgments_sha256(frame), "hash_version": HASH_VERSION, "rows": 3}
    storage.publish(place, JUDGMENTS_FILE, frame, manifest, "judgment version 'v1'")
    read_again = []
    real = EvaluationStorage.content_sha256
    monkeypatch.setattr(EvaluationStorage, "content_sha256",
                        lambda self, *a: read_again.append(a) or real(self, *a))

    result = _published_check(storage, (*place, JUDGMENTS_FILE), "judgments", "v1")
    assert result.passed and read_again == []
    assert result.metadata["verified"].value == "file bytes as published"
    assert result.metadata["rows"].value == 3

    path = storage.path(*place, JUDGMENTS_FILE)
    published = path.read_bytes()
    frame.write_parquet(path, compression="uncompressed")  # the same rows, other bytes
    result = _published_check(storage, (*place, JUDGMENTS_FILE), "judgments", "v1")
    assert result.passed and len(read_again) == 1
    assert result.metadata["verified"].value == "content read again"

    frame.with_columns(grade=pl.Series([2, None, 0])).write_parquet(path)
    assert not _published_check(storage, (*place, JUDGMENTS_FILE), "judgments", "v1").passed

    path.write_bytes(published)  # the stamped bytes, under another content hash
    stamped = storage.read_json(*place, "manifest.json")
    storage.write_json(stamped | {"sha256": "0" * 64}, *place, "manifest.json")
    assert not _published_check(storage, (*place, JUDGMENTS_FILE), "judgments", "v1").passed


def test_storage_write_is_atomic_on_failure(tmp_path: Path):
    storage = EvaluationStorage(base=str(tmp_path / "store"))
    storage.write_json({"n": 1}, "reports", "x.json")

    def fail(handle):
        handle.write(b"partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        storage.write(("reports", "x.json"), fail)
    assert storage.read_json("reports", "x.json") == {"n": 1}
    assert [p.name for p in storage.path("reports").iterdir()] == ["x.json"]


def test_storage_builds_paths_only_from_safe_names(tmp_path: Path):
    storage = EvaluationStorage(base=str(tmp_path))
    for bad in ("..", "a/b", "", "x y"):
        with pytest.raises(UnsafeNameError):
            storage.path("judgments", bad)


def test_candidate_set_differences_and_ranker_counts_of_a_landed_pool():
    pool = read_pool(POOL)
    assert candidate_set_differences(pool).height == 0
    first_query = pool["query_id"].min()
    dropped = pool.filter(~((pl.col("ranker") == "bm25-v3") & (pl.col("query_id") == first_query)
                            & (pl.col("doc_id") == pool.filter(
                                pl.col("query_id") == first_query)["doc_id"].min())))
    differing = candidate_set_differences(dropped)
    assert differing["query_id"].to_list() == [first_query]
    # A query that only some rankers answered differs too, whatever documents they gave.
    last_query = pool["query_id"].max()
    unanswered = pool.filter((pl.col("ranker") != "dense-v2") | (pl.col("query_id") != last_query))
    assert candidate_set_differences(unanswered)["query_id"].to_list() == [last_query]
    counts = quality.ranker_counts(pool)
    assert counts["ranker"].to_list() == ["bm25-v3", "dense-v2", "hybrid-v1"]
    assert counts["n_candidates"].sum() == pool.height


def test_grade_distribution_counts_unknown_apart():
    judgments = pl.DataFrame(
        {"grade": [0, 2, 2, None], "grade_status": ["graded", "graded", "graded", "unknown"]},
        schema_overrides={"grade": pl.Int64},
    )
    assert quality.grade_distribution(judgments) == {"0": 1, "2": 2, "unknown": 1}


def test_code_version_follows_the_spec():
    default, linear = EvaluationSpec(), EvaluationSpec(gain="linear")
    assert default.spec_id in evaluation_code_version(default)
    assert evaluation_code_version(default) != evaluation_code_version(linear)


def test_scoring_is_in_a_concurrency_pool_that_the_local_instance_limits(tmp_path):
    import dagster as dg

    from evaluation_pipeline.definitions import build_definitions
    from evaluation_pipeline.main_job import MAX_CONCURRENT_RUNS, prepare_instance_home
    from evaluation_pipeline.orchestration.assets import SCORING_POOL

    defs = build_definitions(storage_base=str(tmp_path / "storage"))
    # Resolved inside the instance's context: Dagster reads its definitions state from the
    # current instance, which an earlier test's instance must not stand in for.
    with dg.DagsterInstance.from_config(str(prepare_instance_home(tmp_path / "home"))) as instance:
        assert defs.resolve_assets_def("query_scores").op.pool == SCORING_POOL
        config = instance.get_concurrency_config()
        assert config.pool_config.default_pool_limit == MAX_CONCURRENT_RUNS
        assert config.run_queue_config.max_concurrent_runs == MAX_CONCURRENT_RUNS


@pytest.mark.parametrize("engine, ingest", [("spark", "evaluation_pipeline.engines.spark.ingest"),
                                            ("local", "evaluation_pipeline.ingest.publish"),
                                            ("auto", "evaluation_pipeline.ingest.publish")])
def test_the_engine_resource_hands_in_ingest(engine, ingest, monkeypatch, tmp_path):
    """Ingest runs on Spark when the engine is Spark (the session at its master), else here."""
    from evaluation_pipeline.engines.spark import ingest as spark_ingest
    from evaluation_pipeline.ingest import publish as bounded_ingest

    calls = []
    for module in (bounded_ingest, spark_ingest):
        for function in ("publish_pool", "publish_judgments"):
            monkeypatch.setattr(module, function, lambda *args, _f=function, _m=module, **kw:
                                calls.append((_m.__name__, _f, args, kw)))
    resource = ScoringEngine(engine=engine, spark_master="local[1]")
    resource.publish_pool(tmp_path / "pool", tmp_path / "out", pool="p", budget=None)
    resource.publish_judgments(tmp_path / "v.csv", tmp_path / "out", version="v")
    # Spark's ingest gets the session at the master (none given: it starts one there).
    master = {"master": "local[1]", "spark": None} if engine == "spark" else {}
    assert calls == [
        (ingest, "publish_pool", (tmp_path / "pool", tmp_path / "out"),
         {**master, "pool": "p", "budget": None}),
        (ingest, "publish_judgments", (tmp_path / "v.csv", tmp_path / "out"),
         {**master, "version": "v"})]
