"""The scoring of published inputs takes their published content hashes when their files hold
the bytes their publish hashed, and hashes them again otherwise: no other bytes, same result."""

from __future__ import annotations

import dagster as dg
import polars as pl
import pytest

from evaluation_pipeline.engines import score_files
from evaluation_pipeline.io.readers import read_candidates, read_judgments
from evaluation_pipeline.io.storage import (
    JUDGMENTS_FILE,
    POOL_FILE,
    judgments_folder,
    pool_folder,
    scores_file,
)
from evaluation_pipeline.metric import hashing
from evaluation_pipeline.orchestration.resources import EvaluationStorage
from evaluation_pipeline.orchestration.scoring import ScoringEngine, score_evaluation
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.paths import EXAMPLES

LANDING = EXAMPLES / "landing"
POOL, VERSION = "pool-2026-11-28", "maint-v1"
SPEC = EvaluationSpec(cutoffs=(5, 10), ideal="all_judged")


@pytest.fixture
def published(tmp_path) -> EvaluationStorage:
    storage = EvaluationStorage(base=str(tmp_path / "store"))
    pool = read_candidates(LANDING / "pools" / POOL, pool=POOL).sort(
        "ranker", "query_id", "doc_id")
    grades = read_judgments(LANDING / "judgments" / f"{VERSION}.csv").sort("query_id", "doc_id")
    storage.publish(pool_folder(POOL), POOL_FILE, pool, {
        "sha256": hashing.pool_sha256(pool), "hash_version": hashing.HASH_VERSION,
        "published_at": "2026-11-28T00:00:00+00:00"}, f"candidate pool {POOL!r}")
    storage.publish(judgments_folder(VERSION), JUDGMENTS_FILE, grades, {
        "sha256": hashing.judgments_sha256(grades), "hash_version": hashing.HASH_VERSION,
        "published_at": "2026-11-28T00:00:00+00:00"}, f"judgment version {VERSION!r}")
    return storage


def _count_hashing(monkeypatch) -> list[str]:
    """Every content hash an engine computes, by kind."""
    calls: list[str] = []
    real_update = hashing.StreamingDigest.update

    def update(self, piece):
        calls.append(self._kind)
        return real_update(self, piece)

    monkeypatch.setattr(hashing.StreamingDigest, "update", update)
    for module, name in (("evaluation_pipeline.engines.local", "judgments_sha256"),
                         ("evaluation_pipeline.evaluation", "pool_sha256"),
                         ("evaluation_pipeline.evaluation", "judgments_sha256")):
        real = getattr(__import__(module, fromlist=[name]), name)
        kind = name.split("_")[0]
        monkeypatch.setattr(f"{module}.{name}",
                            lambda *a, _real=real, _kind=kind, **k: calls.append(_kind)
                            or _real(*a, **k))
    return calls


def _paths(storage):
    return (storage.path(*judgments_folder(VERSION), JUDGMENTS_FILE),
            storage.path(*pool_folder(POOL), POOL_FILE),
            storage.path(*scores_file(POOL, VERSION, SPEC.spec_id)))


@pytest.mark.parametrize("engine", ["local", "streaming"])
def test_published_bytes_are_not_hashed_again_and_score_the_same(published, tmp_path,
                                                                 monkeypatch, engine):
    judgments, pool, scores = _paths(published)
    reference = score_files(judgments, pool, SPEC, tmp_path / "reference.parquet",
                            engine=engine, progress=False)
    calls = _count_hashing(monkeypatch)
    result = score_evaluation(published, ScoringEngine(engine=engine), POOL, VERSION, SPEC)
    assert calls == []
    assert result.lineage == reference.lineage
    assert scores.read_bytes() == (tmp_path / "reference.parquet").read_bytes()


@pytest.mark.parametrize("engine", ["local", "streaming"])
def test_other_bytes_of_the_same_rows_are_hashed_and_pass(published, monkeypatch, engine):
    judgments, pool, scores = _paths(published)
    pl.read_parquet(pool).write_parquet(pool, compression="uncompressed")
    calls = _count_hashing(monkeypatch)
    result = score_evaluation(published, ScoringEngine(engine=engine), POOL, VERSION, SPEC)
    assert "pool" in calls and "judgments" not in calls
    assert result.lineage.pool_sha256 == published.manifest(*pool_folder(POOL))["sha256"]


@pytest.mark.parametrize("engine", ["local", "streaming"])
def test_altered_content_fails_the_scoring(published, engine):
    judgments, _, _ = _paths(published)
    grades = pl.read_parquet(judgments)
    grades.with_columns(grade=pl.when(pl.col("grade_status") == "graded")
                        .then(3 - pl.col("grade"))).write_parquet(judgments)
    with pytest.raises(dg.Failure, match="stored judgments content has sha256 .* was "
                                         "published: the storage was altered"):
        score_evaluation(published, ScoringEngine(engine=engine), POOL, VERSION, SPEC)


SECOND = "maint-v2"


@pytest.fixture
def two_versions(published) -> EvaluationStorage:
    """``published`` with a second version, published later, that regrades one query: the
    second version's scoring starts from the first's scores (the increment)."""
    grades = pl.read_parquet(published.path(*judgments_folder(VERSION), JUDGMENTS_FILE))
    first_query = grades["query_id"].min()
    second = grades.with_columns(
        grade=pl.when((pl.col("query_id") == first_query) & (pl.col("grade_status") == "graded"))
        .then(3 - pl.col("grade")).otherwise(pl.col("grade")),
        judgment_version=pl.lit(SECOND))
    published.publish(judgments_folder(SECOND), JUDGMENTS_FILE, second, {
        "sha256": hashing.judgments_sha256(second), "hash_version": hashing.HASH_VERSION,
        "published_at": "2026-11-29T00:00:00+00:00"}, f"judgment version {SECOND!r}")
    score_evaluation(published, ScoringEngine(), POOL, VERSION, SPEC)
    return published


def test_the_increment_scores_published_bytes_as_a_full_scoring_does(two_versions, tmp_path):
    result = score_evaluation(two_versions, ScoringEngine(), POOL, SECOND, SPEC)
    assert result.engine == "incremental"
    full = score_files(two_versions.path(*judgments_folder(SECOND), JUDGMENTS_FILE),
                       two_versions.path(*pool_folder(POOL), POOL_FILE), SPEC,
                       tmp_path / "full.parquet", progress=False)
    assert result.lineage == full.lineage
    assert (two_versions.path(*scores_file(POOL, SECOND, SPEC.spec_id)).read_bytes()
            == (tmp_path / "full.parquet").read_bytes())


@pytest.mark.parametrize("altered", ["pool", "version", "earlier version"])
def test_an_altered_input_is_not_scored_from_earlier_scores(two_versions, altered):
    """The increment reads the pool's candidates and both versions' rows: a file that no longer
    holds its published bytes is found out as a full scoring finds it, never taken on trust
    from the manifests' hashes."""
    place = {"pool": pool_folder(POOL) + (POOL_FILE,),
             "version": judgments_folder(SECOND) + (JUDGMENTS_FILE,),
             "earlier version": judgments_folder(VERSION) + (JUDGMENTS_FILE,)}[altered]
    path = two_versions.path(*place)
    rows = pl.read_parquet(path)
    if altered == "pool":
        changed = rows.with_columns(score=pl.col("score") + 1.0)
    else:
        changed = rows.with_columns(grade=pl.when(pl.col("grade_status") == "graded")
                                    .then(3 - pl.col("grade")))
    changed.write_parquet(path)
    if altered == "earlier version":
        # Its own scores were of its published bytes: the increment must not start from
        # them against a file that changed since; the full scoring of the second version does
        # not read the first, and passes.
        result = score_evaluation(two_versions, ScoringEngine(), POOL, SECOND, SPEC)
        assert result.engine != "incremental"
        return
    with pytest.raises(dg.Failure, match=f"stored {'pool' if altered == 'pool' else 'judgments'}"
                                         " content has sha256 .* the storage was altered"):
        score_evaluation(two_versions, ScoringEngine(), POOL, SECOND, SPEC)


def test_the_scoring_budget_reaches_the_increment(two_versions):
    """The memory budget handed to the scoring bounds the increment too: one that its
    estimated peak passes leaves the version to the full scoring."""
    from evaluation_pipeline.engines.choice import IN_MEMORY_BASE_BYTES
    from evaluation_pipeline.io.budget import Budget

    result = score_evaluation(two_versions, ScoringEngine(), POOL, SECOND, SPEC,
                              Budget.of(IN_MEMORY_BASE_BYTES))
    assert result.engine != "incremental"
