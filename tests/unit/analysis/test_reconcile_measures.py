"""`ndcg-eval reconcile --measure`: a walk through the spec's fields and the measure's own
parameters telescopes, ends where plain scorings of each side are, and its Shapley shares add
up; fields that do not apply are not steps (and truly cannot move the number); refusals name
the option."""

from __future__ import annotations

import argparse
import io
import json
from contextlib import redirect_stdout
from itertools import permutations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation_pipeline.aggregation.aggregate_table import aggregate
from evaluation_pipeline.analysis import reconcile_measures as rm
from evaluation_pipeline.analysis.measure_trace import is_spec_ndcg
from evaluation_pipeline.analysis.reconcile import FIELDS, ReconcileError, alternatives
from evaluation_pipeline.api import evaluate, reconcile
from evaluation_pipeline.cli import main as cli_main
from evaluation_pipeline.cli import reconcile_command
from evaluation_pipeline.measures.parse import parse_measure
from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import EvaluationSpec, profile, spec_from_mapping
from evaluation_pipeline.stats.intervals import ALL
from tests.support.paths import EXAMPLES
from tests.support.refusals import assert_names

MAINT_V2 = str(EXAMPLES / "landing/judgments/maint-v2.csv")
POOL = str(EXAMPLES / "landing/pools/pool-2026-11-28")
QUERIES = str(EXAMPLES / "queries.csv")
TREC = spec_from_mapping({"profile": "trec_eval"})  # ties trec_eval: AP is defined under it


def assert_telescopes(result: dict, shapley: dict | None = None) -> None:
    """The steps add up to the whole difference (macro and weighted), and so do the shares."""
    for mean, change in (("macro_value", "change"), ("weighted_value", "weighted_change")):
        start, end = result["start"][mean], result["end"][mean]
        if any(value is None for value in (start, *(s[mean] for s in result["steps"]), end)):
            continue  # a state without a query with a number: no difference to add up
        assert result["total"][change] == end - start
        assert abs(sum(s[change] for s in result["steps"]) - (end - start)) < 1e-12
        if result["steps"]:
            assert result["steps"][-1][mean] == end
    if shapley is not None and None not in (shapley["values"], result["total"]["change"]):
        assert abs(sum(shapley["values"].values()) - result["total"]["change"]) < 1e-12


def plain_means(spec, measure: str, queries: str | None = None) -> dict[str, float]:
    """Each ranker's mean of ``measure`` from a plain scoring (the API's ``evaluate``)."""
    names = [measure] if is_spec_ndcg(parse_measure(measure)) else ["nDCG@10", measure]
    means = evaluate(MAINT_V2, POOL, spec=spec, measures=names).means()
    column = str(parse_measure(measure))
    return dict(zip(means["ranker"], means[column]))


# -- done when: the walk of the issue ---------------------------------------------------------


def test_a_walk_from_rel_1_to_rel_2_is_the_difference_of_two_plain_scorings():
    document = reconcile(MAINT_V2, POOL, TREC, measure="AP(rel=1)@100",
                         to_measure="AP(rel=2)@100")
    assert document["measures"] == {"family": "AP", "from": "AP@100", "to": "AP(rel=2)@100"}
    assert document["walk"]["order"] == ["rel"]
    start, end = plain_means(TREC, "AP@100"), plain_means(TREC, "AP(rel=2)@100")
    results = document["walk"]["results"]
    assert {r["ranker"] for r in results} == set(start)
    for result in results:
        (step,) = result["steps"]
        assert (step["field"], step["kind"], step["before"], step["after"]) == (
            "rel", "measure", 1, 2)
        assert step["measure"] == "AP(rel=2)@100"
        assert result["start"]["macro_value"] == pytest.approx(start[result["ranker"]],
                                                               abs=1e-12)
        assert result["end"]["macro_value"] == pytest.approx(end[result["ranker"]], abs=1e-12)
        assert step["change"] == pytest.approx(end[result["ranker"]] - start[result["ranker"]],
                                               abs=1e-12)
        assert_telescopes(result)


def test_a_cutoff_step():
    document = reconcile(MAINT_V2, POOL, TREC, measure="P(rel=2)@5", to_measure="P(rel=2)@20",
                         queries=QUERIES)
    assert document["walk"]["order"] == ["cutoff"]
    start, end = plain_means(TREC, "P(rel=2)@5"), plain_means(TREC, "P(rel=2)@20")
    for result in document["walk"]["results"]:
        (step,) = result["steps"]
        assert (step["before"], step["after"]) == (5, 20)
        assert step["change"] == pytest.approx(end[result["ranker"]] - start[result["ranker"]],
                                               abs=1e-12)
        assert result["start"]["weighted_value"] is not None
        assert_telescopes(result)


def test_rel_and_a_spec_field_with_shapley_shares_that_add_up():
    source = TREC.replace(unjudged="exclude")
    document = reconcile(MAINT_V2, POOL, source, TREC, measure="AP@100",
                         to_measure="AP(rel=2)@100", shapley=True, queries=QUERIES)
    walk = document["walk"]
    assert walk["order"] == ["unjudged", "rel"] and walk["parameters"] == ["rel"]
    assert [s["kind"] for s in walk["steps"]] == ["spec", "measure"]
    shares = {r["ranker"]: r for r in walk["shapley"]["results"]}
    assert walk["shapley"]["n_scorings"] == 4
    other = reconcile(MAINT_V2, POOL, source, TREC, measure="AP@100",
                      to_measure="AP(rel=2)@100", order=["rel", "unjudged"])
    others = {r["ranker"]: r for r in other["walk"]["results"]}
    start, end = plain_means(source, "AP@100"), plain_means(TREC, "AP(rel=2)@100")
    for result in walk["results"]:
        ranker = result["ranker"]
        assert_telescopes(result, shares[ranker])
        assert result["end"]["macro_value"] == pytest.approx(end[ranker], abs=1e-12)
        assert result["start"]["macro_value"] == pytest.approx(start[ranker], abs=1e-12)
        # Two steps: each share is the mean of its step's change over the two orders.
        first = {s["field"]: s["change"] for s in result["steps"]}
        second = {s["field"]: s["change"] for s in others[ranker]["steps"]}
        for name in ("unjudged", "rel"):
            assert shares[ranker]["values"][name] == pytest.approx(
                (first[name] + second[name]) / 2, abs=1e-12)
        assert abs(sum(shares[ranker]["weighted_values"].values())
                   - result["total"]["weighted_change"]) < 1e-12


def test_a_field_that_does_not_apply_is_not_a_step_and_the_walk_ends_at_the_target():
    source = TREC.replace(gain="exponential", discount="1/rank")
    document = reconcile(MAINT_V2, POOL, source, TREC.replace(ideal="candidates"),
                         measure="RR@10", to_measure="RR(rel=2)@10")
    walk = document["walk"]
    assert walk["order"] == ["ideal", "rel"]
    skipped = {f["field"]: f for f in walk["not_applicable"]}
    assert set(skipped) == {"gain", "discount"}
    assert skipped["gain"]["differs"] and skipped["gain"]["before"] == "exponential"
    assert "RR" in skipped["gain"]["why"]
    end = plain_means(TREC.replace(ideal="candidates"), "RR(rel=2)@10")
    for result in walk["results"]:
        assert result["end"]["macro_value"] == pytest.approx(end[result["ranker"]], abs=1e-12)
        assert_telescopes(result)


def test_ndcg_walks_its_dcg_parameter_beside_the_spec_gain():
    """nDCG's gain is the measure's dcg= when given, else the spec's gain field: both steps."""
    source, target = profile("default"), profile("default").replace(gain="linear")
    document = reconcile(MAINT_V2, POOL, source, target, measure="nDCG@10",
                         to_measure="nDCG(dcg='exp-log2')@10", shapley=True)
    walk = document["walk"]
    assert walk["order"] == ["gain", "dcg"]
    assert [(s["before"], s["after"]) for s in walk["steps"]] == [
        ("exponential", "linear"), (None, "exp-log2")]
    for result in walk["results"]:
        # dcg=exp-log2 is the default spec's exponential gain: the walk ends where it started,
        # and the gain step only matters in the order that takes it first.
        assert result["end"]["macro_value"] == pytest.approx(result["start"]["macro_value"],
                                                             abs=1e-12)
        assert_telescopes(result)
    # Both measures give dcg=: the spec's gain is not read, so not a step.
    both = reconcile(MAINT_V2, POOL, source, target, measure="nDCG(dcg='log2')@10",
                     to_measure="nDCG(dcg='exp-log2')@10")
    assert both["walk"]["order"] == ["dcg"]
    assert "gain" in {f["field"] for f in both["walk"]["not_applicable"]}


def test_a_plain_ndcg_measure_walk_starts_and_ends_at_the_ndcg_walk():
    """--measure nDCG@10 on both sides is the NDCG walk, numbers and steps."""
    measured = reconcile(MAINT_V2, POOL, "trec_eval", "sklearn", measure="nDCG@10")
    plain = reconcile(MAINT_V2, POOL, "trec_eval", "sklearn", cutoffs=[10])
    assert measured["walk"]["order"] == plain["walk"]["order"] == ["ideal", "ties"]
    for ours, theirs in zip(measured["walk"]["results"], plain["walk"]["results"]):
        assert ours["ranker"] == theirs["ranker"]
        assert [s["macro_value"] for s in ours["steps"]] == [
            s["macro_ndcg"] for s in theirs["steps"]]
        assert ours["start"]["macro_value"] == theirs["start"]["macro_ndcg"]


# -- hypothesis: telescoping, the end, and the fields held not to apply --------------------------

MEASURES = {
    "nDCG": ("nDCG@{k}", "nDCG(dcg='log2')@{k}"), "DCG": ("DCG@{k}", "DCG(dcg='log2')@{k}"),
    "RR": ("RR(rel={r})@{k}", "RR(rel={r})"), "AP": ("AP(rel={r})@{k}", "AP(rel={r})"),
    "P": ("P(rel={r})@{k}", "P(rel={r},judged_only=True)@{k}"), "R": ("R(rel={r})@{k}",),
    "Success": ("Success(rel={r})@{k}",), "Judged": ("Judged@{k}",),
    "Rprec": ("Rprec(rel={r})", "Rprec(rel={r},judged_only=True)"), "Bpref": ("Bpref(rel={r})",),
    "ERR": ("ERR(max_rel=3)@{k}",), "RBP": ("RBP(p=0.5)@{k}", "RBP(rel={r})@{k}"),
}


@st.composite
def inputs(draw):
    """(pool, judgments): two rankers, up to five queries of up to seven candidates with tied
    scores, grades 0..3, unknown rows, unjudged candidates, judged documents outside the run."""
    candidates, judged = [], []
    for q in range(draw(st.integers(1, 5))):
        docs = [f"d{i}" for i in range(draw(st.integers(1, 7)))]
        for ranker in ("a", "b"):
            if ranker == "b" and draw(st.booleans()) and q:
                continue  # b skips the query: missing_from_run
            for d in docs:
                candidates.append((ranker, f"q{q}", d, float(draw(st.integers(0, 3)))))
        for d in [*docs, "x1", "x2"]:
            grade = draw(st.sampled_from([None, 0, 1, 2, 3, "u"]))
            if grade is not None:
                judged.append((f"q{q}", d, grade))
    if not judged:
        judged.append(("q0", "d0", 1))
    pool = pl.DataFrame(candidates, schema=["ranker", "query_id", "doc_id", "score"],
                        orient="row").with_columns(candidate_pool=pl.lit("p"))
    judgments = pl.DataFrame(
        [(q, d, None if g == "u" else g, "unknown" if g == "u" else "graded")
         for q, d, g in judged],
        schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64,
                "grade_status": pl.String}, orient="row",
    ).with_columns(judgment_version=pl.lit("v1"))
    return pool, judgments


def specs(draw, family: str) -> EvaluationSpec:
    """A spec whose every field is drawn from its alternatives (no ties: rank, the frames have
    no rank column; ties: average only where the family is defined under it)."""
    values = {name: draw(st.sampled_from(alternatives(name, EvaluationSpec(), ranked=False)))
              for name in FIELDS if name != "scores"}
    if values["ties"] == "average" and family in ("AP", "Bpref", "ERR"):
        values["ties"] = "trec_eval"
    return EvaluationSpec(**values)


def measure_of(draw, family: str) -> str:
    return draw(st.sampled_from(MEASURES[family])).format(k=draw(st.integers(1, 6)),
                                                           r=draw(st.integers(1, 3)))


def means_of(pool, judgments, spec, measure) -> dict:
    """Per ranker, the mean of ``measure`` under ``spec`` from a plain scoring."""
    rows = score(pool, judgments, rm.measured(spec, parse_measure(measure)))
    rows = rows.filter(pl.col("measure") == str(parse_measure(measure)))
    table = aggregate(rows).filter(pl.col("slice_column") == ALL)
    return dict(zip(table["ranker"], table["macro_value"]))


@pytest.mark.parametrize("family", sorted(MEASURES))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), frames=inputs())
def test_every_walk_telescopes_and_ends_at_the_target(data, frames, family):
    pool, judgments = frames
    source, target = specs(data.draw, family), specs(data.draw, family)
    start, end = measure_of(data.draw, family), measure_of(data.draw, family)
    the_plan = rm.plan_measure_walk(source, target, start, end)
    scorer = rm.MeasureScorer(judgments, pool)
    document = rm.reconcile_measure(scorer, the_plan, shapley=len(the_plan.fields) <= 3)
    shapley = {r["ranker"]: r for r in (document["walk"]["shapley"] or {}).get("results", [])}
    firsts, lasts = means_of(pool, judgments, source, start), means_of(pool, judgments,
                                                                      target, end)
    for result in document["walk"]["results"]:
        assert_telescopes(result, shapley.get(result["ranker"]))
        for side, expected in (("start", firsts), ("end", lasts)):
            got, want = result[side]["macro_value"], expected[result["ranker"]]
            assert (got is None and want is None) or got == pytest.approx(want, abs=1e-12)


def per_query(pool, judgments, spec, measure) -> pl.DataFrame:
    rows = score(pool, judgments, rm.measured(spec, measure))
    return rows.filter(pl.col("measure") == str(measure)).select(
        "ranker", "query_id", "value", "status")


@pytest.mark.parametrize("family", sorted(MEASURES))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), frames=inputs())
def test_a_field_held_not_to_apply_moves_no_query(data, frames, family):
    """not_applicable against the scorer: every alternative of such a field gives every query
    the same value and status, to the last bit."""
    pool, judgments = frames
    base = specs(data.draw, family)
    measure = parse_measure(measure_of(data.draw, family))
    reference = per_query(pool, judgments, base, measure)
    for name in FIELDS:
        for value in alternatives(name, base, ranked=False):
            other = base.replace(**{name: value})
            if rm.not_applicable(name, measure, measure, (base, other)) is None:
                continue
            if name == "ties" and value == "average" and family in ("AP", "Bpref", "ERR"):
                continue
            changed = per_query(pool, judgments, other, measure)
            assert changed.equals(reference), (name, value, str(measure))


# -- an independent oracle ---------------------------------------------------------------------

pytrec_eval = pytest.importorskip("pytrec_eval")


def random_qrels_and_run(seed: int, n_queries: int = 30):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for n in range(n_queries):
        q = f"q{n}"
        run[q] = {f"d{i:02d}": float(rng.integers(0, 8)) for i in range(int(rng.integers(1, 25)))}
        qrels[q] = {d: int(rng.integers(0, 4)) for d in run[q] if rng.random() < 0.7}
        qrels[q].update({f"x{i}": int(rng.integers(0, 4)) for i in range(int(rng.integers(0, 4)))})
        if not qrels[q]:
            qrels[q]["x9"] = 0
    return qrels, run


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(("ours", "theirs"), [("AP(rel={r})@100", "map_cut_100"),
                                              ("P(rel={r})@10", "P_10")])
def test_the_walks_ends_are_pytrec_evals_means(seed, ours, theirs):
    """Under trec_eval's conventions the walk from rel=1 to rel=2 starts at trec_eval's mean at
    relevance level 1 and ends at its mean at level 2 (pytrec_eval: trec_eval 9, whose scores
    are 32-bit floats: the trec_eval_9 profile)."""
    qrels, run = random_qrels_and_run(seed)
    judgments = {q: dict(docs) for q, docs in qrels.items()}
    start, end = ours.format(r=1), ours.format(r=2)
    document = reconcile(judgments, run, "trec_eval_9", measure=start, to_measure=end)
    (result,) = document["walk"]["results"]
    for level, side in ((1, "start"), (2, "end")):
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {theirs.rsplit("_", 1)[0]},
                                                   relevance_level=level)
        values = [v[theirs] for v in evaluator.evaluate(run).values()]
        assert result[side]["macro_value"] == pytest.approx(sum(values) / len(values),
                                                            abs=1e-12)
    assert_telescopes(result)


# -- refusals ---------------------------------------------------------------------------------


def test_an_unknown_measure_is_refused_naming_the_option():
    with pytest.raises(ReconcileError) as refused:
        rm.plan_measure_walk(TREC, TREC, "MAPP@10", "AP@10")
    assert_names(refused, "--measure", "MAPP@10")
    with pytest.raises(ReconcileError) as refused:
        reconcile(MAINT_V2, POOL, TREC, measure="AP@10", to_measure="AP(rell=2)@10")
    assert_names(refused, "to_measure=", "rell")


def test_two_families_are_refused_naming_both():
    with pytest.raises(ReconcileError) as refused:
        rm.plan_measure_walk(TREC, TREC, "AP(rel=2)@100", "RR(rel=2)@10")
    assert_names(refused, "--to-measure", "--measure", "AP", "RR")
    # An alias is its family: MAP is AP.
    assert rm.plan_measure_walk(TREC, None, "MAP@10", "AP(rel=2)@10").fields == ("rel",)


@pytest.mark.parametrize(("options", "names"), [
    ({"to_measure": "AP@10"}, ["--measure", "--to-measure"]),
    ({"measure": "AP@10", "cutoffs": [10]}, ["--cutoff"]),
    ({"measure": "AP@10", "order": ["rel", "bogus"]}, ["--order", "bogus"]),
    ({"measure": "AP@10", "order": ["rel", "rel"]}, ["--order", "rel"]),
])
def test_options_that_do_not_fit_a_measure_walk_are_refused(options, names):
    measure = options.pop("measure", None)
    with pytest.raises(ReconcileError) as refused:
        rm.plan_measure_walk(TREC, TREC, measure, **options)
    assert_names(refused, *names)


def test_a_measure_undefined_under_a_sides_tie_rule_is_refused_before_reading():
    with pytest.raises(ReconcileError) as refused:
        reconcile("no-such-file.csv", "no-such-run", "trec_eval", "sklearn", measure="AP@10")
    assert_names(refused, "target", "AP@10", "average")


def test_sensitivity_is_refused_with_a_measure():
    with pytest.raises(ReconcileError) as refused:
        reconcile(MAINT_V2, POOL, TREC, measure="AP@10", to_measure="AP(rel=2)@10",
                  sensitivity=True)
    assert_names(refused, "sensitivity", "measure=")


# -- the command ------------------------------------------------------------------------------


def reconcile_args(*argv: str) -> argparse.Namespace:
    """The reconcile command's arguments as ``ndcg-eval`` parses them."""
    return cli_main.build_parser().parse_args(["reconcile", *argv])


def test_the_command_prints_the_measure_on_each_side_and_the_parameter_steps(tmp_path):
    args = reconcile_args("--judgments", MAINT_V2, "--run", POOL, "--queries", QUERIES,
                          "--from", "trec_eval", "--to", "sklearn", "--measure", "RR@10",
                          "--to-measure", "RR(rel=2)@5", "--json", str(tmp_path / "r.json"))
    out = io.StringIO()
    with redirect_stdout(out):
        assert reconcile_command.run(args) == 0
    text = out.getvalue()
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["from"]["measure"] == "RR@10" and document["to"]["measure"] == "RR(rel=2)@5"
    assert document["walk"]["order"] == ["ideal", "ties", "cutoff", "rel"]
    assert "RR@10 -> RR(rel=2)@5" in text.splitlines()[0]
    assert "not steps, they do not apply to RR: gain" in text
    for ranker in ("bm25-v3", "dense-v2", "hybrid-v1"):
        assert f"{ranker}, RR@10 -> RR(rel=2)@5" in text
    steps = [line.split()[:2] for line in text.splitlines() if line[:1].isdigit()]
    assert steps[:4] == [["1", "ideal"], ["2", "ties"], ["3", "cutoff"], ["4", "rel"]]
    for result in document["walk"]["results"]:
        assert_telescopes(result)


def test_the_command_walks_within_one_spec_and_refuses_before_reading(capsys):
    args = reconcile_args("--judgments", MAINT_V2, "--run", POOL, "--from", "trec_eval",
                          "--measure", "AP@100", "--to-measure", "AP(rel=2)@100", "--json")
    assert reconcile_command.run(args) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["from"]["spec_id"] == document["to"]["spec_id"]
    assert document["walk"]["order"] == ["rel"]
    for args in (("--measure", "AP@10"), ("--to-measure", "AP@10", "--to", "sklearn"),
                 ("--measure", "AP@10", "--to", "trec_eval", "--sensitivity")):
        parsed = reconcile_args("--judgments", "missing.csv", "--run", "missing", "--from",
                                "trec_eval", *args)
        with pytest.raises(ReconcileError):
            reconcile_command.run(parsed)


@pytest.mark.parametrize(("source", "target"), list(permutations(["trec_eval", "default"])))
def test_plain_walks_keep_their_document(source, target):
    """Without a measure, the document has no measure keys: the NDCG walk as it was."""
    document = reconcile(MAINT_V2, POOL, source, target, cutoffs=[10])
    assert "measures" not in document and "measure" not in document["from"]
    assert "kind" not in document["walk"]["steps"][0]
