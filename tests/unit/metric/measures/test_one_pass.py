"""The other measures scored inside the NDCG kernel's pass (``score_blocks_and_measures``) give,
bit for bit, what grading and ranking each block again (``ranking.ranked_blocks``) and scoring
those lists (``plan.score_ranked``) give, and leave the NDCG kernel's own outputs as
``score_blocks`` alone makes them: across tie rules, policies, ideals, discounts, pools with
other rankers' holes, and the kernel's two halves."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.metric import ndcg
from evaluation_pipeline.metric.hashing import pool_blocks
from evaluation_pipeline.spec import profile

EVERY = ["nDCG@10", "nDCG@3", "RR(rel=2)@10", "AP(rel=2)@100", "R@100", "RR", "AP", "P(rel=2)@5",
         "Success@3", "Judged@10", "Rprec", "Bpref", "ERR@20", "RBP(p=0.9)", "RBP(rel=2)@10",
         "DCG@5", "nDCG(dcg=log2,judged_only=True)@20", "AP(judged_only=True)@50",
         "R(rel=2)@1000", "nDCG(dcg='exp-log2')"]
# Not defined under ties: average (their declarations refuse it).
NOT_AVERAGED = ("AP", "Bpref", "ERR")


def pool(seed: int, rankers: int = 3, queries: int = 30):
    """(judgments, candidates): grades 0..4 and unknown rows, scores with ties, documents
    that only some rankers return (other rankers' holes under all_judged)."""
    rng = np.random.default_rng(seed)
    judged = [(f"q{q}", f"d{d}", None if rng.random() < 0.1 else int(rng.integers(0, 5)))
              for q in range(queries) for d in range(14) if rng.random() < 0.5]
    judgments = pl.DataFrame(
        [(q, d, g, "unknown" if g is None else "graded") for q, d, g in judged],
        schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64,
                "grade_status": pl.String}, orient="row")
    candidates = pl.DataFrame(
        [(f"r{r}", f"q{q}", f"d{d}", float(rng.integers(0, 6)))
         for r in range(rankers) for q in range(queries + 2) for d in range(18)
         if rng.random() < 0.6],
        schema={"ranker": pl.String, "query_id": pl.String, "doc_id": pl.String,
                "score": pl.Float64}, orient="row")
    return judgments, candidates


def specs():
    trec = profile("trec_eval")
    sklearn = profile("sklearn")
    return {
        "trec_eval": trec.replace(measures=EVERY),
        "trec_eval, exclude and incomplete": trec.replace(
            measures=EVERY, unjudged="exclude", unknown="incomplete", no_positive="exclude"),
        "doc_id ties, candidates' ideal, 1/rank": trec.replace(
            measures=EVERY, ties="doc_id", ideal="candidates", discount="1/rank"),
        "default": profile("default").replace(
            measures=[m for m in EVERY if not m.startswith(NOT_AVERAGED)]),
        "sklearn": sklearn.replace(measures=[m for m in EVERY if not m.startswith(NOT_AVERAGED)]),
        "float32 scores, max_grade 4": profile("trec_eval_9").replace(measures=EVERY,
                                                                       max_grade=4),
    }


def separate(candidates, judgments, rules, index, spec):
    """The other measures as they were scored before the one pass: each block graded and
    ranked again, then the measures' pass over those lists."""
    from evaluation_pipeline.metric.kernels.loading import read_only
    from evaluation_pipeline.metric.measures.kernels import Judged, Ranked
    from evaluation_pipeline.metric.measures.plan import score_ranked
    from evaluation_pipeline.metric.measures.ranking import ranked_blocks

    grades = read_only(index.grades["grade"].to_numpy().astype(np.float64))
    arrays = ranked_blocks(candidates, judgments._replace(gain=grades), rules)
    result = score_ranked(Ranked(*arrays[:4]), Judged(*arrays[4:]), spec.other_measures, spec,
                          top_grade=index.top_grade, discount=spec.discount)
    return result.value, result.status, result.least, result.greatest


@pytest.mark.parametrize("halves", [False, True], ids=["one thread", "two halves"])
@pytest.mark.parametrize("name", list(specs()))
@pytest.mark.parametrize("seed", [1, 2])
def test_the_one_pass_equals_grading_and_ranking_again(monkeypatch, name, seed, halves):
    from evaluation_pipeline.metric.kernels.dcg import score_blocks

    spec = specs()[name]
    judgments, candidates = pool(seed)
    if halves:
        monkeypatch.setattr(ndcg, "HALVES_FROM_ROWS", 0)
    seen = []
    original = ndcg._score_halves

    def spy(kernel, arguments, more=()):
        results = original(kernel, arguments, more)
        seen.append((arguments, results))
        return results

    monkeypatch.setattr(ndcg, "_score_halves", spy)
    blocks = pool_blocks(candidates)
    index = ndcg.index_judgments(judgments, spec)
    rankers = blocks.keys["ranker"].unique().len()
    holes = ndcg.pool_holes.of_pool(blocks.frame, rankers, index.grades, spec)
    ndcg.score_candidates(blocks, index, spec, holes)
    (arguments, results), = seen
    assert len(results) == 12
    for got, expected in zip(results[:8], score_blocks(*arguments)):
        np.testing.assert_array_equal(got, expected, strict=True)
    for got, expected in zip(results[8:], separate(*arguments, index, spec)):
        np.testing.assert_array_equal(got, expected, strict=True)
    value = results[8]
    assert np.isfinite(value).any() and np.isfinite(results[10]).any()


def test_the_measures_refusals_are_one_wording():
    from evaluation_pipeline.measures.parse import MeasureError, parse_measure
    from evaluation_pipeline.metric.measures.plan import plan_measures
    from evaluation_pipeline.spec import SpecError

    with pytest.raises(SpecError) as by_spec:
        profile("default").replace(measures=["nDCG@10", "AP(rel=2)"])
    with pytest.raises(MeasureError) as by_plan:
        plan_measures([parse_measure("AP(rel=2)")], profile("default"), 10)
    ap = parse_measure("AP(rel=2)")
    wording = (f"AP(rel=2) is not defined under ties: average ({ap.declaration.ties}); set ties "
               "to trec_eval, doc_id or rank")
    assert str(by_spec.value) == f"spec field 'measures': {wording}"
    assert str(by_plan.value) == f"measure {wording}"


def test_a_specs_measure_list_is_parsed_once():
    spec = profile("trec_eval").replace(measures=["nDCG@10", "RR(rel=2)@10"])
    assert spec.measure_list is spec.measure_list
    assert [str(m) for m in spec.measure_list] == ["nDCG@10", "RR(rel=2)@10"]
    assert spec == profile("trec_eval").replace(measures=["nDCG@10", "RR(rel=2)@10"])
    assert spec.replace(measures=["nDCG@5"]).measure_list != spec.measure_list
