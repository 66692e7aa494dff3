"""The measures against their peers per query, to 1e-12, on random data with ties, unjudged
documents and grades 0..7: pytrec_eval (trec_eval 9) at relevance levels 1 and 2, ir_measures
where its conventions differ from trec_eval's (Judged@k, RR@k), scikit-learn's dcg_score under
its log bases."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation_pipeline.spec import profile, spec_from_mapping
from tests.unit.metric.measures.support import score_dicts

pytrec_eval = pytest.importorskip("pytrec_eval")


def random_data(seed: int, n_queries: int = 40, unknown: bool = False):
    """qrels and run: scores on 6 levels (ties), about a third of the candidates unjudged,
    judged documents the run lacks, grades 0..7 (and unknown rows when asked)."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for n in range(n_queries):
        q = f"q{n}"
        m = int(rng.integers(1, 30))
        run[q] = {f"d{i:02d}": float(rng.integers(0, 6)) for i in range(m)}
        qrels[q] = {}
        for d in run[q]:
            if rng.random() < 0.65:
                qrels[q][d] = int(rng.integers(0, 8)) if rng.random() < 0.5 else 0
            elif unknown and rng.random() < 0.3:
                qrels[q][d] = None
        for i in range(int(rng.integers(0, 6))):
            qrels[q][f"x{i}"] = int(rng.integers(0, 8))
        if not qrels[q]:
            qrels[q]["x9"] = 0
    return qrels, run


TREC = {"P_5": "P{r}@5", "P_10": "P{r}@10", "recall_5": "R{r}@5", "recall_10": "R{r}@10",
        "map": "AP{r}", "map_cut_5": "AP{r}@5", "map_cut_10": "AP{r}@10",
        "recip_rank": "RR{r}", "Rprec": "Rprec{r}", "bpref": "Bpref{r}",
        "success_1": "Success{r}@1", "success_5": "Success{r}@5", "success_10": "Success{r}@10",
        "ndcg_cut_5": "nDCG@5", "ndcg_cut_10": "nDCG@10"}


@pytest.mark.parametrize("rel", [1, 2])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_trec_eval_profile_matches_pytrec_eval(seed, rel):
    qrels, run = random_data(seed)
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"P", "recall", "map", "map_cut", "recip_rank", "Rprec", "bpref", "success",
                "ndcg_cut"}, relevance_level=rel)
    expected = evaluator.evaluate(run)
    suffix = f"(rel={rel})" if rel != 1 else ""
    table = {trec: name.format(r=suffix) for trec, name in TREC.items()}
    from evaluation_pipeline.measures.parse import parse_measure

    scored = score_dicts(qrels, run, list(table.values()), profile("trec_eval"))
    for q, values in expected.items():
        for trec, name in table.items():
            ours = scored[q][str(parse_measure(name))][0]
            assert ours == pytest.approx(values[trec], abs=1e-12), (q, trec, rel)


ir_measures = pytest.importorskip("ir_measures")


def _ir_measures(qrels, run, names):
    """{(query, name): value} from ir_measures."""
    qrels = {q: {d: (g if g is not None else -1) for d, g in docs.items()}
             for q, docs in qrels.items()}
    measures = [ir_measures.parse_measure(n) for n in names]
    return {(m.query_id, str(m.measure)): m.value
            for m in ir_measures.iter_calc(measures, qrels, run)}


def test_judged_at_k_matches_ir_measures_without_unknown_rows():
    """ir_measures counts a document judged when qrels has a row for it, and ranks ties by
    doc_id ascending: the spec's doc_id ties, with no unknown row, is its convention."""
    qrels, run = random_data(5)
    names = ["Judged@1", "Judged@5", "Judged@10", "Judged@50"]
    theirs = _ir_measures(qrels, run, names)
    ours = score_dicts(qrels, run, names, spec_from_mapping({"ties": "doc_id"}))
    for (q, name), value in theirs.items():
        assert ours[q][name][0] == pytest.approx(value, abs=1e-12), (q, name)


def test_judged_at_k_differs_from_ir_measures_on_unknown_rows():
    """An unknown row (trec_eval's -1) is judged for ir_measures, not here (contract rule 1)."""
    qrels = {"q": {"a": None, "b": 1}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    assert _ir_measures(qrels, run, ["Judged@2"])[("q", "Judged@2")] == 1.0
    ours = score_dicts(qrels, run, ["Judged@2"], spec_from_mapping({"ties": "doc_id"}))
    assert ours["q"]["Judged@2"][0] == 0.5


@pytest.mark.parametrize("rel", [1, 2])
def test_rr_at_k_matches_ir_measures(rel):
    """RR@k cuts the list at k (ir_measures' msmarco provider; trec_eval's recip_rank has no
    cutoff); ties by doc_id ascending, unjudged documents not relevant."""
    qrels, run = random_data(6)
    suffix = f"(rel={rel})" if rel != 1 else ""
    names = [f"RR{suffix}@{k}" for k in (1, 3, 10)]
    theirs = _ir_measures(qrels, run, names)
    spec = spec_from_mapping({"ties": "doc_id", "unjudged": "zero", "unknown": "zero",
                              "no_positive": "zero", "ideal": "all_judged"})
    ours = score_dicts(qrels, run, names, spec)
    checked = 0
    for (q, name), value in theirs.items():
        assert ours[q][name][0] == pytest.approx(value, abs=1e-12), (q, name)
        checked += 1
    assert checked


sklearn_metrics = pytest.importorskip("sklearn.metrics")


@pytest.mark.parametrize("log_base", [2, 10, np.e])
@pytest.mark.parametrize("k", [1, 3, 10])
def test_dcg_matches_sklearn_dcg_score_under_its_log_bases(log_base, k):
    """DCG@k under the sklearn profile (linear gain, ties averaged) with the kernel's discount
    of base b equals dcg_score(y_true, y_score, k=k, log_base=b), ties included."""
    qrels, run = random_data(7)
    ours = score_dicts(qrels, run, [f"DCG@{k}"], profile("sklearn"),
                       discount="log2" if log_base == 2 else float(log_base))
    for q, scores in run.items():
        docs = sorted(scores)
        y_true = np.array([[qrels[q].get(d) or 0 for d in docs]], dtype=float)
        y_score = np.array([[scores[d] for d in docs]])
        if len(docs) < 2:
            continue  # dcg_score wants two documents at least
        expected = sklearn_metrics.dcg_score(y_true, y_score, k=k, log_base=log_base)
        assert ours[q][f"DCG@{k}"][0] == pytest.approx(expected, abs=1e-12), (q, k, log_base)


def test_dcg_with_reciprocal_rank_discount():
    """TF-Ranking's rank_discount_fn = 1/rank: DCG@k = sum of gain / place."""
    qrels = {"q": {"a": 3, "b": 0, "c": 1}}
    run = {"q": {"a": 1.0, "b": 3.0, "c": 2.0}}
    ours = score_dicts(qrels, run, ["DCG@3", "DCG(dcg=log2)@2"],
                       spec_from_mapping({"ties": "doc_id", "gain": "linear"}),
                       discount="1/rank")
    assert ours["q"]["DCG@3"][0] == 0 / 1 + 1 / 2 + 3 / 3
    assert ours["q"]["DCG(dcg='log2')@2"][0] == 0.5
