"""Small frames in the contract's shape: one ranked list with its judgments, and per-query
result rows on a hand-written lineage."""

from __future__ import annotations

import polars as pl

from evaluation_pipeline.evaluation import Lineage
from evaluation_pipeline.spec import EvaluationSpec


def one_query(grades, scores=None, query_id="q", ranker="r", version="v1", pool="p"):
    """(candidates, judgments) for one ranked list; grade "u" is unknown, None is unjudged."""
    n = len(grades)
    scores = scores if scores is not None else [float(n - i) for i in range(n)]
    docs = [f"d{i:03d}" for i in range(n)]
    candidates = pl.DataFrame(
        {
            "candidate_pool": [pool] * n,
            "ranker": [ranker] * n,
            "query_id": [query_id] * n,
            "doc_id": docs,
            "score": [float(s) for s in scores],
        }
    )
    judged = [(d, g) for d, g in zip(docs, grades) if g is not None]
    judgments = pl.DataFrame(
        {
            "query_id": [query_id] * len(judged),
            "doc_id": [d for d, _ in judged],
            "grade": [None if g == "u" else g for _, g in judged],
            "grade_status": ["unknown" if g == "u" else "graded" for _, g in judged],
            "judgment_version": [version] * len(judged),
        },
        schema_overrides={"grade": pl.Int64},
    )
    return candidates, judgments


SHA_J, SHA_P = "a" * 64, "b" * 64
LINEAGE = Lineage("v1", SHA_J, "pool-1", SHA_P, EvaluationSpec(cutoffs=(5,)).spec_id)


def per_query_rows(rows: list[tuple], cutoff: int = 5, lineage: Lineage = LINEAGE) -> pl.DataFrame:
    """(ranker, query_id, ndcg, status[, judged_at_k, candidate_recall[, n_candidates]])."""
    records = []
    for row in rows:
        ranker, query_id, ndcg, status, *rest = row
        judged, recall, n = (rest + [1.0, 1.0, 10][len(rest):])[:3]
        records.append({
            "ranker": ranker, "query_id": query_id, "cutoff": cutoff,
            "dcg": None if ndcg is None else ndcg, "ideal_dcg": None if ndcg is None else 1.0,
            "ndcg": ndcg, "status": status, "n_candidates": n, "n_graded": n, "n_unknown": 0,
            "n_unjudged": 0, "judged_at_k": judged, "candidate_recall": recall,
        })
    schema = {"ranker": pl.String, "query_id": pl.String, "cutoff": pl.Int64,
              "dcg": pl.Float64, "ideal_dcg": pl.Float64, "ndcg": pl.Float64,
              "status": pl.String, "n_candidates": pl.Int64, "n_graded": pl.Int64,
              "n_unknown": pl.Int64, "n_unjudged": pl.Int64, "judged_at_k": pl.Float64,
              "candidate_recall": pl.Float64}
    return pl.DataFrame(records, schema=schema).with_columns(lineage.columns())


# q3 (no positive) and q4 (incomplete) have no number: counted apart, never averaged as 0.
PER_QUERY = per_query_rows([
    ("r", "q1", 0.5, "scored", 1.0, 0.5),
    ("r", "q2", 1.0, "scored", 0.8, 1.0),
    ("r", "q3", None, "no_positive", 0.6, None),
    ("r", "q4", None, "incomplete", 0.4, 0.25),
    ("r", "q5", 0.2, "scored", 0.2, 0.75),
])
