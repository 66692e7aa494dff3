"""`ndcg-eval reconcile`: the walk telescopes, Shapley and sensitivity, refusals, the document."""

from __future__ import annotations

import json
import math
from itertools import permutations

import polars as pl
import pytest

from evaluation_pipeline.analysis import reconcile as rc
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.spec import PROFILES, load_spec, profile
from tests.support.paths import EXAMPLES
from tests.support.refusals import assert_names

MAINT_V2 = EXAMPLES / "landing/judgments/maint-v2.csv"
POOL = EXAMPLES / "landing/pools/pool-2026-11-28"
QUERIES = EXAMPLES / "queries.csv"


def frames(candidates: list[tuple], judgments: list[tuple]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(pool, judgments) from (ranker, query_id, doc_id, score) and (query_id, doc_id, grade)
    rows; grade "u" is an explicit unknown."""
    pool = pl.DataFrame(candidates, schema=["ranker", "query_id", "doc_id", "score"],
                        orient="row").with_columns(pl.lit("p").alias("candidate_pool"))
    judged = pl.DataFrame(
        [(q, d, None if g == "u" else g, "unknown" if g == "u" else "graded")
         for q, d, g in judgments],
        schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64,
                "grade_status": pl.String}, orient="row",
    ).with_columns(pl.lit("v1").alias("judgment_version"))
    return pool, judged


def write_inputs(tmp_path, pool: pl.DataFrame, judgments: pl.DataFrame):
    run, judged = tmp_path / "run.csv", tmp_path / "judgments.csv"
    pool.write_csv(run)
    judgments.write_csv(judged)
    return ["--judgments", str(judged), "--run", str(run)]


def reconcile_json(tmp_path, *args: str) -> dict:
    out = tmp_path / "reconcile.json"
    assert main(["reconcile", *args, "--json", str(out)]) == 0
    return json.loads(out.read_text())


def summary_means(tmp_path, name: str, *args: str) -> dict[tuple[str, int], float]:
    """Macro means of ``ndcg-eval score`` under a profile: the numbers a walk must start and
    end at."""
    out = tmp_path / name
    assert main(["score", *args, "--profile", name, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    return {(r["ranker"], r["cutoff"]): r["macro_ndcg"] for r in summary["results"]}


def assert_walk_telescopes(result: dict) -> None:
    steps = [s["change"] for s in result["steps"]]
    assert result["total"]["change"] == result["end"]["macro_ndcg"] - result["start"]["macro_ndcg"]
    assert abs(sum(steps) - result["total"]["change"]) < 1e-12
    if result["steps"]:
        assert result["steps"][-1]["macro_ndcg"] == result["end"]["macro_ndcg"]


# -- done when: trec_eval's own test data ---------------------------------------------------


@pytest.mark.parametrize("qrels", ["qrels.test", "qrels.rel_level"])
def test_trec_eval_to_sklearn_starts_and_ends_at_each_profile(conformance_dir, tmp_path, qrels):
    inputs = ["--judgments", str(conformance_dir / qrels),
              "--run", str(conformance_dir / "results.test"), "--format", "trec",
              "--cutoff", "5", "--cutoff", "10", "--cutoff", "100"]
    document = reconcile_json(tmp_path, *inputs, "--from", "trec_eval", "--to", "sklearn")
    start = summary_means(tmp_path, "trec_eval", *inputs)
    end = summary_means(tmp_path, "sklearn", *inputs)
    assert document["walk"]["order"] == ["ideal", "ties"]
    results = document["walk"]["results"]
    assert {(r["ranker"], r["cutoff"]) for r in results} == set(start)
    for result in results:
        key = (result["ranker"], result["cutoff"])
        assert result["start"]["macro_ndcg"] == start[key]
        assert result["end"]["macro_ndcg"] == end[key]
        assert_walk_telescopes(result)
    assert any(r["total"]["change"] != 0 for r in results)


# -- the walk --------------------------------------------------------------------------------


# Two rankers, four queries: ties, an unknown grade, an unjudged candidate, a query without a
# positive grade, a judged document outside the candidates and a query the second ranker skips.
MIXED = frames(
    [("a", "q1", "d1", 3.0), ("a", "q1", "d2", 2.0), ("a", "q1", "d3", 2.0),
     ("a", "q2", "d1", 1.0), ("a", "q2", "d2", 0.5), ("a", "q2", "d4", 0.5),
     ("a", "q3", "d1", 1.0), ("a", "q3", "d2", 0.0),
     ("a", "q4", "d1", 1.0), ("a", "q4", "d2", 1.0),
     ("b", "q1", "d3", 1.0), ("b", "q1", "d2", 1.0), ("b", "q1", "d1", 0.0),
     ("b", "q2", "d2", 1.0), ("b", "q2", "d1", 0.0)],
    [("q1", "d1", 1), ("q1", "d2", 0), ("q1", "d3", 2), ("q1", "d9", 1),
     ("q2", "d1", 2), ("q2", "d2", "u"),
     ("q3", "d1", 0), ("q3", "d2", 0),
     ("q4", "d1", 1), ("q4", "d2", 3)],
)


def mixed_scorer(queries: pl.DataFrame | None = None) -> rc.Scorer:
    pool, judgments = MIXED
    # Each ranker's own rank, in its listed order: what `ties: rank` orders equal scores by.
    pool = pool.with_columns(rank=pl.int_range(1, pl.len() + 1).over("ranker", "query_id"))
    return rc.Scorer(judgments, pool, queries)


@pytest.mark.parametrize(("source", "target"), list(permutations(PROFILES, 2)))
def test_every_profile_pair_walks_from_one_mean_to_the_other(source, target):
    # Generic over profiles: a profile added later is reconciled with every other one.
    a, b = profile(source), profile(target)
    cutoffs = sorted(set(a.cutoffs) & set(b.cutoffs)) or [5]
    the_plan = rc.plan(a, b, cutoffs=cutoffs)
    scorer = mixed_scorer()
    document = rc.reconcile(scorer, the_plan)
    start, end = scorer.means(the_plan.source), scorer.means(the_plan.target)
    for result in document["walk"]["results"]:
        key = (result["ranker"], result["cutoff"])
        assert result["start"]["macro_ndcg"] == start[key].macro
        assert result["end"]["macro_ndcg"] == end[key].macro
        assert_walk_telescopes(result)


def test_a_step_that_changes_which_queries_have_a_number_is_counted():
    # unknown: incomplete leaves q2 without a number; zero scores it, with d2 at gain 0.
    source = profile("default").replace(cutoffs=(3,))
    the_plan = rc.plan(source, source.replace(unknown="zero"))
    result = next(r for r in rc.reconcile(mixed_scorer(), the_plan)["walk"]["results"]
                  if r["ranker"] == "a")
    (step,) = result["steps"]
    assert (step["field"], step["before"], step["after"]) == ("unknown", "incomplete", "zero")
    assert step["n_status_changed"] == 1 and step["n_changed"] == 1
    (mover,) = step["movers"]
    assert (mover["query_id"], mover["status_before"], mover["status_after"]) == (
        "q2", "incomplete", "scored")
    assert mover["ndcg_before"] is None and mover["ndcg_after"] == 1.0
    assert result["start"]["n_with_number"] + 1 == result["end"]["n_with_number"]
    assert step["change"] != 0


def test_order_names_the_fields_walked_first():
    a, b = profile("trec_eval"), profile("default")
    the_plan = rc.plan(a, b, order=["ties", "unknown"])
    assert the_plan.fields == ("ties", "unknown", "gain", "ideal", "unjudged", "no_positive")
    assert the_plan.order_source == "--order"
    assert rc.plan(a, b).fields == ("gain", "ideal", "ties", "unknown", "unjudged", "no_positive")


@pytest.mark.parametrize(
    ("extra", "names"),
    [  # the option, the value refused, and what may be given instead
        (["--order", "ties,colour"], ["--order", "'colour'", *rc.FIELDS]),
        (["--order", "cutoffs"], ["--order", "'cutoffs'", *rc.FIELDS]),
        (["--order", "ties,ties"], ["--order", "'ties'"]),
        (["--to", "spec-that-is-not-there.yaml"], ["'spec-that-is-not-there.yaml'", *PROFILES]),
    ],
)
def test_bad_options_exit_2(tmp_path, capsys, extra, names):
    args = ["reconcile", "--judgments", str(MAINT_V2), "--run", str(POOL), "--from", "trec_eval"]
    if "--to" not in extra:
        args += ["--to", "sklearn"]
    assert main([*args, *extra]) == 2
    assert_names(capsys.readouterr().err, *names)


def test_different_cutoffs_need_cutoff(tmp_path, capsys):
    spec = tmp_path / "k3.yaml"
    spec.write_text("profile: sklearn\ncutoffs: [3]\n")
    args = ["reconcile", "--judgments", str(MAINT_V2), "--run", str(POOL),
            "--from", "trec_eval", "--to", str(spec)]
    assert main(args) == 2
    # The option, and each side's cutoffs.
    assert_names(capsys.readouterr().err, "--cutoff", "3", *map(str, profile("trec_eval").cutoffs))
    assert main([*args, "--cutoff", "3"]) == 0
    assert "NDCG@3" in capsys.readouterr().out


# -- Shapley ---------------------------------------------------------------------------------


def test_shapley_matches_a_hand_computed_two_field_example():
    # One query, NDCG@3, linear gain. The ranker ties d1 (grade 0) and d2 (grade 1) after d0
    # (grade 1); d9 (grade 1) is judged but not a candidate. trec_eval -> sklearn changes the
    # ideal (all judged -> candidates) and the tie rule (doc_id descending -> average).
    pool, judgments = frames(
        [("r", "q", "d0", 2.0), ("r", "q", "d1", 1.0), ("r", "q", "d2", 1.0)],
        [("q", "d0", 1), ("q", "d1", 0), ("q", "d2", 1), ("q", "d9", 1)],
    )
    d2, d3 = 1 / math.log2(3), 1 / math.log2(4)
    dcg_trec = 1 + d2  # d0, then d2 before d1 (doc_id descending)
    dcg_average = 1 + 0.5 * (d2 + d3)  # the tie group's mean gain over positions 2 and 3
    ideal_all, ideal_candidates = 1 + d2 + d3, 1 + d2
    v = {
        (): dcg_trec / ideal_all,
        ("ideal",): dcg_trec / ideal_candidates,
        ("ties",): dcg_average / ideal_all,
        ("ideal", "ties"): dcg_average / ideal_candidates,
    }
    expected = {
        "ideal": 0.5 * ((v[("ideal",)] - v[()]) + (v[("ideal", "ties")] - v[("ties",)])),
        "ties": 0.5 * ((v[("ties",)] - v[()]) + (v[("ideal", "ties")] - v[("ideal",)])),
    }
    the_plan = rc.plan(profile("trec_eval"), profile("sklearn"), cutoffs=[3])
    scorer = rc.Scorer(judgments, pool)
    walk = rc.reconcile(scorer, the_plan, shapley=True)["walk"]
    (result,) = walk["shapley"]["results"]
    assert walk["shapley"]["n_scorings"] == 4
    assert result["values"] == pytest.approx(expected, abs=1e-12)
    assert result["weighted_values"] is None  # no query weights given
    assert sum(result["values"].values()) == pytest.approx(v[("ideal", "ties")] - v[()],
                                                           abs=1e-12)
    # The walk in spec order gives ideal its marginal from the start, ties the rest.
    (walked,) = walk["results"]
    assert [s["change"] for s in walked["steps"]] == pytest.approx(
        [v[("ideal",)] - v[()], v[("ideal", "ties")] - v[("ideal",)]], abs=1e-12)


def test_shapley_values_add_up_to_the_total_with_weights():
    queries = pl.DataFrame({"query_id": ["q1", "q2", "q3", "q4"], "weight": [1.0, 5.0, 2.0, 3.0]})
    the_plan = rc.plan(profile("default"), profile("trec_eval"))
    walk = rc.reconcile(mixed_scorer(queries), the_plan, shapley=True)["walk"]
    assert walk["shapley"]["n_scorings"] == 2 ** len(the_plan.fields)
    totals = {(r["ranker"], r["cutoff"]): r["total"] for r in walk["results"]}
    for result in walk["shapley"]["results"]:
        total = totals[(result["ranker"], result["cutoff"])]
        assert sum(result["values"].values()) == pytest.approx(total["change"], abs=1e-12)
        assert sum(result["weighted_values"].values()) == pytest.approx(
            total["weighted_change"], abs=1e-12)


def test_each_spec_is_scored_once():
    scorer = mixed_scorer()
    calls = []
    score = scorer._score
    scorer._score = lambda spec: calls.append(spec.spec_id) or score(spec)
    the_plan = rc.plan(profile("default"), profile("sklearn"))
    rc.reconcile(scorer, the_plan, shapley=True, sensitivity=True)
    assert len(calls) == len(set(calls)) == len(scorer.specs)


def test_the_shapley_bound_is_2_to_the_8_scorings_of_10m_rows():
    rc.check_shapley_bound(8, 10_000_000)
    with pytest.raises(rc.ReconcileError) as refused:
        rc.check_shapley_bound(8, 10_000_001)
    assert_names(refused, "--shapley", "2^8", "256", "10,000,001")
    with pytest.raises(rc.ReconcileError) as refused:
        rc.check_shapley_bound(9, 5_000_001)
    assert_names(refused, "2^9", "512", "5,000,001")


def test_shapley_past_the_bound_is_refused_and_nothing_written(tmp_path, capsys, monkeypatch):
    pool = pl.read_parquet(sorted(POOL.glob("*.parquet")))
    # trec_eval -> sklearn walks two fields: 4 scorings; allow 3 scorings' worth of rows.
    monkeypatch.setattr(rc, "MAX_ROW_SCORINGS", 3 * pool.height)
    out = tmp_path / "reconcile.json"
    code = main(["reconcile", "--judgments", str(MAINT_V2), "--run", str(POOL),
                 "--from", "trec_eval", "--to", "sklearn", "--shapley", "--json", str(out)])
    captured = capsys.readouterr()
    assert code == 2
    assert_names(captured.err, "--shapley", "2^2", "4", f"{pool.height:,}")
    assert captured.out == ""
    assert not out.exists() and list(tmp_path.iterdir()) == []
    # Within the bound the same command answers.
    monkeypatch.setattr(rc, "MAX_ROW_SCORINGS", 4 * pool.height)
    assert main(["reconcile", "--judgments", str(MAINT_V2), "--run", str(POOL),
                 "--from", "trec_eval", "--to", "sklearn", "--shapley", "--json", str(out)]) == 0
    assert out.exists()


# -- sensitivity -----------------------------------------------------------------------------


def test_sensitivity_on_a_run_where_only_the_tie_rule_matters(tmp_path):
    # Every candidate graded 0 or 1 (exponential = linear), every graded document a candidate
    # (both ideals agree), no unknown or unjudged candidate, every query with a positive grade
    # and returned: only the order inside the tie groups can move the mean, besides a discount
    # other than a logarithm's (1/rank weighs the places otherwise).
    pool, judgments = frames(
        [("r", "q1", "d1", 2.0), ("r", "q1", "d2", 1.0), ("r", "q1", "d3", 1.0),
         ("r", "q2", "d1", 1.0), ("r", "q2", "d2", 1.0), ("r", "q2", "d3", 0.0)],
        [("q1", "d1", 0), ("q1", "d2", 1), ("q1", "d3", 0),
         ("q2", "d1", 0), ("q2", "d2", 1), ("q2", "d3", 1)],
    )
    document = reconcile_json(tmp_path, *write_inputs(tmp_path, pool, judgments),
                              "--from", "default", "--sensitivity", "--cutoff", "2")
    assert document["to"] is None and "walk" not in document
    (result,) = document["sensitivity"]["results"]
    ranges = {f["field"]: f["range"] for f in result["fields"]}
    assert set(ranges) == set(rc.FIELDS)
    assert ranges.pop("ties") > 0.1
    assert ranges.pop("discount") > 0.01
    assert ranges == pytest.approx(dict.fromkeys(ranges, 0.0), abs=1e-15)
    ties = next(f for f in result["fields"] if f["field"] == "ties")
    assert [a["value"] for a in ties["alternatives"]] == ["average", "doc_id", "trec_eval"]
    means = {a["value"]: a["macro_ndcg"] for a in ties["alternatives"]}
    # Within the ties, doc_id ascending puts the relevant d2 first in q1 (and last in q2, where
    # it costs less); descending (trec_eval) puts d3 first in q1, which then scores 0.
    assert means["doc_id"] > means["average"] > means["trec_eval"]
    assert means["trec_eval"] == pytest.approx((0 + 1 / (1 + 1 / math.log2(3))) / 2, abs=1e-12)
    assert ties["current"] == "average"


def test_sensitivity_knows_ties_by_rank_where_the_run_has_ranks_and_no_positive_one():
    def alternatives(scorer):
        document = rc.reconcile(scorer, rc.plan(profile("default"), None), sensitivity=True)
        fields = document["sensitivity"]["results"][0]["fields"]
        return {f["field"]: [a["value"] for a in f["alternatives"]] for f in fields}

    ranked = alternatives(mixed_scorer())
    assert ranked["ties"] == ["average", "doc_id", "trec_eval", "rank"]
    assert ranked["no_positive"] == ["exclude", "zero", "one"]
    pool, judgments = MIXED
    assert alternatives(rc.Scorer(judgments, pool))["ties"] == ["average", "doc_id", "trec_eval"]


def test_sensitivity_adds_an_explicit_gain_map_to_the_alternatives(tmp_path):
    spec = tmp_path / "map.yaml"
    spec.write_text("gain: {0: 0, 1: 1, 2: 5, 3: 9}\n")
    scorer = mixed_scorer()
    the_plan = rc.plan(profile("default"), load_spec(spec))
    sensitivity = rc.reconcile(scorer, the_plan, sensitivity=True)["sensitivity"]
    gain = next(f for f in sensitivity["results"][0]["fields"] if f["field"] == "gain")
    assert [a["value"] for a in gain["alternatives"]] == [
        "exponential", "linear", {"0": 0.0, "1": 1.0, "2": 5.0, "3": 9.0}]


# -- the document and the table --------------------------------------------------------------


def test_json_document_names_every_spec_and_the_lineage(tmp_path, capsys):
    args = ["reconcile", "--judgments", str(MAINT_V2), "--run", str(POOL),
            "--queries", str(QUERIES), "--from", "trec_eval", "--to", "sklearn", "--cutoff", "10",
            "--shapley", "--sensitivity", "--json"]
    assert main(args) == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document) == {"lineage", "weights", "cutoffs", "from", "to", "walk",
                             "sensitivity", "spec_ids"}
    assert document["lineage"]["judgment_version"] == "maint-v2"
    assert document["lineage"]["candidate_pool"] == "pool-2026-11-28"
    assert set(document["lineage"]) == {"judgment_version", "judgments_sha256",
                                        "candidate_pool", "pool_sha256", "project_version"}
    assert document["weights"] is True and document["cutoffs"] == [10]
    assert document["from"]["name"] == "trec_eval"
    assert document["from"]["spec_id"] == profile("trec_eval").replace(cutoffs=(10,)).spec_id
    walk = document["walk"]
    involved = {document["from"]["spec_id"], document["to"]["spec_id"],
                *(s["spec_id"] for s in walk["steps"]),
                *(a["spec_id"] for r in document["sensitivity"]["results"]
                  for f in r["fields"] for a in f["alternatives"])}
    assert involved <= set(document["spec_ids"])
    assert len(document["spec_ids"]) == len(set(document["spec_ids"]))
    assert walk["steps"] == [
        {"field": "ideal", "before": "all_judged", "after": "candidates",
         "spec_id": walk["steps"][0]["spec_id"]},
        {"field": "ties", "before": "trec_eval", "after": "average",
         "spec_id": document["to"]["spec_id"]},
    ]
    assert {(r["ranker"], r["cutoff"]) for r in walk["results"]} == {
        ("bm25-v3", 10), ("dense-v2", 10), ("hybrid-v1", 10)}
    step = walk["results"][0]["steps"][0]
    assert set(step) == {"field", "before", "after", "spec_id", "macro_ndcg", "weighted_ndcg",
                         "n_with_number", "change", "weighted_change", "n_changed",
                         "n_status_changed", "movers"}
    assert len(step["movers"]) == rc.N_MOVERS


def test_table_prints_one_line_per_step_and_the_total(tmp_path, capsys):
    assert main(["reconcile", "--judgments", str(MAINT_V2), "--run", str(POOL),
                 "--queries", str(QUERIES), "--from", "trec_eval", "--to", "sklearn",
                 "--order", "ties,ideal", "--shapley"]) == 0
    printed = capsys.readouterr().out
    assert "order (--order): ties, ideal" in printed
    assert printed.count("trec_eval -> average") == 6  # 3 rankers x 2 cutoffs
    assert printed.count("all_judged -> candidates") == 6
    assert "largest movers" in printed and "w.shapley" in printed
    block = printed.split("bm25-v3, NDCG@10\n")[1].split("\n\n")[0].splitlines()
    assert [line.split()[0] for line in block[2:]] == ["from", "1", "2", "total"]


@pytest.mark.skipif("lightgbm" not in PROFILES, reason="the lightgbm profile does not exist yet")
def test_default_to_lightgbm_on_the_bundled_data(tmp_path):
    inputs = ["--judgments", str(MAINT_V2), "--run", str(POOL), "--cutoff", "10"]
    document = reconcile_json(tmp_path, *inputs, "--from", "default", "--to", "lightgbm")
    start = summary_means(tmp_path, "default", *inputs)
    end = summary_means(tmp_path, "lightgbm", *inputs)
    for result in document["walk"]["results"]:
        key = (result["ranker"], result["cutoff"])
        assert (result["start"]["macro_ndcg"], result["end"]["macro_ndcg"]) == (start[key],
                                                                               end[key])
        assert_walk_telescopes(result)
