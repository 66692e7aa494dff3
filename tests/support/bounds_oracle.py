"""Brute force over every grading of a query's holes (contract section 3, rule 7), written
apart from the kernel: each grading fills the holes, the fully graded list is ranked and scored
by plain numpy, and the least and greatest NDCG@K are taken over the gradings with a number.

A query is given as its candidates (doc_id, score, rank), its judgment rows (doc_id, grade
or "u" for unknown) and, in a pool of several rankers, the doc_ids the other rankers return
for it (``others``); doc_ids are ASCII, so Python's order is the byte order.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from evaluation_pipeline.metric.gains import gains_for_grades
from evaluation_pipeline.spec import EvaluationSpec


def judgments_frame(rows) -> pl.DataFrame:
    """A judgment version of (query_id, doc_id, grade or "u" for unknown) rows."""
    return pl.DataFrame(
        {"query_id": [q for q, _, _ in rows], "doc_id": [d for _, d, _ in rows],
         "grade": [None if g == "u" else g for _, _, g in rows],
         "grade_status": ["unknown" if g == "u" else "graded" for _, _, g in rows]},
        schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64,
                "grade_status": pl.String})


def holes(candidates, judged: dict, spec: EvaluationSpec, others=()) -> list[str]:
    """The query's holes: unknown or unjudged candidates, and under all_judged its unknown
    rows outside the candidates and the documents other rankers return (``others``) that the
    version lacks: graded, either joins the ideal."""
    docs = [doc for doc, _, _ in candidates]
    found = [doc for doc in docs if judged.get(doc, "u") == "u"]
    if spec.ideal == "all_judged":
        found += [doc for doc, grade in judged.items() if grade == "u" and doc not in docs]
        found += sorted({doc for doc in others if doc not in judged and doc not in docs})
    return found


def _places(candidates, spec: EvaluationSpec) -> list[list[str]]:
    """The ranked list as tie groups of doc_ids (one doc per group unless ties=average)."""
    if spec.ties == "average":
        by_score: dict[float, list[str]] = {}
        for doc, score, _ in candidates:
            by_score.setdefault(score, []).append(doc)
        return [by_score[s] for s in sorted(by_score, reverse=True)]
    if spec.ties == "rank":
        ordered = sorted(candidates, key=lambda c: (-c[1], c[2]))
    elif spec.ties == "doc_id":
        ordered = sorted(candidates, key=lambda c: (-c[1], c[0]))
    else:  # trec_eval: doc_id descending
        ordered = sorted(sorted(candidates, key=lambda c: c[0], reverse=True), key=lambda c: -c[1])
    return [[doc] for doc, _, _ in ordered]


def brute_force_bounds(candidates, judged: dict, spec: EvaluationSpec, k: int, top_grade: int,
                       others=()):
    """(least, greatest) NDCG@k over every grading of the holes with grades 0..top_grade,
    or (None, None) when no grading gives the query a number."""
    values = _graded_values(candidates, judged, spec, k, top_grade, others)
    if values is None:
        return None, None
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None, None
    return float(values.min()), float(values.max())


def brute_force_every_grading_scored(candidates, judged: dict, spec: EvaluationSpec, k: int,
                                     top_grade: int, others=()) -> bool:
    """Whether every grading of the holes gives the query a number at cutoff k."""
    values = _graded_values(candidates, judged, spec, k, top_grade, others)
    return values is not None and not np.isnan(values).any()


def _graded_values(candidates, judged: dict, spec: EvaluationSpec, k: int, top_grade: int,
                   others=()):
    """NDCG@k under each grading (NaN where it has no number); None for a not_judged query."""
    hole_docs = holes(candidates, judged, spec, others)
    gain_of = gains_for_grades(np.arange(top_grade + 1), spec)
    if not judged:  # not_judged: no row at all, no bounds
        return None
    # Every grading: one row per assignment of 0..top_grade to each hole.
    h = len(hole_docs)
    gradings = np.indices((top_grade + 1,) * h).reshape(h, (top_grade + 1) ** h).T
    n = gradings.shape[0]
    column = {doc: i for i, doc in enumerate(hole_docs)}

    def gains_of(doc):  # (n,) gains of one document over every grading
        if doc in column:
            return gain_of[gradings[:, column[doc]]]
        grade = judged[doc]
        return np.full(n, float(gains_for_grades(np.array([grade]), spec)[0]))

    dcg = np.zeros(n)
    first = 1
    for group in _places(candidates, spec):
        last = first + len(group) - 1
        discount = sum(1.0 / np.log2(p + 1.0) for p in range(first, min(last, k) + 1))
        mean_gain = sum(gains_of(doc) for doc in group) / len(group)
        dcg += mean_gain * discount
        first = last + 1
    if spec.ideal == "candidates":
        ideal_docs = [doc for doc, _, _ in candidates]
    else:
        # A hole another ranker returns is graded into the version, so into this ideal.
        ideal_docs = sorted(set(judged) | {doc for doc, _, _ in candidates} | set(others))
    ideal_gains = np.stack([gains_of(doc) for doc in ideal_docs], axis=1)
    ideal_gains = -np.sort(-ideal_gains, axis=1)[:, :k]
    discounts = 1.0 / np.log2(np.arange(ideal_gains.shape[1]) + 2.0)
    ideal = ideal_gains @ discounts
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(ideal > 0, dcg / ideal, np.nan)
    if spec.no_positive != "exclude":
        value = np.where(ideal > 0, value, 1.0 if spec.no_positive == "one" else 0.0)
    return value
