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
    for query in ("q00", "q03"):
        rated = explain(pool, version, EvaluationSpec(cutoffs=(5,), raters="rater:h2"),
                        query_id=query, ranker="dense", cutoff=5).to_dict()
        own = explain(pool, alone, EvaluationSpec(cutoffs=(5,)), query_id=query,
                      ranker="dense", cutoff=5).to_dict()
        assert rated == own
