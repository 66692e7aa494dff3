"""The bounds of a mean and of a paired difference (contract sections 4 and 5) against brute
force: every joint grading of the holes (a document keeps one grade for both rankers) gives
means and a mean difference inside the reported ranges, over the rows the report names."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation_pipeline.aggregation import sums as rn
from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.bounds_oracle import judgments_frame

TOL = 1e-12
DOCS = [f"d{i}" for i in range(6)]


@st.composite
def cases(draw):
    """Judgments {query: {doc: grade | "u"}} and two rankers' runs over the same queries,
    with at most 4 distinct holes in all (3^4 joint gradings)."""
    judged, runs = {}, {"a": [], "b": []}
    for q in range(draw(st.integers(1, 3))):
        qid = f"q{q}"
        judged[qid] = {d: draw(st.one_of(st.integers(0, 2), st.just("u")))
                       for d in draw(st.sets(st.sampled_from(DOCS), min_size=1, max_size=4))}
        for ranker in runs:
            for d in draw(st.sets(st.sampled_from(DOCS), min_size=1, max_size=4)):
                runs[ranker].append((ranker, qid, d, float(draw(st.integers(0, 3)))))
    return judged, runs


def _holes(judged, runs):
    docs = {(q, d) for q, graded in judged.items() for d, g in graded.items() if g == "u"}
    docs |= {(q, d) for rows in runs.values() for _, q, d, _ in rows
             if judged.get(q, {}).get(d, "u") == "u"}
    return sorted(docs)


def _frames(judged, runs, grading=None):
    grading = grading or {}
    rows = [(q, d, grading.get((q, d), g)) for q, graded in judged.items()
            for d, g in graded.items()]
    rows += [(q, d, g) for (q, d), g in grading.items() if d not in judged[q]]
    candidates = pl.DataFrame([r for rows_ in runs.values() for r in rows_],
                              schema=["ranker", "query_id", "doc_id", "score"], orient="row")
    return candidates, judgments_frame(rows)


@pytest.mark.parametrize("no_positive", ["exclude", "zero"])
@pytest.mark.parametrize("ideal", ["candidates", "all_judged"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_every_joint_grading_lies_in_the_bounds_of_the_means_and_the_difference(
        ideal, no_positive, case):
    judged, runs = case
    holes = _holes(judged, runs)
    if len(holes) > 4:
        return
    spec = EvaluationSpec(cutoffs=(3,), ideal=ideal, no_positive=no_positive, max_grade=2,
                          unknown="zero", unjudged="zero")
    rows = score(*_frames(judged, runs), spec)
    a, b = rn.Result.ndcg(0, "a", 3), rn.Result.ndcg(0, "b", 3)
    plan = rn.plan_of([a, b], pairs=[(a, b)], n_bootstrap=0,
                      n_queries=rows["query_id"].n_unique())
    numbers = rn.Numbers(plan, rn.local_partial(rows, None, None, plan))
    means = {r: m for r, m in zip(
        ("a", "b"), numbers.aggregates(0.95).filter(pl.col("slice_column") == "all").sort(
            "ranker").select("macro_ndcg_min", "macro_ndcg_max").iter_rows())}
    pair = numbers.pair(0, 0.95)
    bounded = {(r, q) for r, q, every in rows.select(
        "ranker", "query_id", "every_grading_scored").iter_rows() if every}
    both = sorted({q for r, q in bounded if r == "a"} & {q for r, q in bounded if r == "b"})
    assert pair["n_bounded"] == len(both)
    for grades in itertools.product(range(3), repeat=len(holes)):
        graded = score(*_frames(judged, runs, dict(zip(holes, grades))), spec)
        value = {(r, q): v for r, q, v in graded.select("ranker", "query_id", "ndcg").iter_rows()}
        for ranker in ("a", "b"):
            mine = [value[(ranker, q)] for r, q in bounded if r == ranker]
            assert all(v is not None for v in mine)  # a number under every grading
            if mine:
                low, high = means[ranker]
                assert low - TOL <= np.mean(mine) <= high + TOL
        if both:
            difference = np.mean([value[("b", q)] - value[("a", q)] for q in both])
            assert pair["difference_min"] - TOL <= difference <= pair["difference_max"] + TOL


def test_a_verdict_holds_for_every_grading_only_when_its_range_excludes_zero():
    assert rn.holds_for_every_grading(-0.1, -0.2, -0.01) is True
    assert rn.holds_for_every_grading(-0.1, -0.2, 0.05) is False
    assert rn.holds_for_every_grading(0.1, 0.02, 0.3) is True
    assert rn.holds_for_every_grading(0.1, -0.02, 0.3) is False
    assert rn.holds_for_every_grading(0.0, -0.1, 0.1) is False
    assert rn.holds_for_every_grading(-0.1, None, None) is None
