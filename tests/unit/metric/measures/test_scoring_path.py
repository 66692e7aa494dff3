"""The measures through the scoring every engine calls (``metric.ndcg.score_candidates``): a
spec's ``measures:`` give one row per (ranker, query, measure), equal to the measures' pass on
its own and to trec_eval's own outputs on its test data, and the spec's nDCG@K rows keep every
number they had when they were the only rows."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.measures.parse import parse_measure
from evaluation_pipeline.metric import ndcg
from evaluation_pipeline.spec import EvaluationSpec, profile
from tests.unit.metric.measures.support import dict_frames, score_dicts
from tests.unit.metric.measures.test_trec_eval_outputs import (
    names,
    read_out,
    read_qrels,
    read_run,
)

frames = dict_frames


def by_measure(rows: pl.DataFrame) -> dict[tuple[str, str], tuple]:
    return {(r["query_id"], r["measure"]): (r["value"], r["value_min"], r["value_max"],
                                            r["status"])
            for r in rows.iter_rows(named=True)}


def same(a, b) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return b is not None and abs(a - b) <= 1e-12


@pytest.mark.parametrize(("qrels", "results", "out_file", "rel"), [
    ("qrels.test", "results.test", "out.test.aq", 1),
    ("qrels.rel_level", "results.test", "out.test.aql", 2),
], ids=["aq", "aql-rel-2"])
def test_a_specs_measures_match_trec_eval_and_the_measures_pass(conformance_dir, qrels, results,
                                                               out_file, rel):
    table = names(rel, cuts=(5, 10, 100), success=(1, 10))
    qrels_dict = read_qrels(conformance_dir / qrels)
    run = read_run(conformance_dir / results)
    spec = profile("trec_eval").replace(measures=["nDCG@10", *table.values()])
    judgments, candidates = frames(qrels_dict, run)
    rows = by_measure(ndcg.score(candidates, judgments, spec))
    direct = score_dicts(qrels_dict, run, list(spec.measures), spec)
    expected = read_out(conformance_dir / out_file)
    checked = 0
    for (name, q), printed in expected.items():
        if name not in table or q not in run:
            continue
        measure = str(parse_measure(table[name]))
        value, least, greatest, _ = rows[(q, measure)]
        assert f"{value:.4f}" == printed, (name, q, value)
        d_value, _, d_least, d_greatest = direct[q][measure]
        assert same(value, d_value) and same(least, d_least) and same(greatest, d_greatest), (
            q, measure)
        checked += 1
    assert checked == len(table) * len(run)


def test_the_specs_ndcg_rows_are_unchanged_beside_other_measures():
    rng = np.random.default_rng(7)
    qrels = {f"q{q}": {f"d{d}": (None if rng.random() < 0.1 else int(rng.integers(0, 4)))
                       for d in range(12) if rng.random() < 0.7} for q in range(40)}
    run = {f"q{q}": {f"d{d}": float(rng.integers(0, 5)) for d in range(15) if rng.random() < 0.8}
           for q in range(45)}
    judgments, candidates = frames(qrels, run)
    base = profile("trec_eval").replace(unjudged="exclude", unknown="incomplete",
                                        cutoffs=[3, 10])
    alone = ndcg.score(candidates, judgments, base)
    spec = base.replace(measures=["nDCG@3", "nDCG@10", "RR(rel=2)@10", "AP", "P@3", "Bpref"])
    both = ndcg.score(candidates, judgments, spec)
    assert both.height == alone.height * 3
    assert both.filter(pl.col("measure").str.starts_with("nDCG@")).equals(alone)
    other = both.filter(~pl.col("measure").str.starts_with("nDCG@"))
    assert other["ndcg"].null_count() == other.height
    assert both.select("ranker", "query_id", "measure").is_unique().all()
    assert both.equals(ndcg.sort_results(both))


def test_the_default_measures_are_the_cutoffs_ndcg():
    spec = EvaluationSpec(cutoffs=[10, 3])
    assert spec.measures is None
    assert [str(m) for m in spec.measure_list] == ["nDCG@3", "nDCG@10"]
    assert EvaluationSpec(measures=["nDCG@10", "nDCG@3"]).spec_id == spec.spec_id


def test_a_measures_cutoff_is_held_to_the_largest_cutoff():
    from evaluation_pipeline.spec import MAX_CUTOFF, SpecError

    with pytest.raises(SpecError, match="above the largest"):
        EvaluationSpec(measures=["nDCG@10", f"R@{MAX_CUTOFF + 1}"])
    assert EvaluationSpec(measures=["nDCG@10", f"R@{MAX_CUTOFF}"]).measures is not None
