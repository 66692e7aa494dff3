"""The worklist under a headline of measures beside nDCG (contract section 3, rule 8, with the
spec's ``headline:``): each hole's narrowing of every headline measure against a brute-force
recomputation by the scorer on the whole version with that hole filled in, the sum that orders
the holes, the default headline's worklist unchanged, and a headline of RR alone putting first
the hole that can move the first relevant place."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.analysis import worklist_measures
from evaluation_pipeline.analysis.worklist import (
    fill_version,
    narrowed_measures,
    worklist,
)
from evaluation_pipeline.io.readers import read_judgments
from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import EvaluationSpec

# -- small random cases -----------------------------------------------------------------------


def random_case(seed: int, rankers=("r1", "r2"), n_queries=4, n_docs=7, top=2):
    """(run, version, queries): per query graded rows, unknown rows, candidates without a row
    and an unknown row no ranker returns; scores on a coarse grid (ties), a ``rank`` column
    (each list's order, for ``ties: rank``), a query one ranker leaves out, and a query the
    version does not judge."""
    rng = np.random.default_rng(seed)
    runs, rows = [], []
    for q in range(n_queries):
        qid = f"q{q}"
        for i in range(n_docs):
            kind = rng.choice(["graded", "graded", "unknown", "none"])
            if kind == "graded":
                rows.append((qid, f"d{i}", int(rng.integers(0, top + 1)), "graded"))
            elif kind == "unknown":
                rows.append((qid, f"d{i}", None, "unknown"))
        rows.append((qid, "out", None, "unknown"))  # a hole under all_judged only
        for ranker in rankers:
            if q == n_queries - 1 and ranker == rankers[-1]:
                continue  # missing from this ranker's run
            picked = rng.choice(n_docs, size=int(rng.integers(3, n_docs + 1)), replace=False)
            scores = rng.integers(0, 4, size=len(picked)).astype(float)
            order = np.lexsort((picked, -scores))
            runs += [(ranker, qid, f"d{picked[j]}", float(scores[j]), place + 1)
                     for place, j in enumerate(order)]
    runs += [(rankers[0], "unjudged-query", "x", 1.0, 1)]
    rows.append(("q0", "anchor", top, "graded"))  # the version's largest grade is top
    run = pl.DataFrame(runs, schema=["ranker", "query_id", "doc_id", "score", "rank"],
                       orient="row")
    version = pl.DataFrame(rows, schema={"query_id": pl.String, "doc_id": pl.String,
                                         "grade": pl.Int64, "grade_status": pl.String},
                           orient="row")
    queries = pl.DataFrame({"query_id": [f"q{q}" for q in range(n_queries)],
                            "weight": rng.integers(0, 4, n_queries).astype(float)})
    return run, version, queries


def brute_force(run: pl.DataFrame, version: pl.DataFrame, spec: EvaluationSpec,
                weights: dict[str, float] | None, grades: list[int] | None = None
                ) -> dict[tuple[str, str], tuple]:
    """Rule 8 with the headline's measures, written out: for each hole and grade, the whole
    version with that hole filled in, scored again by ``metric.ndcg.score`` (every query,
    every ranker, every measure of the spec), its ``value_min`` and ``value_max`` read per
    measure. ``grades``: those a hole may take, 0..top unless given. {(query_id, doc_id):
    ({measure: expected narrowing}, expected, guaranteed)}."""
    measures = spec.headline_measures
    rankers = sorted(run["ranker"].unique())
    graded = version.filter(pl.col("grade_status") == "graded")["grade"].to_list()
    top = spec.max_grade if spec.max_grade is not None else max(graded)
    grades = list(range(top + 1)) if grades is None else grades
    counts = Counter(g for g in graded if g in grades)
    shares = [counts[g] / sum(counts.values()) for g in grades]

    def width_sums(judgments):
        rows = score(run, judgments, spec).filter(pl.col("measure").is_in(measures))
        widths = {(r, q, m): (hi - lo if lo is not None and hi is not None else 0.0)
                  for r, q, m, lo, hi in rows.select(
                      "ranker", "query_id", "measure", "value_min", "value_max").iter_rows()}
        sums = {}
        for q in set(rows["query_id"]):
            for m in measures:
                total = 0.0
                for r in rankers:
                    total = total + widths.get((r, q, m), 0.0)
                sums[q, m] = total
        return sums, set(rows["query_id"])

    def weight(q):
        return 1.0 if weights is None else weights.get(q, 0.0)

    now, with_rows = width_sums(version)
    total_weight = sum(weight(q) for q in with_rows)
    status = {(q, d): s for q, d, _, s in version.iter_rows()}
    judged = set(version["query_id"])
    holes = {(q, d) for q, d in run.select("query_id", "doc_id").iter_rows()
             if q in judged and status.get((q, d)) != "graded"}
    if spec.ideal == "all_judged":
        holes |= {h for h, s in status.items() if s == "unknown"}
    found = {}
    for q, d in sorted(holes):
        terms = []  # per grade, per measure: w(q) (W_m(q) - W_m(q | h = g))
        for g in grades:
            filled = pl.concat([
                version.filter((pl.col("query_id") != q) | (pl.col("doc_id") != d)),
                pl.DataFrame({"query_id": [q], "doc_id": [d], "grade": [g],
                              "grade_status": ["graded"]}, schema=version.schema)])
            after, _ = width_sums(filled)
            terms.append([weight(q) * (now[q, m] - after[q, m])
                          if weight(q) > 0 and now[q, m] > 0 else 0.0 for m in measures])
        by_measure = {m: sum(share * term[i] for share, term in zip(shares, terms))
                      / total_weight for i, m in enumerate(measures)}
        found[q, d] = (by_measure, sum(by_measure.values()),
                       min(sum(t) for t in terms) / total_weight)
    return found


SPECS = [
    EvaluationSpec(ties="trec_eval",
                   measures=["nDCG@3", "RR(rel=2)@4", "AP", "P(rel=2)@3", "R@4"],
                   headline=["nDCG@3", "RR(rel=2)@4", "AP", "P(rel=2)@3", "R@4"]),
    EvaluationSpec(ideal="all_judged", no_positive="zero",
                   measures=["nDCG@4", "RR", "R(rel=2)@3", "Success(rel=2)@2", "Rprec"],
                   headline=["nDCG@4", "RR", "R(rel=2)@3", "Success(rel=2)@2", "Rprec"]),
    EvaluationSpec(ties="doc_id", ideal="all_judged", gain="linear",
                   measures=["nDCG@3", "AP(rel=2)@5", "Bpref", "P@2"],
                   headline=["AP(rel=2)@5", "Bpref", "P@2"]),
    EvaluationSpec(ties="rank", max_grade=3,
                   measures=["nDCG@2", "nDCG@5", "RR(rel=3)@5", "R(rel=2)@5", "DCG@3"],
                   headline=["nDCG@2", "RR(rel=3)@5", "R(rel=2)@5", "DCG@3"]),
    EvaluationSpec(unknown="exclude", unjudged="zero",
                   measures=["nDCG@3", "RR(rel=2)@3", "RBP(rel=1)"],
                   headline=["nDCG@3", "RR(rel=2)@3", "RBP(rel=1)"]),
    EvaluationSpec(ties="trec_eval", ideal="all_judged", no_positive="one",
                   missing_from_run="zero",
                   measures=["nDCG@3", "AP(rel=2)", "RR(rel=2)", "ERR(max_rel=3)@4"],
                   headline=["AP(rel=2)", "RR(rel=2)", "ERR(max_rel=3)@4"]),
]


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: "+".join(s.headline_measures))
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "traffic"])
def test_each_measures_narrowing_is_the_scorers_on_the_version_with_the_hole_filled(
        seed, spec, weighted):
    run, version, queries = random_case(seed)
    table = queries if weighted else None
    got = worklist(version, run, spec, table)
    want = brute_force(run, version, spec, dict(queries.iter_rows()) if weighted else None)
    assert set(zip(got["query_id"], got["doc_id"])) == set(want)
    assert got.columns[:4] == ["priority", "expected_narrowing", "guaranteed_narrowing",
                               "narrowing_by_measure"]
    moved = set()
    for row in got.iter_rows(named=True):
        by_measure, expected, guaranteed = want[row["query_id"], row["doc_id"]]
        parts = json.loads(row["narrowing_by_measure"])
        assert list(parts) == list(spec.headline_measures)
        for measure, value in parts.items():
            assert value == pytest.approx(by_measure[measure], abs=1e-12), measure
            if value > 0:
                moved.add(measure)
        assert row["expected_narrowing"] == pytest.approx(expected, abs=1e-12)
        assert row["guaranteed_narrowing"] == pytest.approx(guaranteed, abs=1e-12)
    # The case is not empty: most measures are narrowed by some hole.
    assert got.height > 5 and len(moved) >= len(spec.headline_measures) - 1, moved
    keys = list(zip(-got["expected_narrowing"], got["query_id"], got["doc_id"]))
    assert keys == sorted(keys)
    assert got["priority"].to_list() == list(range(1, got.height + 1))


def test_under_a_gain_map_a_hole_takes_the_grades_it_lists():
    # The map lists 0, 1 and 3 up to max_grade 3: a hole is graded 0, 1 or 3, never 2.
    run, version, queries = random_case(1, top=1)
    spec = EvaluationSpec(gain={0: 0.0, 1: 1.0, 3: 5.0}, max_grade=3, ties="trec_eval",
                          measures=["nDCG@3", "RR(rel=3)@4", "AP(rel=1)@5"],
                          headline=["nDCG@3", "RR(rel=3)@4", "AP(rel=1)@5"])
    got = worklist(version, run, spec, queries)
    want = brute_force(run, version, spec, dict(queries.iter_rows()), grades=[0, 1, 3])
    assert got.height and set(zip(got["query_id"], got["doc_id"])) == set(want)
    for q, d, expected, parts in got.select("query_id", "doc_id", "expected_narrowing",
                                            "narrowing_by_measure").iter_rows():
        assert expected == pytest.approx(want[q, d][1], abs=1e-12)
        for measure, value in json.loads(parts).items():
            assert value == pytest.approx(want[q, d][0][measure], abs=1e-12)
    assert json.loads(got["narrowing_by_measure"][0])["RR(rel=3)@4"] > 0


def test_bound_width_is_the_widest_headline_width_of_the_query():
    spec = SPECS[0]
    run, version, _ = random_case(5)
    got = worklist(version, run, spec)
    rows = score(run, version, spec).filter(pl.col("measure").is_in(spec.headline_measures))
    widest = dict(rows.group_by("query_id").agg(
        (pl.col("value_max") - pl.col("value_min")).fill_null(0.0).max()).iter_rows())
    assert got.height
    for q, width in zip(got["query_id"], got["bound_width"]):
        assert width == pytest.approx(widest[q], abs=1e-12)


# -- the default headline ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("headline, k", [(None, 5), (["nDCG@3", "nDCG@5"], 5), (["nDCG@5"], 5),
                                         (["nDCG@3"], 3)],
                         ids=["unset", "spelled-out", "largest", "smaller"])
def test_a_headline_of_plain_ndcg_keeps_the_ndcg_worklist(seed, headline, k):
    # Other measures scored but not in the headline: the worklist is the one of nDCG at the
    # headline's largest cutoff (by default the spec's largest), the frame as the spec without
    # those measures gives it, no new column.
    run, version, queries = random_case(seed)
    spec = EvaluationSpec(measures=["nDCG@3", "nDCG@5", "RR(rel=2)@5", "R@4"],
                          headline=headline)
    got = worklist(version, run, spec, queries)
    assert "narrowing_by_measure" not in got.columns
    assert narrowed_measures(spec) == (f"nDCG@{k}",)
    # The spec of plain cutoffs alone, the worklist's long-standing input, gives the same.
    assert worklist(version, run, EvaluationSpec(cutoffs=(k,)), queries).equals(got)
    if k == 5:
        assert got.equals(worklist(version, run, EvaluationSpec(cutoffs=(3, 5)), queries))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("ties", ["average", "trec_eval"])
def test_ndcg_in_a_mixed_headline_narrows_as_the_ndcg_worklist(seed, ties):
    run, version, queries = random_case(seed)
    spec = EvaluationSpec(ties=ties, measures=["nDCG@5", "RR(rel=2)@5", "P@3"],
                          headline=["nDCG@5", "RR(rel=2)@5", "P@3"])
    ndcg = {(q, d): e for q, d, e in worklist(version, run, EvaluationSpec(
        cutoffs=(5,), ties=ties), queries).select(
        "query_id", "doc_id", "expected_narrowing").iter_rows()}
    got = worklist(version, run, spec, queries)
    assert narrowed_measures(spec) == ("nDCG@5", "RR(rel=2)@5", "P@3")
    assert set(zip(got["query_id"], got["doc_id"])) == set(ndcg)
    for q, d, parts in got.select("query_id", "doc_id", "narrowing_by_measure").iter_rows():
        assert json.loads(parts)["nDCG@5"] == pytest.approx(ndcg[q, d], abs=1e-12)


# -- a headline of RR -------------------------------------------------------------------------


def test_a_headline_of_rr_puts_first_the_hole_that_can_move_the_first_relevant_place():
    # q-fixed: its first place is relevant (grade 2), so no hole moves RR(rel=2)@10, but its
    # five holes right below it leave its NDCG wide open. q-open: a non-relevant document, then
    # a hole, then the first relevant one: graded 2 or more that hole makes RR 1/2, else 1/3;
    # its other hole comes after the first relevant place and moves nothing.
    runs = [("a", "q-fixed", "rel", 9.0)] + [
        ("a", "q-fixed", f"h{i}", 8.0 - i) for i in range(5)] + [
        ("a", "q-fixed", "zero", 1.0),
        ("a", "q-open", "non", 9.0), ("a", "q-open", "hole", 8.0),
        ("a", "q-open", "rel", 7.0), ("a", "q-open", "zero", 6.0),
        ("a", "q-open", "late", 5.0)]
    rows = [("q-fixed", "rel", 2), ("q-fixed", "zero", 0), ("q-open", "non", 0),
            ("q-open", "rel", 2), ("q-open", "zero", 1)]
    run = pl.DataFrame(runs, schema=["ranker", "query_id", "doc_id", "score"], orient="row")
    version = pl.DataFrame([(*r, "graded") for r in rows],
                           schema=["query_id", "doc_id", "grade", "grade_status"], orient="row")
    # q-fixed carries most of the traffic, so NDCG's worklist starts there.
    queries = pl.DataFrame({"query_id": ["q-fixed", "q-open"], "weight": [10.0, 1.0]})
    ndcg = worklist(version, run, EvaluationSpec(cutoffs=(10,)), queries)
    assert ndcg["query_id"][0] == "q-fixed" and ndcg["expected_narrowing"][0] > 0
    spec = EvaluationSpec(measures=["nDCG@10", "RR(rel=2)@10"], headline=["RR(rel=2)@10"])
    got = worklist(version, run, spec, queries)
    first = got.row(0, named=True)
    assert (first["query_id"], first["doc_id"]) == ("q-open", "hole")
    # Whatever grade it gets, RR's range [1/3, 1/2] closes: weight 1 of 11.
    narrowing = (1 / 2 - 1 / 3) * 1 / 11
    assert first["expected_narrowing"] == pytest.approx(narrowing, abs=1e-12)
    assert first["guaranteed_narrowing"] == pytest.approx(narrowing, abs=1e-12)
    assert json.loads(first["narrowing_by_measure"]) == {
        "RR(rel=2)@10": pytest.approx(narrowing, abs=1e-12)}
    assert first["bound_width"] == pytest.approx(1 / 2 - 1 / 3, abs=1e-12)
    # No other hole can move the first relevant place.
    assert got["expected_narrowing"][1:].to_list() == [0.0] * (got.height - 1)
    assert set(ndcg.select("query_id", "doc_id").rows()) == set(
        got.select("query_id", "doc_id").rows())


# -- order, budget, chunks, the file ------------------------------------------------------------


def test_the_order_is_the_same_for_any_row_order_and_a_budget_keeps_the_first():
    run, version, queries = random_case(3)
    spec = SPECS[1]
    first = worklist(version, run, spec, queries)
    again = worklist(version.sample(fraction=1.0, shuffle=True, seed=1),
                     run.sample(fraction=1.0, shuffle=True, seed=2), spec, queries.reverse())
    assert first.equals(again)
    assert worklist(version, run, spec, queries, budget=4).equals(first.head(4))


def test_chunks_of_copies_give_the_same_worklist(monkeypatch):
    run, version, queries = random_case(4, rankers=("a", "b", "c"))
    spec = SPECS[3]
    whole = worklist(version, run, spec, queries)
    monkeypatch.setattr(worklist_measures, "CHUNK_ROWS", 30)
    assert worklist(version, run, spec, queries).equals(whole)


def test_filled_in_it_is_a_judgment_version(tmp_path):
    run, version, queries = random_case(2)
    listed = worklist(version, run, SPECS[0], queries, budget=5)
    blank = tmp_path / "worklist.csv"
    listed.write_csv(blank)
    filled = tmp_path / "v2.csv"
    pl.read_csv(blank, infer_schema=False).with_columns(
        pl.Series("grade", [str(i % 3) for i in range(listed.height)])).write_csv(filled)
    alone = read_judgments(filled)
    assert alone["grade"].to_list() == [i % 3 for i in range(listed.height)]
    # The measures' parts pass through as the JSON text they were written as.
    assert alone["narrowing_by_measure"].to_list() == listed["narrowing_by_measure"].to_list()
    new = fill_version(version.with_columns(pl.lit("v1").alias("judgment_version")), alone,
                       "v3")
    left = worklist(new, run, SPECS[0], queries)
    keys = ["query_id", "doc_id"]
    assert not set(left.select(keys).rows()) & set(listed.select(keys).rows())


def test_chunks_cover_every_item_once():
    cost = np.array([5, 1, 7, 2, 2, 9, 1])
    for limit in (1, 3, 8, 100):
        parts = worklist_measures._chunks(cost, limit)
        assert np.concatenate(parts).tolist() == list(range(len(cost)))
        assert all(len(p) == 1 or cost[p].sum() <= limit for p in parts)
    assert worklist_measures._chunks(np.zeros(0, np.int64), 10) == []
