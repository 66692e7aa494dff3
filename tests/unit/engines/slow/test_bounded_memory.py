"""The streaming engine's own sorts of an unsorted run, ranker by ranker as ingest does, on the
large pool under the budget whose sorts of it spill: refused with no disk to spill to, and the
in-memory path's rows with it."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

from evaluation_pipeline.engines import score_files
from evaluation_pipeline.evaluation import evaluate
from evaluation_pipeline.ingest.external_sort import MemoryBudgetError
from evaluation_pipeline.io.readers import read_judgments, read_pool
from evaluation_pipeline.spec import profile
from tests.support.pools import POOL, SPILL_BUDGET, VERSION


def test_a_sort_that_cannot_fit_names_its_step_and_writes_nothing(large_inputs, tmp_path):
    """The streaming engine sorts an unsorted run ranker by ranker, as ingest does: the large
    pool's rankers, under the budget whose sorts of them spill, with no disk to spill to."""
    judgments, pool = large_inputs
    ordered = tmp_path / "judgments-in-order.parquet"  # only the run needs sorting
    pl.read_parquet(judgments).sort("query_id", "doc_id").write_parquet(ordered)
    out = tmp_path / "out.parquet"
    spill = tmp_path / "spill"
    with pytest.raises(MemoryBudgetError, match=r"^sorting the run input for the streaming "
                       r"engine: cannot finish within the memory budget of 200MB"):
        score_files(ordered, pool, profile("default"), out, engine="streaming", progress=False,
                    budget=dataclasses.replace(SPILL_BUDGET, spill_dir=spill, max_spill=0))
    assert not out.exists()
    # With disk to spill to, the same sorts give the in-memory path's rows.
    score_files(ordered, pool, profile("default"), out, engine="streaming", progress=False,
                budget=dataclasses.replace(SPILL_BUDGET, spill_dir=spill))
    expected, _ = evaluate(read_judgments(ordered, version=VERSION),
                           read_pool(pool, pool=POOL), profile("default"))
    assert pl.read_parquet(out).equals(expected)
    assert list(spill.iterdir()) == []
