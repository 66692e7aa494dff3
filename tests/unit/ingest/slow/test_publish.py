"""Bounded-memory ingest of a pool whose rankers are each more than DuckDB's share of the
budget: the sort spills, and the same budget with no disk to spill to fails."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.ingest.external_sort import MemoryBudgetError
from evaluation_pipeline.ingest.publish import publish_pool
from evaluation_pipeline.io.readers import read_pool
from evaluation_pipeline.metric.hashing import pool_sha256
from tests.support.pools import POOL_KEY, SPILL_BUDGET
from tests.support.refusals import assert_names


def test_a_pool_beyond_the_sorts_share_spills_and_equals_the_in_memory_path(large_pool_folder,
                                                                           tmp_path):
    target = tmp_path / "pool.parquet"
    spill = tmp_path / "spill"
    published = publish_pool(large_pool_folder, target,
                             budget=dataclasses.replace(SPILL_BUDGET, spill_dir=spill))
    expected = read_pool(large_pool_folder).sort(POOL_KEY)
    assert pl.read_parquet(target).equals(expected)
    assert published.sha256 == pool_sha256(expected) and published.candidate_sets == (0, [])
    assert list(spill.iterdir()) == []  # the spill is cleaned up
    # The same budget with no disk to spill to cannot sort it: the sorts above spilled.
    refused = tmp_path / "refused.parquet"
    with pytest.raises(MemoryBudgetError) as failed:
        publish_pool(large_pool_folder, refused,
                     budget=dataclasses.replace(SPILL_BUDGET, spill_dir=spill, max_spill=0))
    assert (failed.value.step, failed.value.limit) == ("sorting candidate pool 'large'",
                                                       SPILL_BUDGET.memory_limit)
    assert_names(failed, "200MB", "--memory-limit", settings.MEMORY_LIMIT.name,
                 settings.SPILL_DIR.name)
    assert not refused.exists() and list(spill.iterdir()) == []
