"""The per-candidate trace reproduces the kernel's dcg and ideal_dcg under every tie rule."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.analysis.explain import explain, explain_many
from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import EvaluationSpec


def random_pool(seed: int, n_queries: int = 6):
    """Two rankers, coarse scores (many ties), unknown and unjudged candidates, grades 0..3."""
    rng = np.random.default_rng(seed)
    rows, judged = [], []
    for q in range(n_queries):
        docs = [f"d{q}-{i:02d}" for i in range(rng.integers(3, 14))]
        for doc in docs:
            kind = rng.choice(["graded", "unknown", "unjudged"], p=[0.75, 0.1, 0.15])
            if kind != "unjudged":
                grade = int(rng.integers(0, 4)) if kind == "graded" else None
                judged.append((f"q{q}", doc, grade, kind))
        for ranker in ("a", "b"):
            ranks = rng.permutation(len(docs)) + 1  # the ranker's own order, for ties: rank
            for doc, rank in zip(docs, ranks):
                rows.append((ranker, f"q{q}", doc, float(rng.integers(0, 4)), int(rank)))
    candidates = pl.DataFrame(
        rows, schema=["ranker", "query_id", "doc_id", "score", "rank"], orient="row"
    ).with_columns(pl.lit("p").alias("candidate_pool"))
    judgments = pl.DataFrame(
        judged, schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64,
                        "grade_status": pl.String}, orient="row",
    ).with_columns(pl.lit("v1").alias("judgment_version"))
    return candidates, judgments


@pytest.mark.parametrize("ties", ["average", "doc_id", "trec_eval", "rank"])
@pytest.mark.parametrize(
    "policies",
    [
        {"unknown": "zero", "unjudged": "zero"},
        {"unknown": "exclude", "unjudged": "exclude"},
        {"unknown": "zero", "unjudged": "exclude", "ideal": "all_judged"},
    ],
)
def test_trace_sums_equal_kernel(ties, policies):
    candidates, judgments = random_pool(seed=7)
    spec = EvaluationSpec(cutoffs=(1, 4), ties=ties, **policies)
    kernel = score(candidates, judgments, spec).filter(pl.col("dcg").is_not_null())
    assert kernel.height >= 12
    for row in kernel.iter_rows(named=True):
        trace = explain(candidates, judgments, spec, query_id=row["query_id"],
                        ranker=row["ranker"], cutoff=row["cutoff"])
        assert trace.dcg == pytest.approx(row["dcg"], rel=1e-12, abs=1e-12)
        assert trace.ideal_dcg == pytest.approx(row["ideal_dcg"], rel=1e-12, abs=1e-12)
        assert trace.status == row["status"]


def test_average_ties_share_the_group_span_and_mean_discount():
    # Case E: two candidates with equal scores, grades 3 and 1, linear, K=1 -> 2/3.
    candidates = pl.DataFrame({"candidate_pool": "p", "ranker": "r", "query_id": "q",
                               "doc_id": ["x", "y"], "score": [1.0, 1.0]})
    judgments = pl.DataFrame({"query_id": "q", "doc_id": ["x", "y"], "grade": [3, 1],
                              "grade_status": "graded", "judgment_version": "v1"})
    spec = EvaluationSpec(cutoffs=(1,), gain="linear")
    trace = explain(candidates, judgments, spec, query_id="q", ranker="r", cutoff=1)
    assert trace.candidates["position_first"].to_list() == [1, 1]
    assert trace.candidates["position_last"].to_list() == [2, 2]
    # Mean discount over positions 1..2 with position 2 past K: (1 + 0) / 2.
    assert trace.candidates["discount"].to_list() == [0.5, 0.5]
    assert trace.dcg == pytest.approx(2.0)
    assert trace.ndcg == pytest.approx(2 / 3, abs=1e-12)
    assert trace.ideal["doc_id"].to_list() == ["x", "y"]


def test_excluded_candidates_are_listed_and_contribute_nothing():
    candidates = pl.DataFrame({"candidate_pool": "p", "ranker": "r", "query_id": "q",
                               "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    judgments = pl.DataFrame({"query_id": "q", "doc_id": ["a", "c"], "grade": [0, 2],
                              "grade_status": "graded", "judgment_version": "v1"})
    trace = explain(candidates, judgments, EvaluationSpec(cutoffs=(2,)), query_id="q",
                    ranker="r", cutoff=2)
    b = trace.candidates.filter(pl.col("doc_id") == "b").row(0, named=True)
    assert b["grade_status"] == "unjudged" and b["position_first"] is None
    assert b["contribution"] == 0.0 and b["note"] == "dropped: unjudged=exclude"
    # "c" moves up to position 2 once "b" is dropped.
    c = trace.candidates.filter(pl.col("doc_id") == "c").row(0, named=True)
    assert c["position_first"] == 2 and c["judgment_version"] == "v1"


@pytest.mark.parametrize("spec", [
    EvaluationSpec(cutoffs=(1, 3), ties="average", missing_from_run="zero"),
    EvaluationSpec(cutoffs=(2,), unknown="exclude", unjudged="exclude", ideal="all_judged"),
])
def test_many_traces_at_once_are_the_traces_one_at_a_time(spec):
    """A report's traces come from one kernel pass over their queries; each must be the trace
    of its own (ranker, query, cutoff) scored alone, including a ranker that did not return
    the query (no number of its own, whatever `missing_from_run` scores it)."""
    candidates, judgments = random_pool(seed=11, n_queries=8)
    # Ranker b does not return q3.
    candidates = candidates.filter(~((pl.col("ranker") == "b") & (pl.col("query_id") == "q3")))
    keys = [(r, f"q{q}", k) for q in (1, 3, 5) for r in ("a", "b") for k in spec.cutoffs]
    many = explain_many(candidates, judgments, spec, keys)
    for (ranker, query_id, cutoff), trace in zip(keys, many):
        alone = candidates.filter((pl.col("ranker") == ranker) & (pl.col("query_id") == query_id))
        own = score(alone, judgments.filter(pl.col("query_id") == query_id), spec).filter(
            pl.col("cutoff") == cutoff)
        assert (trace.ranker, trace.query_id, trace.cutoff) == (ranker, query_id, cutoff)
        if ranker == "b" and query_id == "q3":
            assert (trace.status, trace.ndcg, trace.candidates.height) == (
                "missing_from_run", None, 0)
        else:
            assert (trace.status, trace.ndcg) == (own["status"][0], own["ndcg"][0])
        single = explain(candidates, judgments, spec, query_id=query_id, ranker=ranker,
                         cutoff=cutoff)
        assert trace.to_dict() == single.to_dict()
    assert explain_many(candidates, judgments, spec, []) == []


@pytest.mark.parametrize("ties", ["average", "doc_id", "trec_eval", "rank"])
@pytest.mark.parametrize("ideal", ["candidates", "all_judged"])
def test_every_trace_of_one_pass_sums_to_the_kernel_with_signed_zeros_among_the_ties(ties,
                                                                                    ideal):
    """explain_many computes all the traces in one pass over the keys' rows; each must still
    sum to the kernel's numbers. Half the zero scores are -0.0, the same score as +0.0 (one
    tie group under ties=average), and a key asked twice gets the same trace twice."""
    candidates, judgments = random_pool(seed=5, n_queries=8)
    candidates = candidates.with_columns(
        pl.when((pl.col("score") == 0) & (pl.col("rank") % 2 == 0)).then(pl.lit(-0.0))
        .otherwise(pl.col("score")).alias("score"))
    assert (candidates["score"].cast(pl.String) == "-0.0").any()
    spec = EvaluationSpec(cutoffs=(2, 5), ties=ties, ideal=ideal, unknown="zero",
                          unjudged="zero")
    kernel = score(candidates, judgments, spec).filter(pl.col("dcg").is_not_null())
    keys = [(r["ranker"], r["query_id"], r["cutoff"]) for r in kernel.iter_rows(named=True)]
    traces = explain_many(candidates, judgments, spec, [*keys, keys[0]])
    assert traces[-1].to_dict() == traces[0].to_dict()
    for row, trace in zip(kernel.iter_rows(named=True), traces):
        assert trace.dcg == pytest.approx(row["dcg"], rel=1e-12, abs=1e-12)
        assert trace.ideal_dcg == pytest.approx(row["ideal_dcg"], rel=1e-12, abs=1e-12)
        assert (trace.status, trace.ndcg) == (row["status"], row["ndcg"])
