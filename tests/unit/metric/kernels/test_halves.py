"""The kernel scored in two halves on two threads gives the rows of one call, bit for bit.

A pool of three rankers with different candidate sets (so that, under ``all_judged``, other
rankers' unjudged documents are holes: the per-block ``pool_unjudged`` is cut with the blocks),
graded, unknown and unjudged candidates, scores with many ties and a rank column, under every
tie rule and both ideals; cut at every place the row count puts the middle.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from evaluation_pipeline.metric import ndcg
from evaluation_pipeline.metric.kernels import threads
from evaluation_pipeline.spec import EvaluationSpec


def _inputs(seed: int, queries: int = 400) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(queries):
        docs = [f"d{i}" for i in range(int(rng.integers(1, 40)))]
        for ranker in ("a", "b", "c"):
            chosen = [d for d in docs if rng.random() < 0.8] or docs[:1]
            ranks = rng.permutation(len(chosen)) + 1
            rows += [(ranker, f"q{q}", d, float(rng.integers(0, 4)) / 2, int(r))
                     for d, r in zip(chosen, ranks)]
    candidates = pl.DataFrame(rows, schema=["ranker", "query_id", "doc_id", "score", "rank"],
                              orient="row").with_columns(candidate_pool=pl.lit("p"))
    pairs = candidates.select("query_id", "doc_id").unique().sort("query_id", "doc_id")
    kind = rng.integers(0, 10, pairs.height)  # 0-5 graded, 6-7 unknown, 8-9 unjudged
    graded = pl.Series(kind < 6)
    judged = pairs.with_columns(
        grade=pl.when(graded).then(pl.Series(kind % 4, dtype=pl.Int64)),
        grade_status=pl.when(graded).then(pl.lit("graded")).otherwise(pl.lit("unknown")))
    judgments = judged.filter(pl.Series(kind < 8)).with_columns(judgment_version=pl.lit("v"))
    return candidates, judgments


@pytest.mark.parametrize("ideal", ["candidates", "all_judged"])
@pytest.mark.parametrize("ties", ["average", "doc_id", "trec_eval", "rank"])
def test_halves_give_the_rows_of_one_call(monkeypatch, ideal, ties):
    candidates, judgments = _inputs(seed=len(ideal) * 7 + len(ties))
    spec = EvaluationSpec(cutoffs=(1, 5, 10), ideal=ideal, ties=ties)
    monkeypatch.setattr(ndcg, "HALVES_FROM_ROWS", 10**12)
    whole = ndcg.score(candidates, judgments, spec)

    used = []
    real = threads.helper
    monkeypatch.setattr(threads, "helper", lambda name: used.append(name) or real(name))
    monkeypatch.setattr(ndcg, "HALVES_FROM_ROWS", 0)
    halves = ndcg.score(candidates, judgments, spec)
    assert used == ["kernel"]
    assert_frame_equal(halves, whole)
    assert whole["n_holes"].sum() > 0 and whole["ndcg_min"].is_not_null().any()


def test_a_single_block_is_scored_whole(monkeypatch):
    candidates, judgments = _inputs(seed=1, queries=1)
    spec = EvaluationSpec(cutoffs=(5,))
    candidates = candidates.filter(pl.col("ranker") == "a")
    monkeypatch.setattr(ndcg, "HALVES_FROM_ROWS", 0)
    used = []
    real = threads.helper
    monkeypatch.setattr(threads, "helper", lambda name: used.append(name) or real(name))
    assert ndcg.score(candidates, judgments, spec).height == 1
    assert used == []
