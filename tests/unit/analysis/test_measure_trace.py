"""The trace of every declared measure reproduces the number the package scores for it, and
shows each position's part: RR's first relevant position, AP's precision at each relevant
document, the counts and denominators of P, R, Success, Judged, Rprec and Bpref, DCG's, ERR's
and RBP's terms. Report pages of a measure carry it in their file names; nDCG@K's keep theirs."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation_pipeline.analysis.explain import Trace, explain
from evaluation_pipeline.analysis.measure_trace import (
    MeasureTrace,
    explain_measure,
    explain_measures,
    scoring_spec,
)
from evaluation_pipeline.measures.declarations import DECLARATIONS
from evaluation_pipeline.measures.parse import parse_measure
from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.report.traces import (
    night_trace_file_name,
    trace_file_name,
    write_night_traces,
    write_regression_traces,
)
from evaluation_pipeline.spec import EvaluationSpec
from tests.unit.analysis.test_explain import random_pool

TOL = 1e-12

# Every declared measure, with and without its parameters (a cutoff, rel, judged_only, the
# dcg gain, p and max_rel), and no measure left out.
MEASURES = (
    "nDCG", "nDCG(dcg='log2')@4", "nDCG(judged_only=True)@3", "nDCG(dcg='exp-log2')@2",
    "DCG@4", "DCG(dcg='log2',judged_only=True)@3",
    "RR", "RR(rel=2)@5", "RR(judged_only=True)@3",
    "AP", "AP(rel=2)@4", "AP(judged_only=True)",
    "P@3", "P(rel=2,judged_only=True)@5",
    "R@4", "R(rel=2)@2",
    "Success@2", "Success(rel=3)@6",
    "Judged@4", "Judged",
    "Rprec", "Rprec(rel=2,judged_only=True)",
    "Bpref", "Bpref(rel=2)",
    "ERR@5", "ERR", "RBP", "RBP(rel=2,p=0.5)@4", "RBP(max_rel=5)@3",
)
assert {parse_measure(m).name for m in MEASURES} == {d.name for d in DECLARATIONS}

POLICIES = (
    {"unknown": "zero", "unjudged": "zero"},
    {"unknown": "exclude", "unjudged": "exclude"},
    {"unknown": "zero", "unjudged": "exclude", "ideal": "all_judged"},
    {"unknown": "incomplete", "unjudged": "zero", "no_positive": "zero"},
    {"unknown": "exclude", "unjudged": "incomplete", "no_positive": "one",
     "ideal": "all_judged", "gain": "linear", "discount": "1/rank"},
)


def measures_for(ties: str) -> list:
    """The measures a spec with ``ties`` scores (AP, Bpref and ERR refuse ties: average)."""
    measures = [parse_measure(m) for m in MEASURES]
    return [m for m in measures if ties != "average" or m.declaration.average_ties]


def check_against_scoring(candidates, judgments, spec, measures) -> int:
    """Every (ranker, query, measure) the package scores, traced: the same status and value,
    and, where scored, the trace's own number equal to it to 1e-12. Returns how many were
    scored."""
    kernel = score(candidates, judgments, scoring_spec(spec, measures)).filter(
        pl.col("measure").is_in([str(m) for m in measures]))
    keys = [(r["ranker"], r["query_id"], r["measure"]) for r in kernel.iter_rows(named=True)]
    traces = explain_measures(candidates, judgments, spec, keys)
    scored = 0
    for row, trace in zip(kernel.iter_rows(named=True), traces):
        assert isinstance(trace, MeasureTrace)
        assert (trace.ranker, trace.query_id, trace.measure) == (
            row["ranker"], row["query_id"], row["measure"])
        if row["status"] == "missing_from_run":
            assert trace.status == "missing_from_run" and trace.value is None
            continue
        assert trace.status == row["status"], (row, trace.formula)
        assert trace.value == row["value"] or (trace.value is None and row["value"] is None)
        if trace.status == "scored":
            scored += 1
            assert math.isclose(trace.traced, row["value"], rel_tol=TOL, abs_tol=TOL), (
                row, trace.traced, trace.formula)
            if not trace.measure.startswith("nDCG"):
                # Each position's contribution: together, the number.
                total = float(trace.candidates["contribution"].sum())
                assert math.isclose(total, row["value"], rel_tol=1e-9, abs_tol=1e-9)
    return scored


@pytest.mark.parametrize("ties", ["average", "doc_id", "trec_eval", "rank"])
@pytest.mark.parametrize("policies", POLICIES)
def test_every_measure_traced_is_the_scored_number(ties, policies):
    candidates, judgments = random_pool(seed=3)
    # Ranker b does not return q2: its traces say so, with no number of their own.
    candidates = candidates.filter(~((pl.col("ranker") == "b") & (pl.col("query_id") == "q2")))
    spec = EvaluationSpec(cutoffs=(3,), ties=ties, **policies)
    assert check_against_scoring(candidates, judgments, spec, measures_for(ties)) > 100


GRADES = st.one_of(st.integers(0, 4), st.just("unknown"), st.just("unjudged"))


@st.composite
def pools(draw):
    """Small random pools: one or two rankers, coarse scores (ties), every class of document,
    grades 0..4, and judged documents no ranker returned."""
    candidates, judged = [], []
    for q in range(draw(st.integers(1, 3))):
        docs = [f"d{q}-{i}" for i in range(draw(st.integers(1, 9)))]
        for doc in docs + [f"out{q}-{j}" for j in range(draw(st.integers(0, 2)))]:
            grade = draw(GRADES)
            if grade == "unknown":
                judged.append((f"q{q}", doc, None, "unknown"))
            elif grade != "unjudged":
                judged.append((f"q{q}", doc, grade, "graded"))
        for ranker in ("a", "b")[:draw(st.integers(1, 2))]:
            ranks = draw(st.permutations(range(1, len(docs) + 1)))
            for doc, rank in zip(docs, ranks):
                candidates.append((ranker, f"q{q}", doc,
                                   draw(st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.0])), rank))
    frame = pl.DataFrame(candidates, schema=["ranker", "query_id", "doc_id", "score", "rank"],
                         orient="row", schema_overrides={"score": pl.Float64}).with_columns(
        pl.lit("p").alias("candidate_pool"))
    judgments = pl.DataFrame(
        judged, schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64,
                        "grade_status": pl.String}, orient="row",
    ).with_columns(pl.lit("v1").alias("judgment_version"))
    return frame, judgments


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pool=pools(), ties=st.sampled_from(["average", "doc_id", "trec_eval", "rank"]),
       policies=st.sampled_from(POLICIES), cutoff=st.integers(1, 6))
def test_every_measure_on_random_small_pools(pool, ties, policies, cutoff):
    candidates, judgments = pool
    if judgments.height == 0:
        return
    spec = EvaluationSpec(cutoffs=(cutoff,), ties=ties, **policies)
    check_against_scoring(candidates, judgments, spec, measures_for(ties))


def frames(docs, scores, grades):
    """One ranker's list of one query; a grade None is unjudged, "u" unknown."""
    candidates = pl.DataFrame({"candidate_pool": "p", "ranker": "r", "query_id": "q",
                               "doc_id": docs, "score": scores})
    judged = [(d, g) for d, g in zip(docs, grades) if g is not None]
    judgments = pl.DataFrame({
        "query_id": "q", "doc_id": [d for d, _ in judged],
        "grade": [None if g == "u" else g for _, g in judged],
        "grade_status": ["unknown" if g == "u" else "graded" for _, g in judged],
        "judgment_version": "v1"}, schema_overrides={"grade": pl.Int64})
    return candidates, judgments


def trace_of(measure, spec, docs, scores, grades) -> MeasureTrace:
    candidates, judgments = frames(docs, scores, grades)
    return explain_measure(candidates, judgments, spec, query_id="q", ranker="r",
                           measure=measure)


def test_rr_names_the_first_relevant_position():
    spec = EvaluationSpec(cutoffs=(5,), ties="doc_id")
    trace = trace_of("RR(rel=2)@5", spec, ["a", "b", "c", "d"], [4.0, 3.0, 2.0, 1.0],
                     [1, None, 3, 2])
    # "b" is unjudged and excluded: "c" is the first relevant, at position 2 of the kept list.
    assert trace.counts["first_relevant_position"] == 2
    assert trace.value == trace.traced == 0.5
    assert trace.candidates["contribution"].to_list() == [0.0, 0.0, 0.5, 0.0]
    assert trace.candidates["relevant"].to_list() == [False, None, True, True]
    assert trace.candidates["note"][1] == "dropped: unjudged=exclude"
    assert "at position 2: RR = 1/2" in trace.formula


def test_rr_of_a_tie_group_shares_the_expectation_among_its_relevant_members():
    # Three tied at the top, one relevant: 1/3 (1/1 + 1/2 + 1/3).
    spec = EvaluationSpec(cutoffs=(5,))
    trace = trace_of("RR@5", spec, ["a", "b", "c"], [1.0, 1.0, 1.0], [0, 2, 0])
    assert trace.value == pytest.approx((1 + 1 / 2 + 1 / 3) / 3, abs=TOL)
    assert trace.candidates["position_first"].to_list() == [1, 1, 1]
    assert trace.candidates["position_last"].to_list() == [3, 3, 3]
    assert trace.candidates["contribution"].to_list() == [0.0, trace.value, 0.0]


def test_ap_shows_the_precision_at_each_relevant_document_and_r():
    spec = EvaluationSpec(cutoffs=(5,), ties="doc_id", ideal="all_judged")
    candidates, judgments = frames(["a", "b", "c", "d"], [4.0, 3.0, 2.0, 1.0], [2, 0, 1, 0])
    # A relevant document no ranker returned: R = 3 under all_judged.
    judgments = pl.concat([judgments, judgments.head(1).with_columns(pl.lit("z").alias(
        "doc_id"))])
    trace = explain_measure(candidates, judgments, spec, query_id="q", ranker="r",
                            measure="AP")
    assert trace.candidates["precision"].to_list() == [1.0, None, 2 / 3, None]
    assert trace.candidates["relevant_so_far"].to_list() == [1, None, 2, None]
    assert trace.counts | {} == {"rel": 1, "cutoff": None, "R": 3, "relevant_retrieved": 2,
                                 "sum_precision": 1 + 2 / 3}
    assert trace.value == pytest.approx((1 + 2 / 3) / 3, abs=TOL) and trace.traced == trace.value


def test_precision_recall_and_success_show_counts_and_denominators():
    spec = EvaluationSpec(cutoffs=(5,), ties="doc_id")
    args = (["a", "b", "c", "d"], [4.0, 3.0, 2.0, 1.0], [0, 2, 1, 3])
    p = trace_of("P@3", spec, *args)
    assert p.counts == {"rel": 1, "cutoff": 3, "relevant_within_cutoff": 2.0}
    assert p.value == pytest.approx(2 / 3) and p.candidates["weight"].to_list() == [1, 1, 1, 0]
    r = trace_of("R@2", spec, *args)
    assert (r.counts["R"], r.counts["relevant_within_cutoff"], r.value) == (3, 1.0, 1 / 3)
    s = trace_of("Success(rel=3)@3", spec, *args)
    assert (s.value, s.counts["first_relevant_position"]) == (0.0, None)
    assert "no relevant document" in s.formula


def test_bpref_reads_graded_documents_only_and_counts_nonrelevant_above():
    spec = EvaluationSpec(cutoffs=(5,), ties="doc_id", unjudged="zero")
    trace = trace_of("Bpref", spec, ["a", "b", "c", "d"], [4.0, 3.0, 2.0, 1.0],
                     [0, None, 1, 2])
    assert trace.candidates["note"].to_list() == [
        "", "not graded: Bpref reads graded documents only", "", ""]
    assert trace.candidates["nonrelevant_above"].to_list() == [None, None, 1, 1]
    assert (trace.counts["R"], trace.counts["N"]) == (2, 1)
    assert trace.value == trace.traced == 0.0  # 1 - min(1, 2) / min(2, 1) for each


def test_a_query_without_a_relevant_document_has_no_traced_number():
    spec = EvaluationSpec(cutoffs=(5,), ties="doc_id", no_positive="zero")
    trace = trace_of("RR(rel=3)@5", spec, ["a", "b"], [2.0, 1.0], [1, 2])
    assert (trace.status, trace.value, trace.traced, trace.counts["R"]) == (
        "no_positive", 0.0, None, 0)
    assert "R = 0" in trace.formula


def test_a_plain_ndcg_is_the_ndcg_trace_and_a_missing_ranker_has_no_number():
    candidates, judgments = random_pool(seed=11)
    spec = EvaluationSpec(cutoffs=(3,))
    candidates = candidates.filter(~((pl.col("ranker") == "b") & (pl.col("query_id") == "q1")))
    plain, rr, missing = explain_measures(candidates, judgments, spec, [
        ("a", "q1", "nDCG@5"), ("a", "q1", "RR@5"), ("b", "q1", "RR@5")])
    assert isinstance(plain, Trace)
    assert plain.to_dict() == explain(candidates, judgments, EvaluationSpec(cutoffs=(5,)),
                                      query_id="q1", ranker="a", cutoff=5).to_dict()
    assert rr.status != "missing_from_run"
    assert (missing.status, missing.value, missing.candidates.height) == (
        "missing_from_run", None, 0)
    assert explain_measures(candidates, judgments, spec, []) == []


def test_a_measure_the_tie_rule_does_not_define_is_refused_as_scoring_refuses_it():
    candidates, judgments = random_pool(seed=1)
    with pytest.raises(Exception, match="not defined under ties: average"):
        explain_measure(candidates, judgments, EvaluationSpec(cutoffs=(3,)), query_id="q1",
                        ranker="a", measure="AP@3")


def test_a_trace_as_json_holds_its_counts_and_rows():
    spec = EvaluationSpec(cutoffs=(5,), ties="doc_id")
    shown = trace_of("ERR@2", spec, ["a", "b", "c"], [3.0, 2.0, 1.0], [2, 1, 4]).to_dict()
    assert shown["measure"] == "ERR@2" and shown["cutoff"] == 2 and shown["ideal"] is None
    assert [r["reach_chance"] for r in shown["candidates"]] == [1.0, 1 - 3 / 16, None]
    assert shown["value"] == pytest.approx(3 / 16 + (1 - 3 / 16) * (1 / 16) / 2, abs=TOL)


# -- report pages --------------------------------------------------------------------------


def old_trace_file_name(ranker, query_id, cutoff):
    """The name nDCG@K pages have always had (users script against them)."""
    import re
    key = f"{ranker}\x00{query_id}\x00{cutoff}"
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{ranker}__{query_id}__{cutoff}")[:80]
    return f"{readable}-{hashlib.sha256(key.encode()).hexdigest()[:8]}.html"


@pytest.mark.parametrize("ranker, query_id, cutoff", [("bm25", "q 1", 10), ("a/b", "é", 5)])
def test_ndcg_pages_keep_their_names_and_other_measures_carry_theirs(ranker, query_id, cutoff):
    old = old_trace_file_name(ranker, query_id, cutoff)
    assert trace_file_name(ranker, query_id, cutoff) == old
    assert trace_file_name(ranker, query_id, cutoff, f"nDCG@{cutoff}") == old
    assert night_trace_file_name(ranker, query_id, cutoff) == "night__" + old
    rr = trace_file_name(ranker, query_id, cutoff, f"RR(rel=2)@{cutoff}")
    assert rr != old and "RR_rel_2_" in rr
    assert trace_file_name(ranker, query_id, None, "Rprec") != trace_file_name(
        ranker, query_id, None, "Bpref")


def test_report_pages_of_other_measures(tmp_path):
    candidates, judgments = random_pool(seed=3)
    spec = EvaluationSpec(cutoffs=(3,), ties="doc_id")
    pair = {"first": "a", "second": "b", "cutoff": 5, "measure": "RR(rel=2)@5",
            "regressions": [{"query_id": "q1"}, {"query_id": "q4"}]}
    ndcg = {"first": "a", "second": "b", "cutoff": 3, "measure": "nDCG@3",
            "regressions": [{"query_id": "q1"}]}
    rprec = {"first": "a", "second": "b", "cutoff": None, "measure": "Rprec",
             "regressions": [{"query_id": "q2"}]}
    written = write_regression_traces(tmp_path / "traces", {"pairs": [ndcg, pair, rprec]},
                                      candidates, judgments, spec)
    assert sorted({(w["measure"], w["cutoff"] or 0) for w in written}) == [
        ("RR(rel=2)@5", 5), ("Rprec", 0), ("nDCG@3", 3)]
    assert len(written) == 8  # both rankers of four regressed queries, every measure
    for entry in written:
        page = (tmp_path / entry["path"]).read_text()
        if entry["measure"] == "nDCG@3":  # NDCG's page, its name and numbers as before
            assert entry["path"].endswith(trace_file_name(entry["ranker"], entry["query_id"], 3))
            assert entry["value"] == entry["ndcg"] and entry["dcg"] is not None
            continue
        assert entry["measure"] in page and "position_first" in page
        assert entry["dcg"] is None and entry["ndcg"] is None
        assert entry["path"].endswith(trace_file_name(entry["ranker"], entry["query_id"],
                                                      entry["cutoff"], entry["measure"]))
        scored = score(candidates, judgments, scoring_spec(spec, [parse_measure(
            entry["measure"])])).filter(
            (pl.col("ranker") == entry["ranker"]) & (pl.col("query_id") == entry["query_id"])
            & (pl.col("measure") == entry["measure"]))
        assert entry["value"] == scored["value"].item()


def test_night_pages_of_a_measure_are_of_that_measure(tmp_path):
    candidates, judgments = random_pool(seed=3)
    previous = candidates.with_columns(pl.col("score").reverse().over("ranker", "query_id"))
    spec = EvaluationSpec(cutoffs=(3,), ties="doc_id")

    def comparison(measure, cutoff, verdict):
        return {"ranker": "a", "cutoff": cutoff, "measure": measure, "verdict": verdict,
                "movers": [{"query_id": "q1", "difference": -0.25, "query_text": None}]}

    nightly = {"previous_pool": "p0", "comparisons": [
        comparison("nDCG@3", 3, "no_change"), comparison("RR@3", 3, "regressed"),
        comparison("AP", None, "no_change")]}
    out = write_night_traces(tmp_path / "traces", nightly, 3, judgments, candidates, previous,
                             spec)
    ndcg, rr, ap = out["comparisons"]
    assert ndcg["movers"][0]["trace"] == "traces/" + night_trace_file_name("a", "q1", 3)
    assert rr["movers"][0]["trace"] == "traces/" + night_trace_file_name("a", "q1", 3, "RR@3")
    assert "trace" not in ap["movers"][0]  # not listed on the page: no verdict, no K
    page = (tmp_path / rr["movers"][0]["trace"]).read_text()
    assert "RR@3" in page and "first relevant" in page
    # A measure's and nDCG's page of one mover are two pages.
    assert "NDCG@3" in (tmp_path / ndcg["movers"][0]["trace"]).read_text()
    assert np.unique([c["movers"][0].get("trace") for c in out["comparisons"]
                      if c["movers"][0].get("trace")]).size == 2
