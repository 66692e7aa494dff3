"""The one headline table in its four views, and the one number formatter behind them."""

from __future__ import annotations

import polars as pl

from evaluation_pipeline.cli.score_command import SUMMARY_COLUMNS
from evaluation_pipeline.evaluation import Lineage, summarize
from evaluation_pipeline.report.format import interval, number, with_interval
from evaluation_pipeline.report.headline import PIPELINE_VIEW, REPORT_VIEW, headline_table
from evaluation_pipeline.report.markdown import headline_markdown
from evaluation_pipeline.report.summary import StoredReport, describe_stored_reports
from evaluation_pipeline.report.terminal import render_summary
from evaluation_pipeline.spec import EvaluationSpec
from schemas.columns import PER_QUERY_COLUMNS

COUNTS = {"scored": 33, "no_positive": 3, "incomplete": 5, "not_judged": 0,
          "missing_from_run": 1}
RESULTS = [
    {"ranker": "bm25-v3", "cutoff": 5, "macro_ndcg": 0.80834, "weighted_ndcg": 0.81271,
     "macro_ndcg_interval": [0.7551, 0.86049], "weighted_ndcg_interval": [0.74, 0.9],
     "n_with_number": 33, "n_queries": 42, "status_counts": COUNTS},
    {"ranker": "a-ranker-with-a-long-name", "cutoff": 10, "macro_ndcg": None,
     "weighted_ndcg": None, "macro_ndcg_interval": [None, None],
     "weighted_ndcg_interval": [None, None], "n_with_number": 0, "n_queries": 1,
     "status_counts": {**dict.fromkeys(COUNTS, 0), "not_judged": 1}},
]
LINEAGE = {"judgment_version": "maint-v2", "judgments_sha256": "19d07e57e337" + "0" * 52,
           "candidate_pool": "pool-2026-11-28", "pool_sha256": "c86c9da5ccf8" + "0" * 52}


def test_numbers_intervals_and_signs():
    assert (number(0.80834), number(None), number(0.80834, 3)) == ("0.8083", "n/a", "0.808")
    assert (number(0.0123, signed=True), number(-0.0123, 3, signed=True)) == ("+0.0123", "-0.012")
    assert interval([0.7551, 0.86049]) == "[0.755, 0.860]"
    assert interval([-0.066, 0.055], signed=True) == "[-0.066, +0.055]"
    assert interval([None, None]) == interval(None) == ""
    assert with_interval(0.80834, [0.7551, 0.86049]) == "0.8083 [0.755, 0.860]"
    assert with_interval(0.80834, [None, None]) == "0.8083"
    assert with_interval(None, [None, None]) == "n/a"


def test_summary_view_has_fixed_columns_that_a_long_name_overflows():
    summary = {"lineage": LINEAGE, "spec_id": "cf68d57384f1ab70", "conventions": "gain 2^g-1",
               "results": RESULTS}
    assert render_summary(summary).splitlines() == [
        "judgments maint-v2 (sha256 19d07e57e337), pool pool-2026-11-28 (sha256 c86c9da5ccf8), "
        "spec cf68d57384f1ab70",
        "conventions: gain 2^g-1",
        "",
        "ranker                  K    NDCG  queries  scored  no_pos incompl notjudg missing",
        "bm25-v3                 5  0.8083       42      33       3       5       0       1",
        "a-ranker-with-a-long-name   10     n/a        1       0       0       0       1       0",
    ]


def test_report_view_is_as_wide_as_its_cells_with_a_rule():
    assert headline_table(RESULTS, REPORT_VIEW).splitlines() == [
        "ranker                      K    NDCG        interval  weighted  with_num  queries  "
        "no_pos  incompl  notjudg  missing",
        "-------------------------  --  ------  --------------  --------  --------  -------  "
        "------  -------  -------  -------",
        "bm25-v3                     5  0.8083  [0.755, 0.860]    0.8127        33       42  "
        "     3        5        0        1",
        "a-ranker-with-a-long-name  10     n/a                       n/a         0        1  "
        "     0        0        1        0",
    ]


def test_markdown_view_puts_each_interval_beside_its_mean():
    report = {"results": RESULTS, "headline": ["first sentence.", "second sentence."]}
    assert headline_markdown(report).splitlines() == [
        "| ranker | K | NDCG | weighted | with number | queries | no positive | incomplete "
        "| not judged | missing |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|",
        "| bm25-v3 | 5 | 0.8083 [0.755, 0.860] | 0.8127 [0.740, 0.900] | 33 | 42 | 3 | 5 | 0 "
        "| 1 |",
        "| a-ranker-with-a-long-name | 10 | n/a | n/a | 0 | 1 | 0 | 0 | 1 | 0 |",
        "",
        "- first sentence.",
        "- second sentence.",
    ]


def test_pipeline_view_and_summary():
    assert headline_table(RESULTS[:1], PIPELINE_VIEW).splitlines() == [
        "   ranker           K  NDCG [CI]                  with number queries",
        "   bm25-v3          5  0.8083 [0.755, 0.860]               33      42",
    ]
    spec = EvaluationSpec()
    assert describe_stored_reports(spec, []).splitlines() == [
        f"spec {spec.spec_id}: {spec.describe()}", "no reports yet"]
    stored = StoredReport("pool-2026-11-28", "maint-v2",
                          {"lineage": LINEAGE, "results": RESULTS[:1], "headline": ["said."]},
                          "/reports/report.html")
    assert describe_stored_reports(spec, [stored]).splitlines()[1:] == [
        "",
        "== pool pool-2026-11-28 x judgments maint-v2 (sha256 19d07e57e337, pool sha256 "
        "c86c9da5ccf8)",
        "   report: /reports/report.html",
        "   ranker           K  NDCG [CI]                  with number queries",
        "   bm25-v3          5  0.8083 [0.755, 0.860]               33      42",
        "   - said.",
    ]


def test_the_summary_needs_only_its_columns():
    assert set(SUMMARY_COLUMNS) <= set(PER_QUERY_COLUMNS)
    spec = EvaluationSpec(cutoffs=(5,))
    lineage = Lineage("v1", "a" * 64, "p1", "b" * 64, spec.spec_id)
    rows = pl.DataFrame({
        "ranker": ["r", "r", "s"], "query_id": ["q1", "q2", "q1"], "cutoff": [5, 5, 5],
        "measure": ["nDCG@5"] * 3, "value": [0.5, None, 1.0],
        "status": ["scored", "no_positive", "scored"], "ndcg": [0.5, None, 1.0],
        "judged_at_k": [1.0, 0.5, 1.0], "candidate_recall": [1.0, 1.0, 0.5],
        "dcg": [1.0, 0.0, 2.0],
    })
    assert (summarize(rows.select(SUMMARY_COLUMNS), spec, lineage)
            == summarize(rows, spec, lineage))
