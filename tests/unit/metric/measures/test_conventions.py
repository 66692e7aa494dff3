"""The spec's conventions as the measures apply them: nDCG is the NDCG scorer's number and
bounds; statuses, judged_only, no_positive; refusals before the kernel runs."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.measures.kinds import INCOMPLETE, NO_POSITIVE, NOT_JUDGED, SCORED
from evaluation_pipeline.measures.parse import MeasureError
from evaluation_pipeline.metric import ndcg
from evaluation_pipeline.spec import spec_from_mapping
from tests.unit.metric.measures.support import score_dicts
from tests.unit.metric.measures.test_oracles import random_data

SPECS = [
    {"profile": "trec_eval"},
    {},
    {"ties": "doc_id", "unknown": "zero", "unjudged": "exclude", "no_positive": "one"},
    {"ideal": "all_judged", "unknown": "exclude", "unjudged": "zero", "gain": "linear"},
]


@pytest.mark.parametrize("mapping", SPECS, ids=lambda m: ",".join(m.values()) or "default")
def test_ndcg_is_the_ndcg_scorers_number_and_bounds(mapping):
    spec = spec_from_mapping({**mapping, "cutoffs": [3, 10]})
    qrels, run = random_data(11, unknown=True)
    ours = score_dicts(qrels, run, ["nDCG@3", "nDCG@10"], spec)
    candidates = pl.DataFrame(
        [("r", q, d, s) for q, docs in run.items() for d, s in docs.items()],
        schema=["ranker", "query_id", "doc_id", "score"], orient="row")
    judgments = pl.DataFrame(
        [(q, d, g, "graded" if g is not None else "unknown")
         for q, docs in qrels.items() for d, g in docs.items()],
        schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64,
                "grade_status": pl.String}, orient="row")
    theirs = ndcg.score(candidates, judgments, spec).filter(pl.col("status") != "missing_from_run")
    statuses = ["scored", "no_positive", "incomplete", "not_judged"]
    for row in theirs.iter_rows(named=True):
        value, status, least, greatest = ours[row["query_id"]][f"nDCG@{row['cutoff']}"]
        assert statuses[status] == row["status"]
        for mine, expected in ((value, row["ndcg"]), (least, row["ndcg_min"]),
                               (greatest, row["ndcg_max"])):
            assert (np.isnan(mine) and expected is None) or mine == expected, row


def test_statuses_and_judged_only():
    qrels = {"open": {"a": 2, "b": None}, "none": {"a": 0}, "fine": {"a": 1}}
    run = {"open": {"a": 1.0, "b": 2.0}, "none": {"a": 1.0}, "fine": {"a": 1.0, "c": 2.0},
           "unjudged_query": {"a": 1.0}}
    spec = spec_from_mapping({"ties": "doc_id", "unjudged": "zero"})  # unknown: incomplete
    scored = score_dicts(qrels, run, ["RR@10", "RR(judged_only=True)@10", "P@2", "Judged@2"],
                         spec)
    assert scored["open"]["RR@10"][:2] == (pytest.approx(np.nan, nan_ok=True), INCOMPLETE)
    # judged_only drops the unknown candidate: the query has a number, RR 1.
    assert scored["open"]["RR(judged_only=True)@10"][:2] == (1.0, SCORED)
    assert scored["open"]["Judged@2"][:2] == (0.5, SCORED)
    assert scored["none"]["RR@10"][1] == NO_POSITIVE and np.isnan(scored["none"]["RR@10"][0])
    assert scored["none"]["P@2"][:2] == (0.0, SCORED)  # P has a value without relevant ones
    assert scored["fine"]["RR@10"][:2] == (0.5, SCORED)  # c (unjudged, zero) ranks first
    assert scored["fine"]["RR@10"][2:] == (0.5, 1.0)  # c graded relevant: RR 1
    assert scored["unjudged_query"]["RR@10"][1] == NOT_JUDGED


def test_no_positive_zero_and_one():
    qrels, run = {"q": {"a": 0}}, {"q": {"a": 1.0}}
    for rule, expected in (("zero", 0.0), ("one", 1.0)):
        spec = spec_from_mapping({"ties": "doc_id", "no_positive": rule})
        value, status, least, greatest = score_dicts(qrels, run, ["AP"], spec)["q"]["AP"]
        assert (value, status, least, greatest) == (expected, NO_POSITIVE, expected, expected)


@pytest.mark.parametrize("name", ["AP", "AP@10", "Bpref", "ERR@10"])
def test_measures_without_an_average_over_ties_are_refused_under_it(name):
    with pytest.raises(MeasureError, match="ties: average"):
        score_dicts({"q": {"a": 1}}, {"q": {"a": 1.0}}, [name], spec_from_mapping({}))


def test_err_refuses_a_grade_above_its_max_rel():
    spec = spec_from_mapping({"ties": "doc_id"})
    with pytest.raises(MeasureError, match=r"max_rel=4.*ERR\(max_rel=6\)"):
        score_dicts({"q": {"a": 6}}, {"q": {"a": 1.0}}, ["ERR@10"], spec)
    scored = score_dicts({"q": {"a": 6}}, {"q": {"a": 1.0}}, ["ERR(max_rel=6)@10"], spec)
    assert scored["q"]["ERR(max_rel=6)@10"][0] == 63 / 64


def test_err_equals_gdeval_worked_case():
    """gdeval (max grade 4): grades 4, 0, 2 give 15/16 + 0 + (1/16)(3/16)/3."""
    spec = spec_from_mapping({"ties": "doc_id"})
    scored = score_dicts({"q": {"a": 4, "b": 0, "c": 2}}, {"q": {"a": 3.0, "b": 2.0, "c": 1.0}},
                         ["ERR@20"], spec)
    assert scored["q"]["ERR@20"][0] == pytest.approx(15 / 16 + (1 / 16) * (3 / 16) / 3,
                                                     abs=1e-15)
