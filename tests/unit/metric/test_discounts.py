"""The spec's ``discount`` through the scoring every engine calls: a logarithm of any base
(scikit-learn's ``log_base``) and ``1/rank`` (TF-Ranking's ``rank_discount_fn``), for nDCG@K and
DCG@K alike, exact against scikit-learn and a plain TF-Ranking formula, with the bounds over
the holes held to brute force; the default ``log2`` keeps its spec_id and every bit."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import EvaluationSpec, SpecError

sklearn_metrics = pytest.importorskip("sklearn.metrics")


def frames(labels: list[int | None], scores: list[float], query: str = "q"):
    docs = [f"d{i}" for i in range(len(labels))]
    judgments = pl.DataFrame({
        "query_id": query, "doc_id": [d for d, g in zip(docs, labels) if g is not None],
        "grade": [g for g in labels if g is not None], "grade_status": "graded"})
    candidates = pl.DataFrame({"ranker": "r", "query_id": query, "doc_id": docs,
                               "score": scores})
    return candidates, judgments


def random_queries(seed: int, n: int = 25):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        m = int(rng.integers(2, 12))
        yield (rng.integers(0, 5, m).tolist(), rng.integers(0, 4, m).astype(float).tolist())


@pytest.mark.parametrize("base", [2, 10, math.e, 1.5])
def test_dcg_and_ndcg_match_scikit_learn_under_its_log_bases(base):
    # scikit-learn: linear gain, ties averaged (ignore_ties=False), the ideal over the list.
    spec = EvaluationSpec(gain="linear", ties="average", unjudged="zero", no_positive="zero",
                          discount=base, measures=["nDCG@3", "nDCG@5", "DCG@3", "DCG@5"])
    for labels, scores in random_queries(seed=int(base * 10)):
        candidates, judgments = frames(labels, scores)
        rows = dict(score(candidates, judgments, spec).select("measure", "value").iter_rows())
        for k in (3, 5):
            dcg = sklearn_metrics.dcg_score([labels], [scores], k=k, log_base=base)
            assert rows[f"DCG@{k}"] == pytest.approx(dcg, abs=1e-12), (labels, scores, k)
            # ndcg_score has no log_base: the base scales DCG and its ideal alike.
            if max(labels) > 0:
                ndcg = sklearn_metrics.ndcg_score([labels], [scores], k=k)
                assert rows[f"nDCG@{k}"] == pytest.approx(ndcg, abs=1e-12)


def tf_ranking_ndcg(labels, scores, k, discount):
    """TF-Ranking's NDCGMetric (gain 2^label - 1 by default) with ``rank_discount_fn``."""
    order = sorted(range(len(labels)), key=lambda i: -scores[i])
    gains = [2.0 ** labels[i] - 1.0 for i in order]
    ideal = sorted((2.0 ** g - 1.0 for g in labels), reverse=True)
    dcg = sum(g * discount(r) for r, g in enumerate(gains[:k], start=1))
    best = sum(g * discount(r) for r, g in enumerate(ideal[:k], start=1))
    return dcg / best


def test_ndcg_with_the_reciprocal_rank_discount_matches_tf_ranking():
    spec = EvaluationSpec(discount="1/rank", ties="doc_id", unjudged="zero",
                          measures=["nDCG@3", "nDCG@10", "DCG@3"])
    rng = np.random.default_rng(3)
    for _ in range(25):
        m = int(rng.integers(2, 12))
        labels = rng.integers(0, 4, m).tolist()
        scores = rng.permutation(m).astype(float).tolist()  # TF-Ranking breaks ties at random
        if max(labels) == 0:
            continue
        candidates, judgments = frames(labels, scores)
        rows = dict(score(candidates, judgments, spec).select("measure", "value").iter_rows())
        for k in (3, 10):
            assert rows[f"nDCG@{k}"] == pytest.approx(
                tf_ranking_ndcg(labels, scores, k, lambda r: 1.0 / r), abs=1e-12)


@pytest.mark.parametrize("discount", ["1/rank", 10.0])
@pytest.mark.parametrize("ties", ["average", "doc_id"])
def test_the_bounds_under_another_discount_are_the_extremes_over_every_grading(discount, ties):
    spec = EvaluationSpec(discount=discount, ties=ties, unjudged="zero", gain="linear",
                          cutoffs=(2, 4), max_grade=2)
    labels = [None, 2, 0, None, 1]
    scores = [3.0, 3.0, 2.0, 1.0, 1.0]
    rows = score(*frames(labels, scores), spec).sort("cutoff")
    for k, row in zip((2, 4), rows.iter_rows(named=True)):
        values = []
        for grading in itertools.product(range(3), repeat=2):
            filled = list(labels)
            filled[0], filled[3] = grading
            values.append(score(*frames(filled, scores), spec.replace(cutoffs=(k,)))["ndcg"][0])
        assert row["ndcg_min"] == pytest.approx(min(values), abs=1e-12)
        assert row["ndcg_max"] == pytest.approx(max(values), abs=1e-12)


def test_log2_and_base_two_are_one_spec_and_other_values_are_refused():
    assert EvaluationSpec(discount=2).spec_id == EvaluationSpec().spec_id
    assert EvaluationSpec(discount=2.0).discount == "log2"
    for bad in (1, 0.5, "ln", True, float("inf")):
        with pytest.raises(SpecError, match="discount"):
            EvaluationSpec(discount=bad)


@pytest.mark.parametrize("discount", ["1/rank", 3.0])
def test_the_ideal_over_every_judged_document_takes_the_discount(discount):
    # ideal: all_judged: judged documents the run lacks join the ideal (discounted alike).
    spec = EvaluationSpec(discount=discount, ideal="all_judged", ties="trec_eval",
                          gain="linear", unjudged="zero", cutoffs=(3,))
    candidates, _ = frames([1, 0, 2], [3.0, 2.0, 1.0])
    judgments = pl.DataFrame({"query_id": "q", "doc_id": ["d0", "d1", "d2", "x", "y"],
                              "grade": [1, 0, 2, 3, 1], "grade_status": "graded"})
    row = score(candidates, judgments, spec).row(0, named=True)
    weight = ((lambda r: 1.0 / r) if discount == "1/rank"
              else (lambda r: 1.0 / math.log(r + 1.0, discount)))
    dcg = 1 * weight(1) + 0 * weight(2) + 2 * weight(3)
    ideal = 3 * weight(1) + 2 * weight(2) + 1 * weight(3)
    assert row["dcg"] == pytest.approx(dcg, abs=1e-12)
    assert row["ideal_dcg"] == pytest.approx(ideal, abs=1e-12)
