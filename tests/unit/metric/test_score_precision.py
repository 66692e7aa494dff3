"""trec_eval 10.0 reads a run's scores as doubles, trec_eval 9 (and so pytrec_eval) as C
floats: scores that agree to about 7 digits tie in the one and not in the other. The profile
``trec_eval`` is 10.0's; ``trec_eval_9`` (``scores: float32``) is pytrec_eval's, held to it on
data made of such near-ties."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline import evaluate
from evaluation_pipeline.spec import PROFILES, EvaluationSpec, profile

pytrec_eval = pytest.importorskip("pytrec_eval")

MEASURES = {"P_1": "P@1", "P_3": "P@3", "recip_rank": "RR", "map": "AP",
            "ndcg_cut_3": "nDCG@3"}


def near_ties(seed: int):
    """Queries whose scores differ by a few units in the 9th digit: equal as floats."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for n in range(30):
        q = f"q{n}"
        docs = [f"d{i}" for i in range(int(rng.integers(3, 8)))]
        base = float(rng.integers(1, 4))
        run[q] = {d: base + float(rng.integers(0, 5)) * 1e-9 for d in docs}
        qrels[q] = {d: int(rng.integers(0, 3)) for d in docs}
    return qrels, run


def rows(result):
    return {(q, m): v for q, m, v in result.per_query.select(
        "query_id", "measure", "value").iter_rows()}


def test_trec_eval_9_is_pytrec_eval_and_trec_eval_is_not_on_near_ties():
    qrels, run = near_ties(1)
    expected = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES)).evaluate(run)
    names = ["nDCG@3", *(m for m in MEASURES.values() if m != "nDCG@3")]
    nine = rows(evaluate(qrels, run, spec="trec_eval_9", measures=names))
    ten = rows(evaluate(qrels, run, spec="trec_eval", measures=names))
    differing = 0
    for q, values in expected.items():
        for name, ours in MEASURES.items():
            assert nine[(q, ours)] == pytest.approx(values[name], abs=1e-12), (q, name)
            differing += abs(ten[(q, ours)] - values[name]) > 1e-9
    assert differing > 0  # the double reading ranks near-ties apart


def test_the_profiles_name_their_tool_and_the_default_spec_ids_stay():
    assert profile("trec_eval_9").scores == "float32"
    assert profile("trec_eval").scores is None
    assert PROFILES["trec_eval"].spec_id == "86d0bdf3f0f63737"
    assert EvaluationSpec(scores="float32").spec_id != EvaluationSpec().spec_id
    with pytest.raises(Exception, match="scores"):
        EvaluationSpec(scores="float16")


def test_float32_scores_tie_under_every_engine():
    qrels, run = near_ties(2)
    local, streamed = (evaluate(qrels, run, spec="trec_eval_9", engine=engine).per_query
                       for engine in ("local", "streaming"))
    assert local.drop("judgment_version", "candidate_pool").equals(
        streamed.drop("judgment_version", "candidate_pool"))
    assert isinstance(local, pl.DataFrame)
