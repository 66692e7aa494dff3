"""The evaluation history: rows from an evaluation's aggregates, upserts without duplicates."""

from __future__ import annotations

import polars as pl
import pytest

from evaluation_pipeline.aggregation.aggregate_table import aggregate_with_intervals
from evaluation_pipeline.evaluation import evaluate
from evaluation_pipeline.io.readers import read_judgments, read_pool, read_queries
from evaluation_pipeline.nightly import history
from evaluation_pipeline.nightly.verdicts import compare_nights, nightly_section
from evaluation_pipeline.spec import EvaluationSpec
from schemas.columns import HISTORY_COLUMNS, HISTORY_DTYPES, STATUSES
from tests.support.paths import EXAMPLES

LANDING = EXAMPLES / "landing"
POOLS = ("pool-2026-11-28", "pool-2026-11-29")
VERSIONS = ("maint-v1", "maint-v2")
SPEC = EvaluationSpec(cutoffs=(5, 10))
SLICES = ("equipment_class",)


@pytest.fixture(scope="module")
def evaluations() -> dict[tuple[str, str], tuple[pl.DataFrame, pl.DataFrame]]:
    """(pool, version) -> (per-query rows, aggregates) of the bundled example."""
    queries = read_queries(EXAMPLES / "queries.csv")
    out = {}
    for version in VERSIONS:
        grades = read_judgments(LANDING / "judgments" / f"{version}.csv", version=version)
        for pool in POOLS:
            per_query, _ = evaluate(grades, read_pool(LANDING / "pools" / pool, pool=pool), SPEC)
            aggregates = aggregate_with_intervals(per_query, queries, SLICES, n_bootstrap=200)
            out[(pool, version)] = per_query, aggregates
    return out


def rows_of(evaluations, pool, version, evaluated_at="2026-12-01T02:00:00+00:00",
            nightly=None, headline=True):
    return history.history_rows(
        evaluations[(pool, version)][1], ready_at="2026-11-28T01:00:00+00:00",
        evaluated_at=evaluated_at, headline=headline, nightly=nightly,
    )


def test_rows_carry_every_column_with_the_overall_row_unsliced(evaluations):
    aggregates = evaluations[(POOLS[0], VERSIONS[0])][1]
    rows = rows_of(evaluations, POOLS[0], VERSIONS[0])
    assert rows.columns == list(HISTORY_COLUMNS)
    assert dict(rows.schema) == HISTORY_DTYPES
    assert rows.height == aggregates.height
    overall = rows.filter(pl.col("slice").is_null())
    assert overall["slice_value"].null_count() == overall.height
    assert overall.height == aggregates.filter(pl.col("slice_column") == "all").height
    assert set(rows["slice"].drop_nulls()) == {"equipment_class"}

    # The numbers are the aggregates' numbers, under the history's names.
    source = aggregates.filter(pl.col("slice_column") == "all").sort("ranker", "cutoff")
    overall = overall.sort("ranker", "cutoff")
    assert overall["ndcg"].to_list() == source["macro_ndcg"].to_list()
    assert overall["ndcg_low"].to_list() == source["macro_ndcg_low"].to_list()
    assert overall["weighted_ndcg_high"].to_list() == source["weighted_ndcg_high"].to_list()
    for status in STATUSES:
        assert overall[f"n_{status}"].to_list() == source[f"n_{status}"].to_list()
    assert overall["mean_candidate_recall"].to_list() == source["mean_candidate_recall"].to_list()
    # The bounds of each mean over every grading of the holes.
    assert overall["n_bounded"].to_list() == source["n_bounded"].to_list()
    assert overall["ndcg_min"].to_list() == source["macro_ndcg_min"].to_list()
    assert overall["ndcg_max"].to_list() == source["macro_ndcg_max"].to_list()
    for column in ("candidate_pool", "judgment_version", "spec_id", "judgments_sha256",
                   "pool_sha256", "project_version"):
        assert rows[column].unique().to_list() == source[column].unique().to_list()
    # No comparison on a first night.
    assert rows["verdict"].null_count() == rows.height
    assert rows["headline"].all()
    history.check_unique(rows)


def test_nightly_verdicts_and_attribution_go_on_the_overall_rows(evaluations):
    previous = evaluations[(POOLS[0], VERSIONS[1])][0]
    current = evaluations[(POOLS[1], VERSIONS[1])][0]
    comparisons = compare_nights(previous, current, n_bootstrap=200)
    attribution = [{"ranker": "dense-v2", "cutoff": 10, "previous_judgment_version": "maint-v1",
                    "total_change": -0.3, "from_judgments": -0.1, "from_pool": -0.2}]
    section = nightly_section(POOLS[0], VERSIONS[1], comparisons, attribution)
    rows = rows_of(evaluations, POOLS[1], VERSIONS[1], nightly=section)
    overall = rows.filter(pl.col("slice").is_null())
    sliced = rows.filter(pl.col("slice").is_not_null())
    assert overall["previous_pool"].unique().to_list() == [POOLS[0]]
    assert sliced["verdict"].null_count() == sliced.height
    for c in comparisons:
        row = overall.filter((pl.col("ranker") == c["ranker"]) & (pl.col("cutoff") == c["cutoff"]))
        assert row["verdict"].item() == c["verdict"]
        assert row["mean_difference"].item() == c["mean_difference"]
        assert row["p_value_holm"].item() == c["p_value_holm"]
        # The change's range over every grading of the holes is kept beside the verdict.
        assert row.select("difference_min", "difference_max", "holds_for_every_grading").row(0) == (
            c["difference_min"], c["difference_max"], c["holds_for_every_grading"])
    dense = overall.filter((pl.col("ranker") == "dense-v2") & (pl.col("cutoff") == 10))
    assert dense.select("from_judgments", "from_pool", "previous_judgment_version").row(0) == (
        -0.1, -0.2, "maint-v1")
    assert overall.filter(pl.col("ranker") == "bm25-v3")["from_pool"].null_count() == 2


def test_upsert_replaces_a_rerun_and_keeps_its_first_evaluation_time(evaluations):
    first = rows_of(evaluations, POOLS[0], VERSIONS[0], "2026-12-01T02:00:00+00:00")
    other = rows_of(evaluations, POOLS[0], VERSIONS[1], "2026-12-01T03:00:00+00:00",
                    headline=False)
    table = history.upsert(None, first)
    table = history.upsert(table, other)
    assert table.height == first.height + other.height

    rerun = rows_of(evaluations, POOLS[0], VERSIONS[0], "2026-12-05T09:00:00+00:00")
    again = history.upsert(table, rerun)
    assert again.height == table.height
    history.check_unique(again)
    v1 = again.filter(pl.col("judgment_version") == VERSIONS[0])
    assert v1["evaluated_at"].unique().to_list()[0].isoformat() == "2026-12-05T09:00:00+00:00"
    assert v1["first_evaluated_at"].unique().to_list()[0].isoformat() == (
        "2026-12-01T02:00:00+00:00")
    assert history.first_evaluated(again, POOLS[0]) == "2026-12-01T02:00:00+00:00"
    assert history.first_evaluated(again, POOLS[1]) is None
    # The other evaluation is untouched.
    assert again.filter(pl.col("judgment_version") == VERSIONS[1]).equals(
        table.filter(pl.col("judgment_version") == VERSIONS[1]))
    # Round trip through parquet keeps the table as it is.
    assert history.upsert(again, rerun).equals(again)


def test_a_duplicate_key_is_refused(evaluations):
    rows = rows_of(evaluations, POOLS[0], VERSIONS[0])
    with pytest.raises(ValueError, match="repeated keys"):
        history.check_unique(pl.concat([rows, rows.head(1)]))


def test_reading_back_means_headlines_and_ready_times(evaluations):
    table = history.upsert(None, rows_of(evaluations, POOLS[0], VERSIONS[0]))
    table = history.upsert(table, rows_of(evaluations, POOLS[0], VERSIONS[1], headline=False))
    aggregates = evaluations[(POOLS[0], VERSIONS[1])][1]
    means = history.overall_means(table, POOLS[0], VERSIONS[1], SPEC.spec_id)
    assert means == history.aggregate_means(aggregates)
    assert len(means) == 6
    assert history.overall_means(table, POOLS[1], VERSIONS[1], SPEC.spec_id) == {}
    assert history.headline_of(table, POOLS[0], SPEC.spec_id) == VERSIONS[0]
    assert history.ready_times(table) == {POOLS[0]: "2026-11-28T01:00:00+00:00"}
    trend = history.headline_trend(table, SPEC.spec_id)
    assert trend["judgment_version"].unique().to_list() == [VERSIONS[0]]
    assert trend["slice"].null_count() == trend.height
    metadata = history.numeric_metadata(aggregates)
    assert metadata["ndcg@10/hybrid-v1"] == means[("hybrid-v1", 10)]
    assert sorted(metadata) == sorted(f"ndcg@{k}/{r}" for r, k in means)
