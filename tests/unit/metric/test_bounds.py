"""ndcg_min and ndcg_max (contract section 3, rule 7) against brute force over every grading.

For every combination of ideal, ties, gain and no_positive, random queries with up to 8 holes
(unknown candidates, unjudged candidates and, under all_judged, unknown rows outside the
candidates), cutoffs 1..10 and grade scales 0..1 to 0..4: the kernel's bounds equal the least
and greatest NDCG@K over every grading (tests/support/bounds_oracle.py) to 1e-12, and the
number of the fully graded query, scored by the pipeline, lies within them. In pools of two or
three rankers, every joint grading of the union of their holes: each ranker's bounds are the
extremes over them, another ranker's unjudged documents included under all_judged.
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.bounds_oracle import (
    brute_force_bounds,
    brute_force_every_grading_scored,
    holes,
    judgments_frame,
)

TOL = 1e-12
MAX_HOLES = 8
# Not monotone in the grade: a hole's extremes are its least and largest gain, not grade 0 and 4.
GAIN_MAP = ((0, 0.0), (1, 3.0), (2, 1.0), (3, 5.0), (4, 2.0))
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCORES = [0.0, 0.5, 0.5, 1.0, 2.0, -1.0]  # few values: ties are frequent


@st.composite
def queries(draw, top_grade, all_judged):
    """[(query_id, candidates [(doc, score, rank)], judged {doc: grade | "u"})], each query with
    at most MAX_HOLES holes."""
    out = []
    for q in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 10))
        grade_st = st.one_of(st.integers(0, top_grade), st.just("u"), st.none())
        ranks = draw(st.permutations(range(1, n + 1)))
        candidates, judged = [], {}
        for i in range(n):
            doc = f"d{draw(st.integers(0, 99)):02d}x{i}"
            candidates.append((doc, draw(st.sampled_from(SCORES)), ranks[i]))
            grade = draw(grade_st)
            if grade is not None:
                judged[doc] = grade
        for j in range(draw(st.integers(0, 3))):  # judged, not retrieved
            judged[f"out{j}"] = draw(st.one_of(st.integers(0, top_grade), st.just("u")))
        n_holes = sum(judged.get(doc, "u") == "u" for doc, _, _ in candidates) + (
            sum(g == "u" and d.startswith("out") for d, g in judged.items()) if all_judged else 0)
        if n_holes > MAX_HOLES:  # too many to enumerate: keep the first query's shape small
            continue
        out.append((f"q{q}", candidates, judged))
    return out


def _frames(case):
    cand = [(q, d, s, r) for q, cands, _ in case for d, s, r in cands]
    judg = [(q, d, g) for q, _, judged in case for d, g in judged.items()]
    candidates = pl.DataFrame(cand, schema=["query_id", "doc_id", "score", "rank"], orient="row")
    candidates = candidates.with_columns(pl.lit("r").alias("ranker"))
    return candidates, judgments_frame(judg)


@pytest.mark.parametrize("no_positive", ["exclude", "zero", "one"])
@pytest.mark.parametrize("gain", ["linear", "exponential", GAIN_MAP])
@pytest.mark.parametrize("ties", ["average", "doc_id", "trec_eval", "rank"])
@pytest.mark.parametrize("ideal", ["candidates", "all_judged"])
@SETTINGS
@given(data=st.data())
def test_bounds_equal_brute_force_and_hold_the_graded_value(ideal, ties, gain, no_positive,
                                                           data):
    top_grade = data.draw(st.integers(1, 4), label="top_grade")
    case = data.draw(queries(top_grade, ideal == "all_judged"), label="queries")
    if not case:
        return
    cutoffs = tuple(sorted(data.draw(st.sets(st.integers(1, 10), min_size=1, max_size=2),
                                     label="cutoffs")))
    spec = EvaluationSpec(
        cutoffs=cutoffs, gain=gain, ideal=ideal, ties=ties, no_positive=no_positive,
        max_grade=top_grade,
        unknown=data.draw(st.sampled_from(["incomplete", "exclude", "zero"]), label="unknown"),
        unjudged=data.draw(st.sampled_from(["incomplete", "exclude", "zero"]), label="unjudged"))
    rows = score(*_frames(case), spec)
    got = {(q, k): (lo, hi, n) for q, k, lo, hi, n in rows.select(
        "query_id", "cutoff", "ndcg_min", "ndcg_max", "n_holes").iter_rows()}
    every = {(q, k): flag for q, k, flag in rows.select(
        "query_id", "cutoff", "every_grading_scored").iter_rows()}

    # One grading of every hole, the same in each query: the fully graded version.
    filled = []
    for q, candidates, judged in case:
        grading = {doc: data.draw(st.integers(0, top_grade)) for doc in holes(candidates, judged,
                                                                               spec)}
        filled.append((q, candidates, {**judged, **grading}))
    graded = {(q, k): v for q, k, v in score(*_frames(filled), spec).select(
        "query_id", "cutoff", "ndcg").iter_rows()}

    for q, candidates, judged in case:
        for k in cutoffs:
            low, high, n_holes = got[(q, k)]
            assert n_holes == len(holes(candidates, judged, spec))
            want_low, want_high = brute_force_bounds(candidates, judged, spec, k, top_grade)
            assert every[(q, k)] == brute_force_every_grading_scored(
                candidates, judged, spec, k, top_grade), (q, k, "every grading scored")
            if want_low is None:
                assert low is None and high is None, (q, k)
                continue
            assert low == pytest.approx(want_low, abs=TOL), (q, k, "min")
            assert high == pytest.approx(want_high, abs=TOL), (q, k, "max")
            value = graded[(q, k)]
            if value is not None:
                assert low - TOL <= value <= high + TOL, (q, k)


def test_unjudged_as_zero_is_not_a_lower_bound():
    """The worked case of the docs: grading the hole raises the ideal more than the DCG."""
    candidates = pl.DataFrame({"ranker": ["r"] * 3, "query_id": ["q"] * 3,
                               "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    judgments = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "grade": [1, 0],
                              "grade_status": ["graded", "graded"]})
    spec = EvaluationSpec(cutoffs=(3,), gain="linear", unjudged="zero", max_grade=3)
    row = score(candidates, judgments, spec).row(0, named=True)
    assert row["ndcg"] == 1.0
    assert row["ndcg_max"] == 1.0
    # c graded 3 at place 3: DCG = 1 + 3/2, ideal = 3 + 1/log2(3), NDCG = 2.5 / 3.6309...
    assert row["ndcg_min"] == pytest.approx(2.5 / (3 + 1 / np.log2(3)), abs=TOL)
    assert row["ndcg_min"] < row["ndcg"]


def test_a_gain_map_scores_where_the_holes_scale_has_gaps():
    # A map covering every grade present scores; a hole takes one of the map's grades (the
    # scale it declares), not a grade it leaves out (tests/unit/metric/test_gain_map_scale.py).
    candidates = pl.DataFrame({"ranker": ["r", "r"], "query_id": ["q", "q"],
                               "doc_id": ["a", "b"], "score": [1.0, 2.0]})
    judgments = pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "grade": [2],
                              "grade_status": ["graded"]})
    spec = EvaluationSpec(gain=((0, 0.0), (2, 3.0)), unjudged="zero", cutoffs=(2,))
    row = score(candidates, judgments, spec).row(0, named=True)
    # b (place 1) graded 0: a's gain 3 at place 2 over the ideal 3; graded 2, the ideal order.
    assert row["ndcg"] == pytest.approx(1 / np.log2(3), abs=TOL)
    assert row["ndcg_min"] == pytest.approx(1 / np.log2(3), abs=TOL)
    assert row["ndcg_max"] == pytest.approx(1.0, abs=TOL)
    narrowed = score(candidates, judgments, spec.replace(max_grade=0))
    assert narrowed["ndcg_min"].to_list() == narrowed["ndcg"].to_list()


@st.composite
def pools(draw, top_grade):
    """[(query_id, {ranker: candidates [(doc, score, rank)]}, judged {doc: grade | "u"})]:
    two or three rankers over a few shared documents per query, so that a document the version
    lacks is often returned by one ranker only; at most MAX_HOLES holes in the union."""
    out = []
    names = [f"r{i}" for i in range(draw(st.integers(2, 3)))]
    for q in range(draw(st.integers(1, 2))):
        docs = [f"d{i}" for i in range(draw(st.integers(2, 7)))]
        judged = {d: g for d in docs
                  if (g := draw(st.one_of(st.integers(0, top_grade), st.just("u"), st.none())))
                  is not None}
        for j in range(draw(st.integers(0 if judged else 1, 2))):  # returned by no ranker
            judged[f"out{j}"] = draw(st.one_of(st.integers(0, top_grade), st.just("u")))
        lists = {}
        for name in names:
            chosen = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=len(docs),
                                   unique=True))
            ranks = draw(st.permutations(range(1, len(chosen) + 1)))
            lists[name] = [(d, draw(st.sampled_from(SCORES)), r) for d, r in zip(chosen, ranks)]
        returned = {d for cands in lists.values() for d, _, _ in cands}
        union = {d for d in returned if judged.get(d, "u") == "u"} | {
            d for d, g in judged.items() if g == "u"}
        if len(union) <= MAX_HOLES - 2:
            out.append((f"q{q}", lists, judged))
    return out


@pytest.mark.parametrize("no_positive", ["exclude", "zero", "one"])
@pytest.mark.parametrize("ties", ["average", "doc_id"])
@pytest.mark.parametrize("ideal", ["candidates", "all_judged"])
@SETTINGS
@given(data=st.data())
def test_each_rankers_bounds_are_the_extremes_over_every_joint_grading_of_the_pool(
        ideal, ties, no_positive, data):
    """Several rankers in one pool: under all_judged a document only another ranker returns,
    graded, joins this ranker's ideal too. Every joint grading of the union of the pool's holes
    is enumerated and scored per ranker by brute force; each ranker's per-query bounds are the
    least and greatest of those values, and n_holes counts the holes that can move them."""
    top_grade = data.draw(st.integers(1, 2), label="top_grade")
    case = data.draw(pools(top_grade), label="pool")
    if not case:
        return
    k = data.draw(st.integers(1, 5), label="cutoff")
    spec = EvaluationSpec(cutoffs=(k,), gain=GAIN_MAP, ideal=ideal, ties=ties,
                          no_positive=no_positive, max_grade=top_grade, unknown="zero",
                          unjudged=data.draw(st.sampled_from(["exclude", "zero"])))
    frame = pl.DataFrame([(r, q, d, s, rank) for q, lists, _ in case
                          for r, cands in lists.items() for d, s, rank in cands],
                         schema=["ranker", "query_id", "doc_id", "score", "rank"], orient="row")
    judgments = judgments_frame([(q, d, g) for q, _, judged in case for d, g in judged.items()])
    got = {(r, q): (lo, hi, n) for r, q, lo, hi, n in score(frame, judgments, spec).select(
        "ranker", "query_id", "ndcg_min", "ndcg_max", "n_holes").iter_rows()}
    for q, lists, judged in case:
        returned = sorted({d for cands in lists.values() for d, _, _ in cands})
        union = sorted({d for d in returned if judged.get(d, "u") == "u"}
                       | {d for d, g in judged.items() if g == "u"})
        values = {r: [] for r in lists}
        for grades in itertools.product(range(top_grade + 1), repeat=len(union)):
            filled = {**judged, **dict(zip(union, grades))}
            for r, cands in lists.items():
                value = brute_force_bounds(cands, filled, spec, k, top_grade)[0]
                if value is not None:  # no hole left: the bounds are the graded number
                    values[r].append(value)
        for r, cands in lists.items():
            others = [d for o, more in lists.items() if o != r for d, _, _ in more]
            low, high, n_holes = got[(r, q)]
            assert n_holes == len(holes(cands, judged, spec, others)), (r, q)
            if ideal == "candidates":  # another ranker's document never enters this ideal
                mine = {d for d, _, _ in cands}
                assert n_holes == sum(judged.get(d, "u") == "u" for d in mine)
            if not values[r]:
                assert low is None and high is None, (r, q)
                continue
            assert low == pytest.approx(min(values[r]), abs=TOL), (r, q, "min")
            assert high == pytest.approx(max(values[r]), abs=TOL), (r, q, "max")
