"""A landed file replaced (written, then renamed over) while it is ingested: DuckDB sorts it
from the landing after the screen read it, so the rows it would publish are not the rows that
were checked. Nothing is published, the error says so, and the file as it is then is ingested
(or refused) by the next attempt."""

from __future__ import annotations

import os

import polars as pl
import pytest

from evaluation_pipeline.ingest import inputs
from evaluation_pipeline.ingest.inputs import LandingChanged
from evaluation_pipeline.ingest.publish import publish_pool
from evaluation_pipeline.io.readers import read_pool
from schemas.errors import InputError
from schemas.rules.pool_rules import CANDIDATE_POOL
from tests.support.refusals import assert_names, violation


@pytest.fixture
def pool(tmp_path):
    folder = tmp_path / "landing" / "pool-a"
    folder.mkdir(parents=True)
    pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d2", "d1"],
                  "score": [0.3, 0.2, 0.9]}).write_parquet(folder / "bm25.parquet")
    return folder


def _replaced_after_screening(monkeypatch, path, frame):
    screen = inputs.screen_batches

    def screened_then_replaced(*args, **kwargs):
        result = screen(*args, **kwargs)
        fresh = path.with_name(".incoming.parquet")
        frame.write_parquet(fresh)
        os.replace(fresh, path)  # how a landing tool replaces a file
        return result

    monkeypatch.setattr(inputs, "screen_batches", screened_then_replaced)


def test_a_file_replaced_during_ingest_publishes_nothing(pool, tmp_path, monkeypatch):
    run = pool / "bm25.parquet"
    invalid = pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [float("nan")]})
    _replaced_after_screening(monkeypatch, run, invalid)
    target = tmp_path / "published" / "pool.parquet"
    with pytest.raises(LandingChanged) as changed:
        publish_pool(pool, target)
    assert_names(changed, "'pool-a'", repr(str(run)))  # the pool and the file replaced
    assert not target.exists() and list(target.parent.iterdir()) == []
    # The next attempt reads the file as it is now, and refuses it by the rules.
    monkeypatch.undo()
    with pytest.raises(InputError) as refused:
        publish_pool(pool, target)
    violation(refused, "score", CANDIDATE_POOL.rule("score_is_finite"), rows=[1])


def test_a_file_left_alone_is_published_as_screened(pool, tmp_path):
    target = tmp_path / "pool.parquet"
    publish_pool(pool, target)
    assert pl.read_parquet(target).equals(read_pool(pool).sort("ranker", "query_id", "doc_id"))


def test_a_rewrite_in_place_is_caught_too(pool, tmp_path, monkeypatch):
    run = pool / "bm25.parquet"
    screen = inputs.screen_batches

    def screened_then_rewritten(*args, **kwargs):
        result = screen(*args, **kwargs)
        other = pl.DataFrame({"query_id": ["q9"], "doc_id": ["d9"], "score": [0.5]})
        with open(run, "wb") as handle:  # the same inode, other bytes
            other.write_parquet(handle)
        return result

    monkeypatch.setattr(inputs, "screen_batches", screened_then_rewritten)
    with pytest.raises(LandingChanged):
        publish_pool(pool, tmp_path / "pool.parquet")
