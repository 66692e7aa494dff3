"""A trace of a version with raters is in the grades of the spec's rule: under `rater:<id>`,
the trace of that rater's rows as a version of their own."""

from __future__ import annotations

import polars as pl

from evaluation_pipeline.analysis.explain import explain
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.raters import pool_over, rated_version


def test_a_trace_under_one_rater_is_that_raters_own_trace():
    version = rated_version(51, n_queries=6)
    pool = pool_over(version, 52)
    alone = version.filter(pl.col("rater") == "h2").drop("rater", "rater_kind")
    spec = EvaluationSpec(cutoffs=(5,), unknown="zero")
    for query in ("q00", "q01", "q03"):
        rated = explain(pool, version, spec.replace(raters="rater:h2"), query_id=query,
                        ranker="dense", cutoff=5).to_dict()
        own = explain(pool, alone, spec, query_id=query, ranker="dense", cutoff=5).to_dict()
        assert rated == own
        assert rated["ndcg"] is not None or rated["status"] == "no_positive"
    # Under another rule the same query traces other grades.
    h2, pooled = (explain(pool, version, spec.replace(raters=rule), query_id="q01",
                          ranker="dense", cutoff=5).to_dict() for rule in ("rater:h2", "max"))
    assert h2["ndcg"] != pooled["ndcg"]

