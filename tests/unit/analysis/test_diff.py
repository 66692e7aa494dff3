"""What changed: between judgment versions over one pool, and between pools under one version."""

from __future__ import annotations

import polars as pl
import pytest

from evaluation_pipeline.analysis.diff import (
    DiffError,
    judgment_changes,
    judgment_version_diff,
    pool_diff,
)
from evaluation_pipeline.evaluation import evaluate
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.refusals import assert_names

SPEC = EvaluationSpec(cutoffs=(3,), gain="linear")


def judgments(version: str, rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        [(q, d, g, "unknown" if g is None else "graded", version) for q, d, g in rows],
        schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64,
                "grade_status": pl.String, "judgment_version": pl.String}, orient="row",
    )


def pool(name: str, rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        [(name, r, q, d, s) for r, q, d, s in rows],
        schema=["candidate_pool", "ranker", "query_id", "doc_id", "score"], orient="row",
    )


OLD = judgments("v1", [("q1", "a", 2), ("q1", "b", 0), ("q1", "c", 1), ("q2", "x", 1),
                       ("q2", "y", 0)])
# b regraded 0 -> 3, c regraded 1 -> unknown, y removed, z added, q3 newly judged.
NEW = judgments("v2", [("q1", "a", 2), ("q1", "b", 3), ("q1", "c", None), ("q2", "x", 1),
                       ("q2", "z", 2), ("q3", "m", 1)])
POOL = pool("p1", [
    ("r", "q1", "a", 3.0), ("r", "q1", "b", 2.0), ("r", "q1", "c", 1.0),
    ("r", "q2", "x", 2.0), ("r", "q2", "y", 1.0), ("r", "q3", "m", 1.0),
])


def test_documents_added_removed_and_regraded():
    changes = judgment_changes(OLD, NEW)
    assert changes.select("query_id", "doc_id", "change").rows() == [
        ("q1", "b", "regraded"), ("q1", "c", "regraded"), ("q2", "y", "removed"),
        ("q2", "z", "added"), ("q3", "m", "added"),
    ]


def test_status_and_ndcg_changes_with_the_pool_fixed():
    old_pq, _ = evaluate(OLD, POOL, SPEC)
    new_pq, _ = evaluate(NEW, POOL, SPEC)
    diff = judgment_version_diff(OLD, NEW, old_pq, new_pq)
    assert (diff["n_added"], diff["n_removed"], diff["n_regraded"]) == (2, 1, 2)
    statuses = {r["query_id"]: (r["status_old"], r["status_new"])
                for r in diff["status_changes"].iter_rows(named=True)}
    # q1 gets an unknown grade (incomplete); q3 was not in v1 at all.
    assert statuses == {"q1": ("scored", "incomplete"), "q3": ("not_judged", "scored")}
    change = diff["ndcg_change"].row(0, named=True)
    # Only q2 has a number in both: [1, 0] -> [1, unjudged y excluded], NDCG 1 -> 1.
    assert change["n_paired"] == 1 and change["paired_mean_change"] == pytest.approx(0.0)
    assert change["n_status_changed"] == 2
    # Each side's mean is over its own queries; the paired means over the common ones, whose
    # difference is the paired change.
    old_rows, new_rows = (pq.filter(pl.col("ranker") == change["ranker"])
                          .filter(pl.col("cutoff") == change["cutoff"]) for pq in (old_pq, new_pq))
    assert (change["n_old"], change["n_new"]) == (old_rows["ndcg"].count(),
                                                  new_rows["ndcg"].count())
    assert change["n_paired"] < min(change["n_old"], change["n_new"])  # different query sets
    common = old_rows.join(new_rows, on="query_id", suffix="_new").drop_nulls(
        ["ndcg", "ndcg_new"])
    assert change["paired_ndcg_old"] == pytest.approx(common["ndcg"].mean(), abs=1e-15)
    assert change["paired_ndcg_new"] == pytest.approx(common["ndcg_new"].mean(), abs=1e-15)
    assert change["paired_ndcg_new"] - change["paired_ndcg_old"] == pytest.approx(
        change["paired_mean_change"], abs=1e-15)


def test_pool_changes_and_candidate_recall():
    other = pool("p2", [
        ("r", "q1", "a", 3.0), ("r", "q1", "b", 2.0),
        ("r", "q2", "x", 2.0), ("r", "q2", "y", 1.0), ("r", "q2", "z", 0.5),
        ("r", "q3", "m", 1.0),
    ])
    old_pq, _ = evaluate(NEW, POOL, SPEC)
    new_pq, _ = evaluate(NEW, other, SPEC)
    diff = pool_diff(POOL, other, old_pq, new_pq)
    assert diff["candidate_changes"].rows() == [("r", 1, 1)]  # z added, c removed
    recall = diff["candidate_recall_change"].row(0, named=True)
    # Positive docs per query: q1 {a, b}, q2 {x, z}, q3 {m}: recall 1, 1/2, 1 -> 1, 1, 1.
    assert recall["mean_candidate_recall_old"] == pytest.approx((1 + 0.5 + 1) / 3)
    assert recall["mean_candidate_recall_new"] == pytest.approx(1.0)
    with pytest.raises(DiffError) as refused:
        pool_diff(POOL, other, evaluate(OLD, POOL, SPEC)[0], new_pq)
    assert_names(refused, "'v1'", "'v2'")  # the two judgment versions


def test_a_judgment_version_diff_needs_one_pool():
    other = pool("p2", [("r", "q1", "a", 3.0)])
    with pytest.raises(DiffError) as refused:
        judgment_version_diff(OLD, NEW, evaluate(OLD, POOL, SPEC)[0],
                              evaluate(NEW, other, SPEC)[0])
    assert_names(refused, "'p1'", "'p2'")  # the two candidate pools
