"""Scores the pipeline reads back are proven first: a version's per-query scores are stamped
when written (their bytes' SHA-256 beside them), and the next version's increment starts from
them only when they still hold those bytes. Altered, trimmed, truncated or deleted earlier
scores are named in a warning and the version is scored in full: the bytes of a full scoring,
never numbers carried over from a file that changed."""

from __future__ import annotations

import json

import polars as pl
import pytest

from evaluation_pipeline.engines import score_files
from evaluation_pipeline.io.storage import (
    JUDGMENTS_FILE,
    POOL_FILE,
    judgments_folder,
    manifest_file,
    pool_folder,
    scores_file,
    scores_folder,
)
from evaluation_pipeline.orchestration.scoring import (
    FULL,
    INCREMENTAL,
    ScoringEngine,
    score_evaluation,
    scores_alteration,
    scores_stamp,
)
from tests.unit.orchestration.test_published_hashes import POOL, SECOND, SPEC, VERSION


def _trim_one_query(path):
    rows = pl.read_parquet(path)
    rows.filter(pl.col("query_id") != rows["query_id"].max()).write_parquet(path)


def _set_one_ndcg(path):
    rows = pl.read_parquet(path)
    last = rows["query_id"].max()
    rows.with_columns(ndcg=pl.when(pl.col("query_id") == last).then(0.123)
                      .otherwise(pl.col("ndcg"))).write_parquet(path)


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path):
    path.write_bytes(b"not parquet at all")


def _same_size_other_bytes(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


ALTERATIONS = {"one query's rows deleted": _trim_one_query, "one ndcg set": _set_one_ndcg,
               "truncated": _truncate, "not parquet": _garbage,
               "one byte flipped": _same_size_other_bytes}


def _full_bytes(storage, tmp_path) -> bytes:
    full = tmp_path / "full.parquet"
    score_files(storage.path(*judgments_folder(SECOND), JUDGMENTS_FILE),
                storage.path(*pool_folder(POOL), POOL_FILE), SPEC, full, progress=False)
    return full.read_bytes()


def test_scores_are_stamped_with_how_they_were_made(two_versions):
    first = scores_file(POOL, VERSION, SPEC.spec_id)
    assert scores_alteration(two_versions, first) is None
    assert scores_stamp(two_versions, first)["scoring"]["path"] == FULL
    score_evaluation(two_versions, ScoringEngine(), POOL, SECOND, SPEC)
    second = scores_stamp(two_versions, scores_file(POOL, SECOND, SPEC.spec_id))
    assert second["scoring"]["path"] == INCREMENTAL
    assert second["scoring"]["from_version"] == VERSION
    assert second["lineage"]["judgment_version"] == SECOND


@pytest.mark.parametrize("alteration", sorted(ALTERATIONS))
def test_altered_earlier_scores_are_named_and_the_version_scored_in_full(two_versions,
                                                                         tmp_path, alteration):
    earlier = two_versions.path(*scores_file(POOL, VERSION, SPEC.spec_id))
    ALTERATIONS[alteration](earlier)
    warnings: list[str] = []
    result = score_evaluation(two_versions, ScoringEngine(), POOL, SECOND, SPEC,
                              warn=warnings.append)
    assert result.engine != INCREMENTAL
    assert two_versions.path(*scores_file(POOL, SECOND, SPEC.spec_id)).read_bytes() == (
        _full_bytes(two_versions, tmp_path))
    assert len(warnings) == 1 and str(earlier) in warnings[0]
    scoring = scores_stamp(two_versions, scores_file(POOL, SECOND, SPEC.spec_id))["scoring"]
    assert scoring["path"] == FULL and "proof" in scoring["reason"]


def test_deleted_earlier_scores_score_the_version_in_full(two_versions, tmp_path):
    two_versions.path(*scores_file(POOL, VERSION, SPEC.spec_id)).unlink()
    result = score_evaluation(two_versions, ScoringEngine(), POOL, SECOND, SPEC)
    assert result.engine != INCREMENTAL
    assert two_versions.path(*scores_file(POOL, SECOND, SPEC.spec_id)).read_bytes() == (
        _full_bytes(two_versions, tmp_path))


@pytest.mark.parametrize("stamp", ["deleted", "torn", "written before stamps"])
def test_scores_without_a_whole_stamp_are_not_trusted(two_versions, tmp_path, stamp):
    place = manifest_file(scores_folder(POOL, VERSION, SPEC.spec_id))
    path = two_versions.path(*place)
    if stamp == "deleted":
        path.unlink()
    elif stamp == "torn":
        path.write_text(path.read_text()[:20])
    else:
        recorded = json.loads(path.read_text())
        del recorded["stamp"]
        path.write_text(json.dumps(recorded))
    warnings: list[str] = []
    result = score_evaluation(two_versions, ScoringEngine(), POOL, SECOND, SPEC,
                              warn=warnings.append)
    assert result.engine != INCREMENTAL and len(warnings) == 1
    assert two_versions.path(*scores_file(POOL, SECOND, SPEC.spec_id)).read_bytes() == (
        _full_bytes(two_versions, tmp_path))


def test_restored_bytes_prove_again(two_versions):
    earlier = two_versions.path(*scores_file(POOL, VERSION, SPEC.spec_id))
    original = earlier.read_bytes()
    _set_one_ndcg(earlier)
    assert scores_alteration(two_versions, scores_file(POOL, VERSION, SPEC.spec_id))
    earlier.write_bytes(original)
    assert scores_alteration(two_versions, scores_file(POOL, VERSION, SPEC.spec_id)) is None
    result = score_evaluation(two_versions, ScoringEngine(), POOL, SECOND, SPEC)
    assert result.engine == INCREMENTAL
