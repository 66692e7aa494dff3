"""Queries as the measures' kernel takes them, made from TREC-like dicts: qrels {query: {doc:
grade, or None for an unknown row}}, run {query: {doc: score}}."""

from __future__ import annotations

import numpy as np
import polars as pl

from evaluation_pipeline.metric.kernels.codes import GRADED, UNJUDGED, UNKNOWN
from evaluation_pipeline.metric.measures.kernels import Judged, Ranked
from evaluation_pipeline.metric.measures.plan import score_ranked
from evaluation_pipeline.spec import EvaluationSpec


def ranked_order(scores: dict[str, float], ties: str) -> list[str]:
    """The run's doc_ids in the spec's order: score high to low, then doc_id descending
    byte-wise (trec_eval) or ascending (doc_id, and any order under average)."""
    descending = ties == "trec_eval"
    by_doc = sorted(scores, key=lambda d: d.encode(), reverse=descending)
    return sorted(by_doc, key=lambda d: -scores[d])  # stable: ties keep the doc order


def kernel_inputs(qrels: dict, run: dict, ties: str, queries: list[str] | None = None,
                  outside: dict[str, int] | None = None):
    queries = sorted(run) if queries is None else queries
    starts, score, cls, grade = [0], [], [], []
    j_starts, j_grade, has_rows, n_unknown, outside_holes = [0], [], [], [], []
    for q in queries:
        judged = qrels.get(q, {})
        for d in ranked_order(run[q], ties):
            score.append(run[q][d])
            if d not in judged:
                cls.append(UNJUDGED), grade.append(0)
            elif judged[d] is None:
                cls.append(UNKNOWN), grade.append(0)
            else:
                cls.append(GRADED), grade.append(judged[d])
        starts.append(len(score))
        graded = [g for g in judged.values() if g is not None]
        j_grade.extend(graded)
        j_starts.append(len(j_grade))
        has_rows.append(bool(judged))
        unknown = [d for d, g in judged.items() if g is None]
        n_unknown.append(len(unknown))
        returned = run[q]
        own = sum(d not in returned for d in unknown)
        outside_holes.append(own + (outside or {}).get(q, 0))
    return (Ranked(np.array(starts, np.int64), np.array(score, np.float64),
                   np.array(cls, np.int8), np.array(grade, np.int64)),
            Judged(np.array(j_starts, np.int64), np.array(j_grade, np.int64),
                   np.array(has_rows, np.bool_), np.array(n_unknown, np.int64),
                   np.array(outside_holes, np.int64)))


def score_dicts(qrels: dict, run: dict, names: list[str], spec: EvaluationSpec, **kwargs):
    """{query: {canonical measure name: (value, status, least, greatest)}}."""
    queries = sorted(run)
    ranked, judged = kernel_inputs(qrels, run, spec.ties, queries)
    result = score_ranked(ranked, judged, names, spec, **kwargs)
    return {q: {str(m): (result.value[i, j], int(result.status[i, j]), result.least[i, j],
                         result.greatest[i, j]) for j, m in enumerate(result.measures)}
            for i, q in enumerate(queries)}


def dict_frames(qrels: dict, run: dict, ranker: str = "run"):
    """(judgments, candidates) frames of the same dicts, for the scoring every engine calls:
    a None grade is an unknown row."""
    judgments = pl.DataFrame(
        [(q, d, g, "unknown" if g is None else "graded")
         for q, docs in qrels.items() for d, g in docs.items()],
        schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64,
                "grade_status": pl.String}, orient="row")
    candidates = pl.DataFrame(
        [(ranker, q, d, s) for q, docs in run.items() for d, s in docs.items()],
        schema={"ranker": pl.String, "query_id": pl.String, "doc_id": pl.String,
                "score": pl.Float64}, orient="row")
    return judgments, candidates
