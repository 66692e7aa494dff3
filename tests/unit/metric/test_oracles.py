"""Independent oracles and properties on random runs with many ties, unjudged and unknown docs.

- the ``trec_eval`` profile equals pytrec_eval's ``ndcg_cut_K`` per query;
- the ``sklearn`` profile equals ``sklearn.metrics.ndcg_score(..., k=K)`` per query;
- NDCG lies in [0, 1]; the ideal order scores 1; under linear gain scaling grades leaves NDCG
  unchanged; under ``ties=average`` reordering inside a tie group leaves it unchanged.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import ndcg_score

from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import EvaluationSpec, profile

CUTOFFS = (1, 3, 5, 10)
# Past 32 places the kernel finds the ideal order by a sort instead of by insertion.
CUTOFF_SETS = [CUTOFFS, (2, 40)]
TOL = 1e-9
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# A grade is an int, "u" (explicit unknown) or None (no judgment row).
grade_st = st.one_of(st.integers(0, 4), st.just("u"), st.none())
# Few distinct scores: ties are the rule, not the exception.
score_st = st.sampled_from([0.0, 0.25, 0.5, 0.5, 1.0, 2.0, -1.0])


@st.composite
def runs(draw, min_docs=1, max_queries=4):
    """Candidates and judgments for a few queries, plus judged docs the ranker did not return."""
    cand, judg = [], []
    for q in range(draw(st.integers(1, max_queries))):
        qid = f"q{q}"
        n = draw(st.integers(min_docs, 12))
        # Ids sharing 8 or 16 leading bytes, and multi-byte UTF-8, take the kernel's slower
        # comparison paths; ties by doc_id compare UTF-8 bytes, as trec_eval does.
        prefix = draw(st.sampled_from(["", "", "https://example.org/d/", "01234567", "é"]))
        docs = draw(st.lists(st.text("abcxyz019é", min_size=1, max_size=4).map(prefix.__add__),
                             min_size=n, max_size=n, unique=True))
        for doc in docs:
            grade = draw(grade_st)
            cand.append((qid, doc, draw(score_st)))
            if grade is not None:
                judg.append((qid, doc, grade))
        for j in range(draw(st.integers(0, 3))):  # judged, not retrieved
            judg.append((qid, f"unretrieved{j}", draw(st.integers(0, 4))))
    candidates = pl.DataFrame(cand, schema=["query_id", "doc_id", "score"], orient="row")
    candidates = candidates.with_columns(pl.lit("r").alias("ranker"),
                                         pl.lit("p").alias("candidate_pool"))
    judgments = pl.DataFrame(
        {
            "query_id": [q for q, _, _ in judg],
            "doc_id": [d for _, d, _ in judg],
            "grade": [None if g == "u" else g for _, _, g in judg],
            "grade_status": ["unknown" if g == "u" else "graded" for _, _, g in judg],
            "judgment_version": ["v"] * len(judg),
        },
        schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64,
                "grade_status": pl.String, "judgment_version": pl.String},
    )
    return candidates, judgments


def by_key(rows: pl.DataFrame) -> dict[tuple[str, int], float | None]:
    return {(q, k): v for q, k, v in rows.select("query_id", "cutoff", "ndcg").iter_rows()}


@pytest.mark.parametrize("cutoffs", CUTOFF_SETS)
@SETTINGS
@given(runs())
def test_trec_eval_profile_equals_pytrec_eval(cutoffs, data):
    candidates, judgments = data
    spec = profile("trec_eval").replace(cutoffs=cutoffs)
    ours = by_key(score(candidates, judgments, spec))

    qrels: dict[str, dict[str, int]] = {}
    for q, d, g, status in judgments.select("query_id", "doc_id", "grade",
                                            "grade_status").iter_rows():
        qrels.setdefault(q, {})[d] = -1 if status == "unknown" else g  # TREC: rel < 0 = unknown
    run: dict[str, dict[str, float]] = {}
    for q, d, s in candidates.select("query_id", "doc_id", "score").iter_rows():
        run.setdefault(q, {})[d] = s
    measure = "ndcg_cut." + ",".join(map(str, cutoffs))
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)

    for (q, k), value in ours.items():
        if q in theirs:
            assert value == pytest.approx(theirs[q][f"ndcg_cut_{k}"], abs=TOL), (q, k)
        else:  # trec_eval evaluates only judged queries
            assert value is None


@pytest.mark.parametrize("cutoffs", CUTOFF_SETS)
@SETTINGS
@given(runs(min_docs=2))
def test_sklearn_profile_equals_ndcg_score(cutoffs, data):
    candidates, judgments = data
    spec = profile("sklearn").replace(cutoffs=cutoffs)
    rows = score(candidates, judgments, spec)
    ours = by_key(rows)
    joined = candidates.join(judgments, on=["query_id", "doc_id"], how="left")
    judged_queries = set(judgments["query_id"].to_list())
    for (q,), group in joined.group_by(["query_id"]):
        if q not in judged_queries:
            continue
        y_true = group["grade"].fill_null(0).to_numpy()[None, :].astype(float)
        y_score = group["score"].to_numpy()[None, :]
        for k in cutoffs:
            expected = ndcg_score(y_true, y_score, k=k)
            assert ours[(q, k)] == pytest.approx(expected, abs=TOL), (q, k)


spec_st = st.builds(
    EvaluationSpec,
    cutoffs=st.just(CUTOFFS),
    gain=st.sampled_from(["linear", "exponential"]),
    ideal=st.sampled_from(["candidates", "all_judged"]),
    ties=st.sampled_from(["average", "doc_id", "trec_eval"]),
    unknown=st.sampled_from(["incomplete", "exclude", "zero"]),
    unjudged=st.sampled_from(["incomplete", "exclude", "zero"]),
    no_positive=st.sampled_from(["exclude", "zero"]),
    missing_from_run=st.sampled_from(["exclude", "zero"]),
)


@SETTINGS
@given(runs(), spec_st)
def test_ndcg_in_unit_interval_and_null_only_when_apart(data, spec):
    candidates, judgments = data
    rows = score(candidates, judgments, spec)
    values = rows["ndcg"].drop_nulls().to_numpy()
    assert ((values >= 0) & (values <= 1 + 1e-12)).all()
    scored = rows.filter(pl.col("status") == "scored")
    assert scored["ndcg"].null_count() == 0
    assert (rows.filter(pl.col("status").is_in(["incomplete", "not_judged"]))["ndcg"].null_count()
            == rows.filter(pl.col("status").is_in(["incomplete", "not_judged"])).height)


@SETTINGS
@given(st.lists(st.integers(0, 4), min_size=1, max_size=15),
       st.sampled_from(["linear", "exponential"]))
def test_ideal_order_scores_one(grades, gain):
    ordered = sorted(grades, reverse=True)
    candidates, judgments = _one(ordered,
                                 scores=[float(len(ordered) - i) for i in range(len(ordered))])
    rows = score(candidates, judgments, EvaluationSpec(gain=gain, cutoffs=CUTOFFS))
    if max(grades) > 0:
        assert np.allclose(rows["ndcg"].to_numpy(), 1.0, atol=1e-12)
    else:
        assert set(rows["status"]) == {"no_positive"}


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 4), score_st), min_size=1, max_size=15),
       st.integers(2, 7))
def test_linear_gain_is_scale_invariant(items, factor):
    grades = [g for g, _ in items]
    scores = [s for _, s in items]
    spec = EvaluationSpec(gain="linear", cutoffs=CUTOFFS)
    base = score(*_one(grades, scores), spec)["ndcg"].to_numpy()
    scaled = score(*_one([g * factor for g in grades], scores), spec)["ndcg"].to_numpy()
    assert np.allclose(base, scaled, atol=1e-12, equal_nan=True)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 4), score_st), min_size=2, max_size=15), st.randoms())
def test_average_ties_ignore_order_inside_a_tie_group(items, rnd):
    grades = [g for g, _ in items]
    scores = [s for _, s in items]
    shuffled = list(grades)
    for value in set(scores):  # permute grades among documents sharing a score
        idx = [i for i, s in enumerate(scores) if s == value]
        perm = list(idx)
        rnd.shuffle(perm)
        for i, j in zip(idx, perm):
            shuffled[i] = grades[j]
    spec = EvaluationSpec(gain="exponential", ties="average", cutoffs=CUTOFFS)
    base = score(*_one(grades, scores), spec)["ndcg"].to_numpy()
    other = score(*_one(shuffled, scores), spec)["ndcg"].to_numpy()
    assert np.allclose(base, other, atol=1e-12, equal_nan=True)


def _one(grades, scores):
    from tests.support.frames import one_query

    return one_query(grades, scores)
