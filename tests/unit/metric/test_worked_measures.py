"""Contract section 6, case M: every measure on one query, its value and its bounds over the
one hole, exact to 1e-12, from the spec's measures: through the scoring every engine runs; each
value is also written out here from its definition."""

from __future__ import annotations

import math

import polars as pl
import pytest

from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import profile

TOL = 1e-12
L2 = math.log2

# measure: (by hand, value, least, greatest), as the contract's table gives them.
CASE_M = {
    "nDCG@5": ((2 / L2(3) + 1 / L2(5)) / (3 + 2 / L2(3) + 2 / L2(4) + 1 / L2(5)),
               0.2973254882930626, 0.2973254882930626, 0.4470715891710261),
    "DCG@5": (2 / L2(3) + 1 / L2(5), 1.6925360652163082, 1.6925360652163082, 3.192536065216308),
    "P@5": (2 / 5, 0.4, 0.4, 0.6),
    "P(rel=2)@5": (1 / 5, 0.2, 0.2, 0.4),
    "R@5": (2 / 4, 0.5, 0.5, 0.6),
    "R(rel=2)@5": (1 / 3, 0.3333333333333333, 0.3333333333333333, 0.5),
    "RR": (1 / 2, 0.5, 0.5, 0.5),
    "RR(rel=2)": (1 / 2, 0.5, 0.5, 0.5),
    "RR@1": (0.0, 0.0, 0.0, 0.0),
    "AP": ((1 / 2 + 2 / 4 + 3 / 6) / 4, 0.375, 0.375, 0.5166666666666666),
    "AP(rel=2)": ((1 / 2 + 2 / 6) / 3, 0.27777777777777773, 0.27777777777777773,
                  0.41666666666666663),
    "AP@5": ((1 / 2 + 2 / 4) / 4, 0.25, 0.25, 0.3833333333333333),
    "Rprec": (2 / 4, 0.5, 0.5, 0.6),
    "Success@1": (0.0, 0.0, 0.0, 0.0),
    "Success@2": (1.0, 1.0, 1.0, 1.0),
    "Judged@3": (2 / 3, 0.6666666666666666, 1.0, 1.0),
    "Bpref": (((1 - 1 / 2) + (1 - 1 / 2) + (1 - 2 / 2)) / 4, 0.25, 0.25, 0.3),
    "ERR@5": ((1 / 2) * (3 / 16) + (1 / 4) * (1 / 16) * (13 / 16), 0.1064453125, 0.1064453125,
              0.21938069661458331),
    "RBP(p=0.5)": ((1 - 0.5) * (2 / 4 * 0.5 + 1 / 4 * 0.125 + 3 / 4 * 0.03125), 0.15234375,
                   0.15234375, 0.24609375),
    "RBP(p=0.5,rel=1)": ((1 - 0.5) * (0.5 + 0.125 + 0.03125), 0.328125, 0.328125, 0.453125),
}


def test_case_m_every_measure():
    grades = [0, 2, None, 1, 0, 3]
    docs = [f"d{i + 1}" for i in range(len(grades))]
    candidates = pl.DataFrame({"ranker": "run", "query_id": "q", "doc_id": docs,
                               "score": [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]})
    judged = [(d, g) for d, g in zip(docs, grades) if g is not None] + [("x", 2)]
    judgments = pl.DataFrame({"query_id": "q", "doc_id": [d for d, _ in judged],
                              "grade": [g for _, g in judged], "grade_status": "graded"})
    spec = profile("trec_eval").replace(measures=list(CASE_M))
    rows = {r["measure"]: r for r in score(candidates, judgments, spec).iter_rows(named=True)}
    assert set(rows) == set(CASE_M)
    for measure, (by_hand, value, least, greatest) in CASE_M.items():
        row = rows[measure]
        assert row["status"] == "scored" and row["n_holes"] == 1, measure
        assert by_hand == pytest.approx(value, abs=TOL), measure
        assert row["value"] == pytest.approx(value, abs=TOL), measure
        assert (row["value_min"], row["value_max"]) == pytest.approx((least, greatest),
                                                                     abs=TOL), measure
