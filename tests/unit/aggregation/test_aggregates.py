"""Aggregates on a hand-computed example: macro vs weighted, small slices, statuses apart."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.aggregation.aggregate_table import (
    aggregate,
    aggregate_with_intervals,
)
from evaluation_pipeline.report import (
    REPORT_COLUMNS,
    ReportConfig,
    headline_markdown,
    write_report,
)
from evaluation_pipeline.spec import EvaluationSpec
from evaluation_pipeline.stats.intervals import ALL
from schemas.columns import AGGREGATE_KEY, STATUSES
from tests.support.frames import LINEAGE, PER_QUERY, SHA_J, per_query_rows

QUERIES = pl.DataFrame({
    "query_id": ["q1", "q2", "q3", "q4", "q5"],
    "query_text": ["one", "two", "three", "four", "five"],
    "weight": [1.0, 3.0, 10.0, 5.0, 0.0],
    "band": ["a", "a", "b", "b", "b"],
})


def rows_by_slice(frame: pl.DataFrame) -> dict:
    return {(r["slice_column"], r["slice_value"]): r for r in frame.iter_rows(named=True)}


def test_macro_and_weighted_means_differ_and_statuses_are_apart():
    rows = rows_by_slice(aggregate_with_intervals(PER_QUERY, QUERIES, ("band",), n_bootstrap=500))
    everything = rows[("all", "all")]
    assert everything["macro_ndcg"] == pytest.approx((0.5 + 1.0 + 0.2) / 3, abs=1e-12)
    assert everything["weighted_ndcg"] == pytest.approx((0.5 * 1 + 1.0 * 3 + 0.2 * 0) / 4,
                                                        abs=1e-12)
    assert (everything["n_queries"], everything["n_with_number"]) == (5, 3)
    assert (everything["n_scored"], everything["n_no_positive"],
            everything["n_incomplete"]) == (3, 1, 1)
    assert everything["n_not_judged"] == everything["n_missing_from_run"] == 0
    assert everything["mean_judged_at_k"] == pytest.approx((1.0 + 0.8 + 0.6 + 0.4 + 0.2) / 5)
    # candidate_recall is null for q3 (no positive grade): mean over the four that have one.
    assert everything["mean_candidate_recall"] == pytest.approx((0.5 + 1.0 + 0.25 + 0.75) / 4)
    assert everything["macro_ndcg_low"] <= everything["macro_ndcg"] <= everything["macro_ndcg_high"]
    assert 0.2 <= everything["macro_ndcg_low"] and everything["macro_ndcg_high"] <= 1.0


def test_each_slice_has_its_own_counts_and_a_single_query_has_no_interval():
    rows = rows_by_slice(aggregate_with_intervals(PER_QUERY, QUERIES, ("band",), n_bootstrap=500))
    a, b = rows[("band", "a")], rows[("band", "b")]
    assert (a["n_queries"], a["n_with_number"], a["n_no_positive"],
            a["n_incomplete"]) == (2, 2, 0, 0)
    assert (b["n_queries"], b["n_with_number"], b["n_no_positive"],
            b["n_incomplete"]) == (3, 1, 1, 1)
    assert a["macro_ndcg"] == pytest.approx(0.75)
    assert a["weighted_ndcg"] == pytest.approx((0.5 + 3.0) / 4)
    assert b["macro_ndcg"] == pytest.approx(0.2)
    # q5 weighs 0: no weight behind slice b's number, so no weighted mean.
    assert b["weighted_ndcg"] is None
    assert b["macro_ndcg_low"] is None and b["macro_ndcg_high"] is None
    assert a["macro_ndcg_low"] is not None


def test_without_weights_the_weighted_mean_is_null_and_the_report_says_so(tmp_path):
    spec = EvaluationSpec(cutoffs=(5,))
    report = write_report(tmp_path, PER_QUERY, spec, LINEAGE, None, ReportConfig(n_bootstrap=200))
    result = report["results"][0]
    assert result["weighted_ndcg"] is None and result["weighted_ndcg_interval"] == [None, None]
    assert report["weights"]["given"] is False
    assert "no query weights given" in report["weights"]["description"]
    assert "1 without a positive grade, 1 incomplete" in result["sentence"]
    assert result["sentence"].startswith(
        f"NDCG@5 {result['macro_ndcg']:.3f} [{result['macro_ndcg_interval'][0]:.3f}, "
    )


def test_same_seed_same_intervals_other_seed_other_intervals():
    values = np.random.default_rng(0).uniform(0, 1, 40)
    per_query = per_query_rows([("r", f"q{i:02d}", float(v), "scored")
                                for i, v in enumerate(values)])
    first = aggregate_with_intervals(per_query, n_bootstrap=300, seed=1)
    again = aggregate_with_intervals(per_query, n_bootstrap=300, seed=1)
    other = aggregate_with_intervals(per_query, n_bootstrap=300, seed=2)
    assert first.equals(again)
    assert first["macro_ndcg_low"][0] != other["macro_ndcg_low"][0]


def test_write_report_writes_every_file_and_returns_report_json(tmp_path):
    spec = EvaluationSpec(cutoffs=(5,))
    config = ReportConfig(n_bootstrap=200, seed=5)
    report = write_report(tmp_path, PER_QUERY, spec, LINEAGE, QUERIES, config)
    assert {p.name for p in tmp_path.iterdir()} == {
        "report.json", "aggregates.parquet", "per_query.parquet", "report.html"
    }
    assert json.loads((tmp_path / "report.json").read_text()) == report
    # query_text is free text, never a slice; band is the one slice column.
    assert report["slices"] == ["band"]
    assert report["statistics"]["seed"] == 5 and report["statistics"]["n_bootstrap"] == 200
    aggregates = pl.read_parquet(tmp_path / "aggregates.parquet")
    assert set(aggregates["spec_id"]) == {LINEAGE.spec_id}
    assert set(aggregates["judgments_sha256"]) == {SHA_J}
    assert pl.read_parquet(tmp_path / "per_query.parquet").equals(PER_QUERY)
    markdown = headline_markdown(report)
    assert markdown.splitlines()[0].startswith("| ranker | K | NDCG |")
    assert f"| r | 5 | {report['results'][0]['macro_ndcg']:.4f}" in markdown
    assert report["results"][0]["sentence"] in markdown


def test_aggregates_equal_one_group_by_over_all_rows_and_the_report_to_the_bit():
    """The aggregates are sums over chunks of queries: their counts are those of one polars
    group-by over every row with the queries table joined as is, their means equal its means
    up to the order of additions, and summary.json's numbers (``aggregate``) are the report's
    (``aggregate_with_intervals``) bit for bit."""
    rng = np.random.default_rng(3)
    n = 3000
    ids = [f"q{i:05d}" for i in rng.permutation(n)]
    rows = pl.concat([
        per_query_rows([(ranker, q, None if v < 0.1 else float(v), "scored" if v >= 0.1 else
                         "no_positive", float(j), None if j < 0.2 else float(j))
                        for q, v, j in zip(ids, rng.uniform(0, 1, n), rng.uniform(0, 1, n))],
                       cutoff=k)
        for ranker in ("b", "a") for k in (10, 5)
    ])
    queries = pl.DataFrame({
        "query_id": ids[: n - 100],  # 100 queries without a row weigh 0, their slices (none)
        "weight": rng.lognormal(1.0, 1.5, n - 100),
        "band": pl.Series([("head", "tail", None)[i] for i in rng.integers(0, 3, n - 100)],
                          dtype=pl.String),
        "size": rng.integers(0, 4, n - 100),
    })
    slices = ("band", "size")
    frame = rows.select(c for c in REPORT_COLUMNS if c in rows.columns).join(
        queries, on="query_id", how="left").with_columns(
        pl.format("nDCG@{}", "cutoff").alias("measure"))
    has_number = pl.col("ndcg").is_not_null()
    weight = pl.when(has_number).then(pl.col("weight").fill_null(0.0)).otherwise(0.0)
    reference = pl.concat([
        frame.with_columns(pl.col(column).cast(pl.String).fill_null("(none)")
                           .alias("slice_value") if column else pl.lit(ALL).alias("slice_value"),
                           pl.lit(column or ALL).alias("slice_column"))
        .group_by("ranker", "cutoff", "measure", "slice_column", "slice_value").agg(
            pl.len().cast(pl.Int64).alias("n_queries"),
            has_number.sum().cast(pl.Int64).alias("n_with_number"),
            pl.col("ndcg").mean().alias("macro_ndcg"),
            *[(pl.col("status") == s).sum().cast(pl.Int64).alias(f"n_{s}") for s in STATUSES],
            pl.col("judged_at_k").mean().alias("mean_judged_at_k"),
            pl.col("candidate_recall").mean().alias("mean_candidate_recall"),
            ((pl.col("ndcg").fill_null(0.0) * weight).sum() / weight.sum()).alias(
                "weighted_ndcg"))
        for column in (None, *slices)
    ]).sort(AGGREGATE_KEY)
    mine = aggregate(rows, queries, slices).select(reference.columns).sort(AGGREGATE_KEY)
    numbers = ["macro_ndcg", "weighted_ndcg", "mean_judged_at_k", "mean_candidate_recall"]
    assert mine.drop(numbers).equals(reference.drop(numbers))
    for column in numbers:
        assert mine[column].to_numpy() == pytest.approx(reference[column].to_numpy(), rel=1e-14,
                                                       nan_ok=True)
    report = aggregate_with_intervals(rows, queries, slices, n_bootstrap=50).select(
        mine.columns).sort(AGGREGATE_KEY)
    for column in numbers:  # bit for bit, not within a tolerance
        assert mine[column].to_numpy().tobytes() == report[column].to_numpy().tobytes()
