"""ERR and RBP against their peers, per query, to 1e-12, on small hand-made queries (grades
0..4, ties, unjudged documents, judged documents the run lacks, a query without a relevant
document). Each peer's definition is written out here from its own source, independently of
the kernels: gdeval.pl (TREC Web track), Elasticsearch's _rank_eval expected_reciprocal_rank,
ir_measures (gdeval for ERR, cwl_eval for RBP(rel=N), trectools for graded RBP), ranx and
trec_eval 10's m_rbp.c. Where this project's convention matches the peer's the values are
equal; where it differs the test holds the difference docs/measures-peers.md states. ir_measures
itself is the oracle too where it runs here (gdeval needs perl and prints five decimals; the
cwl_eval and trectools providers need their packages)."""

from __future__ import annotations

import math
import shutil
import struct
import subprocess

import polars as pl
import pytest

from evaluation_pipeline.measures.parse import MeasureError, parse_measure
from evaluation_pipeline.metric import ndcg
from evaluation_pipeline.spec import profile
from tests.unit.metric.measures.support import dict_frames, score_dicts

TREC = profile("trec_eval")  # ties by doc_id descending, unjudged and unknown count 0

# Query 1 is the worked example of docs/measures-peers.md: x is unjudged, e is judged and not
# returned. Query 2 has three tie groups, two holding unjudged documents. Query 3 has no
# relevant document. Query 4 is longer, with ties. Query 5 is graded 4 throughout. No query's
# last score equals the next query's first (trectools would join them in one tie group).
QRELS = {
    "1": {"a": 4, "b": 0, "c": 2, "d": 1, "e": 3},
    "2": {"f": 2, "g": 0, "h": 1, "i": 4, "j": 3, "k": 0},
    "3": {"m": 0, "n": 0},
    "4": {"d00": 3, "d01": 0, "d02": 4, "d03": 1, "d04": 0, "d05": 2, "d06": 4, "d07": 0,
          "d08": 1, "d09": 3, "d10": 0, "d11": 2, "d20": 4},
    "5": {"p1": 4, "p2": 4, "p3": 4, "p4": 4, "p5": 4, "p6": 4},
}
RUN = {
    "1": {"c": 0.9, "x": 0.8, "a": 0.7, "b": 0.6, "d": 0.5},
    "2": {"h": 0.9, "f": 0.5, "g": 0.5, "i": 0.5, "u": 0.3, "j": 0.3, "k": 0.1, "v": 0.1},
    "3": {"m": 0.9, "n": 0.8, "w": 0.7},
    "4": {"d00": 6.0, "d01": 6.0, "d02": 5.0, "z1": 5.0, "d03": 4.0, "d04": 4.0, "d05": 4.0,
          "d06": 3.0, "d07": 2.0, "z2": 2.0, "d08": 2.0, "d09": 1.0, "d10": 0.0, "d11": 0.0},
    "5": {"p1": 0.9, "p2": 0.8, "p3": 0.7, "p4": 0.6, "p5": 0.5, "p6": 0.4},
}
CUTS = (1, 2, 3, 5, 10, 20)


def ours(names, spec=TREC, qrels=QRELS, run=RUN):
    """{query: {name as written: value}} from the measures' pass."""
    scored = score_dicts(qrels, run, names, spec)
    return {q: {n: scored[q][str(parse_measure(n))][0] for n in names} for q in scored}


def trec_order(scores: dict[str, float]) -> list[str]:
    """Score high to low, equal scores by doc_id descending: trec_eval's and gdeval.pl's
    runOrder (`$docnoA lt $docnoB` puts B first)."""
    return sorted(sorted(scores, reverse=True), key=lambda d: -scores[d])


def input_order(scores: dict[str, float]) -> list[str]:
    """Score high to low, equal scores in the run's own order: ir_measures'
    RunConverter.as_sorted_namedtuple_iter (a stable sort by score), which cwl_eval reads."""
    return sorted(scores, key=lambda d: -scores[d])


# ---- the peers, each as its source has it --------------------------------------------------

def gdeval_err(judged: dict[str, int], scores: dict[str, float], k: int,
               max_judgment: int = 4) -> float | None:
    """gdeval.pl: a judgment above $MAX_JUDGMENT (4) stops the script; only judgments > 0 are
    kept; a topic without one prints no line (None); R = (2^g - 1) / 2^4 over the first k."""
    if any(g > max_judgment for g in judged.values()):
        raise ValueError("format error")
    kept = {d: g for d, g in judged.items() if g > 0}
    if not kept:
        return None
    score, decay = 0.0, 1.0
    for i, d in enumerate(trec_order(scores)[:k]):
        r = (2 ** kept.get(d, 0) - 1) / 2 ** max_judgment
        score += r * decay / (i + 1)
        decay *= 1 - r
    return score


def es_err(ratings: list[int | None], maximum_relevance: int, k: int = 10,
           unknown_doc_rating: int | None = None) -> float:
    """Elasticsearch ExpectedReciprocalRank.evaluate: the first k hits; an unrated hit takes
    unknown_doc_rating, and when that is null it is skipped but keeps its rank; no check that a
    rating is at most maximum_relevance."""
    p, err = 1.0, 0.0
    for rank, rating in enumerate(ratings[:k], start=1):
        if rating is None:
            rating = unknown_doc_rating
        if rating is not None:
            prob = (math.pow(2, rating) - 1) / math.pow(2, maximum_relevance)
            err += p * prob / rank
            p *= 1 - prob
    return err


def cwl_rbp(grades: list[int | None], rel: int, p: float, max_n: int = 1000) -> float:
    """cwl_eval's RBPCWLMetric as ir_measures calls it: gain 1 when grade >= rel, an unjudged
    item gain 0 (worse case), the list padded or cut to max_n = 1000, and
    W_i = p^(i-1) / sum_{j < max_n} p^j."""
    gains = [1.0 if g is not None and g >= rel else 0.0 for g in grades][:max_n]
    w1 = 1.0 / sum(p ** j for j in range(max_n))
    return sum(w1 * p ** i * g for i, g in enumerate(gains))


def trectools_rbp(qrels: dict, run: dict, p: float, depth: int = 10 ** 9) -> dict[str, float]:
    """trectools TrecEval.get_rbp(binary_topical_relevance=False, average_ties=True) as
    ir_measures calls it: rows sorted by query then score, the first `depth` of a query, weight
    (1 - p) p^(rank-1), a tie group (equal consecutive scores over the whole frame, across
    query boundaries too) gets its mean weight, a relevant row (rel > 0) adds weight x rel."""
    rows = []
    for q in sorted(run):
        ranked = sorted(run[q].items(), key=lambda item: -item[1])[:depth]
        rows += [(q, d, s, (1 - p) * p ** i) for i, (d, s) in enumerate(ranked)]
    weights, start = [0.0] * len(rows), 0
    for end in range(1, len(rows) + 1):
        if end == len(rows) or rows[end][2] != rows[end - 1][2]:
            mean = sum(r[3] for r in rows[start:end]) / (end - start)
            weights[start:end] = [mean] * (end - start)
            start = end
    out: dict[str, float] = {}
    for (q, d, _, _), w in zip(rows, weights):
        rel = qrels.get(q, {}).get(d, 0)
        if rel > 0:
            out[q] = out.get(q, 0.0) + w * rel
    return out  # a query without a relevant row has no row (ir_measures then reports 0)


def ranx_rbp(grades: list[int | None], p: float, rel_lvl: int = 1) -> float:
    """ranx _rank_biased_precision (0.3.15 on): the raw grade of a document whose grade is at
    least rel_lvl, else 0; (1 - p) sum p^(i-1) grade_i."""
    return (1 - p) * sum(p ** i * (g if g is not None and g >= rel_lvl else 0)
                         for i, g in enumerate(grades))


def trec_eval_10_rbp(judged: dict[str, int], scores: dict[str, float], p: float, start: float,
                     gains: dict[int, float] | None = None) -> float:
    """trec_eval 10 m_rbp.c with `start` in the never-set locals min and max: setup_gains gives
    levels 0..(largest grade judged for the query) the gain of their level (or a gain= param);
    min and max run over those gains (a comparison with NaN is false, as in C); when
    min < 0 or max > 1 every gain becomes (gain - min) / (max - min); an unjudged document has
    no level and gain 0; the whole list counts."""
    top = max((g for g in judged.values() if g >= 0), default=0)
    level_gain = {level: float(level) for level in range(top + 1)}
    level_gain.update(gains or {})
    lo = hi = start
    for g in level_gain.values():
        if g < lo:
            lo = g
        if g > hi:
            hi = g
    if lo < 0 or hi > 1:
        level_gain = {lv: (g - lo) / (hi - lo) for lv, g in level_gain.items()}
    total = 0.0
    for i, d in enumerate(trec_order(scores)):
        total += level_gain.get(judged.get(d, -1), 0.0) * p ** i
    return (1 - p) * total


def grades_in(order: list[str], judged: dict[str, int]) -> list[int | None]:
    return [judged.get(d) for d in order]


# ---- ERR -------------------------------------------------------------------------------------

def test_err_at_k_equals_gdeval_on_grades_0_to_4():
    """ERR@k (max_rel 4) is gdeval's ERR@k; a query gdeval prints no line for (no judgment
    above 0) scores 0 here, as ir_measures reports it."""
    names = [f"ERR@{k}" for k in CUTS] + ["ERR(max_rel=4)@10"]
    scored = ours(names)
    for q in RUN:
        for k in CUTS:
            peer = gdeval_err(QRELS[q], RUN[q], k)
            assert scored[q][f"ERR@{k}"] == pytest.approx(
                0.0 if peer is None else peer, abs=1e-12), (q, k)
        assert scored[q]["ERR(max_rel=4)@10"] == scored[q]["ERR@10"]
    assert gdeval_err(QRELS["3"], RUN["3"], 10) is None


def test_err_worked_example():
    """docs/measures-peers.md, query 1 ranked c(2) x(unjudged) a(4) b(0) d(1)."""
    scored = ours(["ERR@10", "ERR(max_rel=5)@10", "ERR@2"])["1"]
    assert scored["ERR@10"] == pytest.approx(3 / 16 + (13 / 16) * (15 / 16) / 3
                                             + (13 / 16) * (1 / 16) * (1 / 16) / 5, abs=1e-15)
    assert scored["ERR@10"] == pytest.approx(0.442041015625, abs=1e-12)
    assert scored["ERR(max_rel=5)@10"] == pytest.approx(0.238360595703125, abs=1e-12)
    assert scored["ERR@2"] == pytest.approx(0.1875, abs=1e-12)


@pytest.mark.parametrize("max_rel", [4, 5, 6])
def test_err_max_rel_equals_elasticsearch_maximum_relevance(max_rel):
    """ERR(max_rel=M)@k is Elasticsearch's expected_reciprocal_rank with maximum_relevance=M and
    k, the hits in this project's order; an unrated hit is skipped there and counts 0 here,
    both keeping its rank (unknown_doc_rating 0 gives the same)."""
    names = [f"ERR(max_rel={max_rel})@{k}" for k in CUTS]
    scored = ours(names)
    for q in RUN:
        ratings = grades_in(trec_order(RUN[q]), QRELS[q])
        for k, name in zip(CUTS, names):
            assert scored[q][name] == pytest.approx(es_err(ratings, max_rel, k), abs=1e-12)
            assert es_err(ratings, max_rel, k, unknown_doc_rating=0) == pytest.approx(
                es_err(ratings, max_rel, k), abs=1e-15)


def test_err_whole_list_is_elasticsearch_with_k_the_list_length():
    scored = ours(["ERR", "ERR(max_rel=6)"])
    for q in RUN:
        ratings = grades_in(trec_order(RUN[q]), QRELS[q])
        assert scored[q]["ERR"] == pytest.approx(es_err(ratings, 4, len(ratings)), abs=1e-12)
        assert scored[q]["ERR(max_rel=6)"] == pytest.approx(es_err(ratings, 6, len(ratings)),
                                                            abs=1e-12)


def test_a_grade_above_max_rel_is_refused_where_elasticsearch_and_gdeval_differ():
    """Elasticsearch takes maximum_relevance=3 with a grade 4: a probability 15/8 and a
    negative continuation, 0.751953125 on query 1; gdeval.pl stops on a grade 5; this project
    refuses both and names the measure that takes them."""
    ratings = grades_in(trec_order(RUN["1"]), QRELS["1"])
    assert es_err(ratings, 3, 10) == pytest.approx(
        3 / 8 + (5 / 8) * (15 / 8) / 3 + (5 / 8) * (1 - 15 / 8) * (1 / 8) / 5, abs=1e-15)
    assert es_err(ratings, 3, 10) == pytest.approx(0.751953125, abs=1e-12)
    with pytest.raises(MeasureError, match=r"max_rel=3"):
        ours(["ERR(max_rel=3)@10"], qrels={"1": QRELS["1"]}, run={"1": RUN["1"]})
    five = {"1": {**QRELS["1"], "b": 5}}
    with pytest.raises(ValueError):
        gdeval_err(five["1"], RUN["1"], 10)
    with pytest.raises(MeasureError, match=r"ERR\(max_rel=5\)"):
        ours(["ERR@10"], qrels=five, run={"1": RUN["1"]})
    scored = ours(["ERR(max_rel=5)@10"], qrels=five, run={"1": RUN["1"]})["1"]
    assert scored["ERR(max_rel=5)@10"] == pytest.approx(
        es_err(grades_in(trec_order(RUN["1"]), five["1"]), 5, 10), abs=1e-12)


def test_excluding_unjudged_documents_differs_from_elasticsearch_keeping_their_rank():
    """unjudged: exclude takes the document out of the list, so later ranks move up;
    Elasticsearch skips an unrated hit but keeps its rank (this project's zero)."""
    spec = TREC.replace(unjudged="exclude")
    scored = ours(["ERR@10"], spec=spec)
    for q in ("1", "2", "4"):
        ranked = trec_order(RUN[q])
        kept = [QRELS[q][d] for d in ranked if d in QRELS[q]]
        assert scored[q]["ERR@10"] == pytest.approx(es_err(kept, 4, 10), abs=1e-12)
        assert abs(scored[q]["ERR@10"] - es_err(grades_in(ranked, QRELS[q]), 4, 10)) > 1e-4


needs_perl = pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval needs perl")


@needs_perl
def test_err_matches_ir_measures_gdeval_to_its_five_decimals():
    ir_measures = pytest.importorskip("ir_measures")
    measures = [ir_measures.parse_measure(f"ERR@{k}") for k in CUTS]
    got = {(m.query_id, str(m.measure)): m.value
           for m in ir_measures.iter_calc(measures, QRELS, RUN)}
    scored = ours([f"ERR@{k}" for k in CUTS])
    for q in RUN:
        for k in CUTS:
            assert abs(got[(q, f"ERR@{k}")] - scored[q][f"ERR@{k}"]) <= 5e-6 + 1e-12, (q, k)
    assert got[("3", "ERR@10")] == 0.0  # gdeval prints no line; ir_measures fills 0
    assert got[("1", "ERR@10")] == 0.44204  # printed with %.5f


@needs_perl
def test_ir_measures_err_needs_numeric_query_ids():
    """gdeval.pl keeps what follows the last '-' of a topic and stops unless it is digits."""
    ir_measures = pytest.importorskip("ir_measures")
    with pytest.raises(subprocess.CalledProcessError):
        list(ir_measures.iter_calc([ir_measures.parse_measure("ERR@10")],
                                   {"q1": QRELS["1"]}, {"q1": RUN["1"]}))


# ---- RBP -------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.5, 0.8, 0.9, 0.95])
def test_binary_rbp_equals_cwl_eval(p):
    """RBP(rel=N,p=P) is ir_measures' RBP(rel=N,p=P) (cwl_eval) with the run's ties in trec
    order: cwl's 1 / sum_{j<1000} p^j is 1 - p to far below 1e-12 for p <= 0.95."""
    names = [f"RBP(rel={r},p={p})" for r in (1, 2, 3)]
    scored = ours(names)
    for q in RUN:
        grades = grades_in(trec_order(RUN[q]), QRELS[q])
        for r, name in zip((1, 2, 3), names):
            assert scored[q][name] == pytest.approx(cwl_rbp(grades, r, p), abs=1e-12), (q, r)


def test_binary_rbp_near_p_1_differs_from_cwl_eval_by_its_finite_normaliser():
    """cwl_eval weighs place i by p^(i-1) / sum_{j<1000} p^j, this project (and Moffat and
    Zobel) by (1 - p) p^(i-1): at p = 0.99 the ratio is 1 / (1 - 0.99^1000)."""
    p = 0.99
    scored = ours([f"RBP(rel=1,p={p})"])
    for q in ("1", "2", "4", "5"):
        grades = grades_in(trec_order(RUN[q]), QRELS[q])
        peer = cwl_rbp(grades, 1, p)
        assert peer == pytest.approx(scored[q][f"RBP(rel=1,p={p})"] / (1 - p ** 1000),
                                     abs=1e-12)
        assert peer - scored[q][f"RBP(rel=1,p={p})"] > 1e-7


def test_binary_rbp_under_doc_id_ties_is_cwl_eval_with_the_run_in_doc_id_order():
    """ir_measures keeps equal scores in the run's order: a run listed by doc_id ascending is
    this project's ties: doc_id."""
    scored = ours(["RBP(rel=1,p=0.8)"], spec=TREC.replace(ties="doc_id"))
    for q in RUN:
        listed = {d: RUN[q][d] for d in sorted(RUN[q])}
        grades = grades_in(input_order(listed), QRELS[q])
        assert scored[q]["RBP(rel=1,p=0.8)"] == pytest.approx(cwl_rbp(grades, 1, 0.8),
                                                              abs=1e-12)


@pytest.mark.parametrize("max_rel", [4, 5, 8])
@pytest.mark.parametrize("p", [0.5, 0.8, 0.9])
def test_graded_rbp_is_grade_over_max_rel(p, max_rel):
    """RBP (no rel) is (1 - p) sum_i p^(i-1) g_i / max_rel."""
    name = f"RBP(p={p},max_rel={max_rel})"
    scored = ours([name, f"RBP(p={p})"] if max_rel == 4 else [name])
    for q in RUN:
        grades = grades_in(trec_order(RUN[q]), QRELS[q])
        expected = (1 - p) * sum(p ** i * (g or 0) / max_rel for i, g in enumerate(grades))
        assert scored[q][name] == pytest.approx(expected, abs=1e-12)
        if max_rel == 4:
            assert scored[q][f"RBP(p={p})"] == scored[q][name]


@pytest.mark.parametrize("p", [0.5, 0.8, 0.9])
def test_graded_rbp_times_max_rel_is_trectools_and_ranx_raw_grades(p):
    """trectools (ir_measures' RBP without rel) and ranx weigh the raw grade: each is max_rel
    times this project's graded RBP (trectools averages ties, as ties: average does here; ranx
    over one order, here trec's). On query 5 (grade 4 throughout) they exceed 1."""
    avg = ours([f"RBP(p={p})"], spec=TREC.replace(ties="average"))
    ordered = ours([f"RBP(p={p})"])
    tt = trectools_rbp(QRELS, RUN, p)
    for q in RUN:
        assert 4 * avg[q][f"RBP(p={p})"] == pytest.approx(tt.get(q, 0.0), abs=1e-12), q
        grades = grades_in(trec_order(RUN[q]), QRELS[q])
        assert 4 * ordered[q][f"RBP(p={p})"] == pytest.approx(ranx_rbp(grades, p), abs=1e-12)
    assert tt["5"] > 1 and ranx_rbp(grades_in(trec_order(RUN["5"]), QRELS["5"]), p) > 1
    assert ordered["5"][f"RBP(p={p})"] <= 1


def test_ranx_rel_lvl_keeps_raw_grades():
    """ranx's rbp.9-l2 drops grades below 2 and weighs the rest by their grade: on query 1,
    (1 - 0.9)(2 + 0.81 x 4) = 0.524, where RBP(rel=2,p=0.9) = 0.181 and the graded RBP
    restricted to grades >= 2 would be 0.524 / 4."""
    grades = grades_in(trec_order(RUN["1"]), QRELS["1"])
    scored = ours(["RBP(rel=2,p=0.9)", "RBP(p=0.9)"])["1"]
    assert ranx_rbp(grades, 0.9, 2) == pytest.approx(0.524, abs=1e-12)
    assert scored["RBP(rel=2,p=0.9)"] == pytest.approx(0.181, abs=1e-12)
    assert ranx_rbp(grades, 0.9, 1) == pytest.approx(4 * scored["RBP(p=0.9)"], abs=1e-12)


def test_trectools_joins_a_tie_across_two_queries():
    """trectools finds tie groups over the whole run: query 1's last score 0.5 and query 2's
    first 0.5 share one mean weight, (0.25 + 0.5) / 2, where each query alone gives 0.25 and
    0.5 (RBP(max_rel=1,p=0.5), here the raw grade 1)."""
    qrels = {"1": {"a": 1}, "2": {"b": 1}}
    run = {"1": {"z": 0.9, "a": 0.5}, "2": {"b": 0.5, "y": 0.1}}
    scored = ours(["RBP(p=0.5,max_rel=1)"], spec=TREC.replace(ties="average"), qrels=qrels,
                  run=run)
    assert (scored["1"]["RBP(p=0.5,max_rel=1)"], scored["2"]["RBP(p=0.5,max_rel=1)"]) == (
        pytest.approx(0.25, abs=1e-12), pytest.approx(0.5, abs=1e-12))
    tt = trectools_rbp(qrels, run, 0.5)
    assert (tt["1"], tt["2"]) == (pytest.approx(0.375), pytest.approx(0.375))


def test_rbp_worked_example():
    """docs/measures-peers.md, query 1 at p = 0.9."""
    scored = ours(["RBP(p=0.9)", "RBP(rel=1,p=0.9)", "RBP(rel=2,p=0.9)", "RBP"])["1"]
    assert scored["RBP(p=0.9)"] == pytest.approx(0.1 * (2 + 0.81 * 4 + 0.6561 * 1) / 4,
                                                 abs=1e-15)
    assert scored["RBP(p=0.9)"] == pytest.approx(0.1474025, abs=1e-12)
    assert scored["RBP(rel=1,p=0.9)"] == pytest.approx(0.24661, abs=1e-12)
    assert scored["RBP(rel=2,p=0.9)"] == pytest.approx(0.181, abs=1e-12)
    assert scored["RBP"] == pytest.approx(0.2 * (2 + 0.64 * 4 + 0.4096) / 4, abs=1e-12)
    assert scored["RBP"] == pytest.approx(0.24848, abs=1e-12)


def test_ir_measures_default_pipeline_has_no_graded_rbp_nor_rbp_at_k():
    """ir_measures 0.4 leaves trectools out of its default pipeline ("buggy; will add back
    later"), and cwl_eval takes no cutoff: RBP(p=...) and RBP(rel=1)@5 find no provider."""
    ir_measures = pytest.importorskip("ir_measures")
    for name in ("RBP(p=0.9)", "RBP(rel=1)@5"):
        with pytest.raises(ValueError, match="Unsupported"):
            ir_measures.calc_aggregate([ir_measures.parse_measure(name)], QRELS, RUN)


def test_rbp_matches_ir_measures_cwl_eval():
    pytest.importorskip("cwl")
    ir_measures = pytest.importorskip("ir_measures")
    in_trec_order = {q: {d: RUN[q][d] for d in trec_order(RUN[q])} for q in RUN}
    names = ["RBP(rel=1,p=0.8)", "RBP(rel=2,p=0.9)", "RBP(rel=3,p=0.5)"]
    got = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(
        [ir_measures.parse_measure(n) for n in names], QRELS, in_trec_order)}
    scored = ours(names)
    for q in RUN:
        for n in names:
            key = str(ir_measures.parse_measure(n))
            assert got[(q, key)] == pytest.approx(scored[q][n], abs=1e-12), (q, n)


def test_graded_rbp_matches_ir_measures_trectools():
    """One RBP per call: ir_measures' trectools provider builds each RBP's function in a loop
    whose closure reads the loop's last measure, so every RBP of one call takes the last one's
    p and cutoff."""
    pytest.importorskip("trectools")
    ir_measures = pytest.importorskip("ir_measures")
    names = ["RBP(p=0.8)", "RBP(p=0.9)"]
    scored = ours(names, spec=TREC.replace(ties="average"))
    for n in names:
        got = {m.query_id: m.value for m in ir_measures.trectools.iter_calc(
            [ir_measures.parse_measure(n)], QRELS, RUN)}
        for q in RUN:
            assert got.get(q, 0.0) == pytest.approx(4 * scored[q][n], abs=1e-12), (q, n)
    together = {(m.query_id, str(m.measure)): m.value for m in ir_measures.trectools.iter_calc(
        [ir_measures.parse_measure(n) for n in names], QRELS, RUN)}
    assert together[("1", "RBP")] == pytest.approx(4 * scored["1"]["RBP(p=0.9)"], abs=1e-12)
    cross = {"1": {"z": 0.9, "a": 0.5}, "2": {"b": 0.5, "y": 0.1}}
    qrels = {"1": {"a": 1}, "2": {"b": 1}}
    got = {m.query_id: m.value for m in ir_measures.trectools.iter_calc(
        [ir_measures.parse_measure("RBP(p=0.5)")], qrels, cross)}
    assert got == {q: pytest.approx(v, abs=1e-12)
                   for q, v in trectools_rbp(qrels, cross, 0.5).items()}


# ---- trec_eval 10 ----------------------------------------------------------------------------

# The bytes gcc's -ftrivial-auto-var-init=pattern writes into an uninitialised local (0xFE).
PATTERN = struct.unpack("<d", b"\xfe" * 8)[0]
# docs/measures-peers.md's trec_eval 10 example: query 1 as above, query 2 judged 0..2 only.
TE_QRELS = {"1": QRELS["1"], "2": {"f": 2, "g": 0, "h": 1}}
TE_RUN = {"1": RUN["1"], "2": {"f": 0.9, "g": 0.8, "h": 0.7}}
BINARY = {1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0}  # -m rbp.p=0.9,1=1,2=1,3=1,4=1


def trec_eval_10(start: float, gains: dict[int, float] | None = None) -> dict[str, float]:
    return {q: trec_eval_10_rbp(TE_QRELS[q], TE_RUN[q], 0.9, start, gains) for q in TE_RUN}


def test_trec_eval_10_rbp_depends_on_values_it_never_sets():
    """m_rbp.c compares the gains with `min` and `max` before giving them a value. The same
    source printed rbp 0.1474 and 0.1405 (queries 1 and 2) built by gcc 12 as its Makefile has
    it, and 0.3195 and 0.2710 built with -ftrivial-auto-var-init=pattern; a NaN there would
    leave the raw grades."""
    zero, pattern, nan = trec_eval_10(0.0), trec_eval_10(PATTERN), trec_eval_10(math.nan)
    assert [f"{zero[q]:.4f}" for q in TE_RUN] == ["0.1474", "0.1405"]
    assert [f"{pattern[q]:.4f}" for q in TE_RUN] == ["0.3195", "0.2710"]
    scored = ours(["RBP(p=0.9)", "RBP(p=0.9,rel=1)"], qrels=TE_QRELS, run=TE_RUN)
    assert (scored["1"]["RBP(p=0.9)"], scored["2"]["RBP(p=0.9)"]) == (
        pytest.approx(0.1474025, abs=1e-12), pytest.approx(0.07025, abs=1e-12))
    # min and max starting in 0..1: a grade over the query's own largest grade (4, then 2)
    assert zero["1"] == pytest.approx(scored["1"]["RBP(p=0.9)"], abs=1e-12)
    assert zero["2"] == pytest.approx(4 / 2 * scored["2"]["RBP(p=0.9)"], abs=1e-12)
    # the pattern (about -5e302) in min: every judged document, grade 0 too, gains 1
    for q in TE_RUN:
        judged = [d in TE_QRELS[q] for d in trec_order(TE_RUN[q])]
        assert pattern[q] == pytest.approx(0.1 * sum(0.9 ** i for i, j in enumerate(judged) if j),
                                           abs=1e-12)
        assert pattern[q] > scored[q]["RBP(p=0.9,rel=1)"] + 0.05
    # ... and a query without a relevant document (query 3 above) scores above 0
    assert trec_eval_10_rbp(QRELS["3"], RUN["3"], 0.9, PATTERN) == pytest.approx(0.19, abs=1e-12)
    assert ours(["RBP(p=0.9)"])["3"]["RBP(p=0.9)"] == 0.0
    # NaN: no comparison holds, nothing is normalised: the raw grades
    for q in TE_RUN:
        assert nan[q] == pytest.approx(4 * scored[q]["RBP(p=0.9)"], abs=1e-12)


def test_trec_eval_10_binary_gains_are_binary_rbp_only_when_min_and_max_start_in_0_to_1():
    scored = ours(["RBP(p=0.9,rel=1)"], qrels=TE_QRELS, run=TE_RUN)
    binary = trec_eval_10(0.0, BINARY)
    assert [f"{binary[q]:.4f}" for q in TE_RUN] == ["0.2466", "0.1810"]  # as printed
    for q in TE_RUN:
        assert binary[q] == pytest.approx(scored[q]["RBP(p=0.9,rel=1)"], abs=1e-12)
    assert trec_eval_10(PATTERN, BINARY) == trec_eval_10(PATTERN)


def test_trec_eval_10_leaves_a_query_judged_0_and_1_unnormalised():
    """With min and max in 0..1, a query whose largest grade is 1 keeps gains 0 and 1: binary,
    where another query is graded by its own largest grade."""
    judged, scores = {"a": 1, "b": 0}, {"a": 0.9, "b": 0.8}
    scored = ours(["RBP(p=0.9)", "RBP(p=0.9,rel=1)"], qrels={"q": judged}, run={"q": scores})
    value = trec_eval_10_rbp(judged, scores, 0.9, 0.0)
    assert value == pytest.approx(scored["q"]["RBP(p=0.9,rel=1)"], abs=1e-12)
    assert value == pytest.approx(4 * scored["q"]["RBP(p=0.9)"], abs=1e-12)


# ---- the scoring every engine calls ------------------------------------------------------------

def test_worked_example_through_the_scoring_path():
    """The doc's numbers for query 1 as ndcg.score writes them."""
    judgments, candidates = dict_frames(QRELS, RUN)
    names = ["nDCG@10", "ERR@10", "ERR(max_rel=5)@10", "RBP(p=0.9)", "RBP(rel=1,p=0.9)",
             "RBP(rel=2,p=0.9)", "RBP"]
    spec = TREC.replace(measures=names)
    rows = ndcg.score(candidates, judgments, spec).filter(pl.col("query_id") == "1")
    got = {r["measure"]: r["value"] for r in rows.iter_rows(named=True)}
    expected = {"ERR@10": 0.442041015625, "ERR(max_rel=5)@10": 0.238360595703125,
                "RBP(p=0.9)": 0.1474025, "RBP(rel=1,p=0.9)": 0.24661,
                "RBP(rel=2,p=0.9)": 0.181, "RBP": 0.24848}
    for name, value in expected.items():
        assert got[str(parse_measure(name))] == pytest.approx(value, abs=1e-12), name
