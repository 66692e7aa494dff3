"""Bounded-memory ingest: the published rows and content hashes equal the in-memory path's.

The pool is several shuffled ranker files (one without a ranker column, one CSV read by its
reader), with ids that are prefixes of one another, multi-byte UTF-8 and a -0.0 score, under a
small budget. A larger pool, each ranker's rows more than DuckDB's share of its budget, makes
the sort spill: the same budget with no disk to spill to fails.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.ingest.external_sort import (
    SortInput,
    parse_memory_limit,
    sort_parquet,
)
from evaluation_pipeline.ingest.publish import publish_judgments, publish_pool
from evaluation_pipeline.ingest.verify import (
    candidate_set_disagreements,
    count_candidate_set_disagreements,
)
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.io.readers import read_judgments, read_pool
from evaluation_pipeline.metric.hashing import judgments_sha256, pool_sha256
from schemas.errors import EvaluationError, InputError
from schemas.rules.judgment_rules import JUDGMENTS, RATED_JUDGMENTS
from schemas.rules.pool_rules import CANDIDATE_POOL
from tests.support.pools import BUDGET, POOL_KEY, QUERIES, candidates, shuffled
from tests.support.refusals import (
    assert_names,
    has_name,
    refusal_fields,
    violation,
    violations_of,
)


def test_pool_of_unsorted_files_equals_the_in_memory_path(pool_folder, tmp_path):
    target = tmp_path / "published" / "pool.parquet"
    lines = []
    budget = dataclasses.replace(BUDGET, spill_dir=tmp_path / "spill")
    published = publish_pool(pool_folder, target, budget=budget, log=lines.append)
    assert [line.split(" ")[0] for line in lines] == ["checked", "sorted", "compared"]
    assert "(3 rankers sorted apart)" in lines[1]  # each file holds one ranker
    assert list((tmp_path / "spill").iterdir()) == []  # the spill is cleaned up
    expected = read_pool(pool_folder).sort(POOL_KEY)
    assert pl.read_parquet(target).equals(expected)
    assert published.sha256 == pool_sha256(expected)
    assert published.rows == expected.height and published.name == "nightly"
    counts = expected.group_by("ranker").agg(pl.col("query_id").n_unique().alias("n_queries"),
                                             pl.len().alias("n_candidates")).sort("ranker")
    assert published.rankers == counts.to_dicts()
    # The CSV ranker misses all queries but 300, and one candidate of those.
    assert count_candidate_set_disagreements(target, budget=BUDGET) == QUERIES - 300 + 1
    # Counted while publishing, from the blocks the hash walks: the same queries as a pass
    # over the published file finds.
    assert published.candidate_sets == candidate_set_disagreements(target, budget=BUDGET)
    assert published.candidate_sets[0] == QUERIES - 300 + 1


def test_a_file_of_several_rankers_sorts_the_pool_whole(pool_folder, tmp_path):
    """Rankers split over files unevenly (one file holds two, another a part of one) cannot be
    sorted ranker by ranker: one sort of everything, with the same rows and hash."""
    first = pl.read_parquet(pool_folder / "first.parquet")
    dense = pl.read_parquet(pool_folder / "dense.parquet").with_columns(
        pl.lit("dense").alias("ranker"))
    mixed = pl.concat([first.head(70_000), dense.select(first.columns)])
    (pool_folder / "dense.parquet").unlink()
    mixed.write_parquet(pool_folder / "first.parquet", row_group_size=20_000)
    first.slice(70_000).write_parquet(pool_folder / "rest.parquet")
    lines = []
    # One sort of all the rows needs more than BUDGET lets DuckDB have even with spilling.
    published = publish_pool(pool_folder, tmp_path / "pool.parquet",
                             budget=Budget.of("160MB"), log=lines.append)
    assert "sorted apart" not in lines[1]
    expected = read_pool(pool_folder).sort(POOL_KEY)
    assert pl.read_parquet(tmp_path / "pool.parquet").equals(expected)
    assert published.sha256 == pool_sha256(expected)


def test_sort_parquet_gives_files_their_missing_columns(pool_folder, tmp_path):
    files = [SortInput(pool_folder / "first.parquet"),
             SortInput(pool_folder / "dense.parquet", {"ranker": "dense"})]
    expected = pl.concat([pl.read_parquet(pool_folder / "first.parquet"),
                          pl.read_parquet(pool_folder / "dense.parquet")
                          .with_columns(pl.lit("dense").alias("ranker"))]).sort(POOL_KEY)
    out = sort_parquet(files, tmp_path / "sorted.parquet", POOL_KEY, budget=BUDGET)
    assert pl.read_parquet(out).equals(expected)


def test_judgments_in_any_order_equal_the_in_memory_path(tmp_path):
    rng = np.random.default_rng(5)
    base = candidates(rng).sample(fraction=0.3, seed=1)
    unknown = rng.random(base.height) < 0.02
    frame = base.with_columns(
        pl.Series("grade", rng.integers(0, 4, base.height)).set(pl.Series(unknown), None),
        pl.Series("grade_status", np.where(unknown, "unknown", "graded")),
        pl.lit("assessor-1").alias("judge"),
    )
    source = tmp_path / "v7.parquet"
    shuffled(frame, rng).write_parquet(source, row_group_size=10_000)
    published = publish_judgments(source, tmp_path / "out.parquet", budget=BUDGET)
    expected = read_judgments(source).sort("query_id", "doc_id")
    assert pl.read_parquet(published.path).equals(expected)
    assert published.sha256 == judgments_sha256(expected) and published.name == "v7"
    grades = expected.select(pl.when(pl.col("grade_status") == "unknown").then(pl.lit("unknown"))
                             .otherwise(pl.col("grade").cast(pl.String)))
    assert published.grade_distribution == dict(sorted(grades.to_series().value_counts()
                                                       .iter_rows()))


def _refusal(call) -> InputError:
    with pytest.raises(InputError) as caught:
        call()
    return caught.value


def test_a_key_repeated_across_files_is_refused_naming_both(pool_folder, tmp_path):
    first = pl.read_parquet(pool_folder / "first.parquet")
    first.head(3).write_parquet(pool_folder / "late.parquet")  # ranker bm25 again
    target = tmp_path / "pool.parquet"
    error = _refusal(lambda: publish_pool(pool_folder, target, budget=BUDGET))
    [broken] = violations_of(error)
    violation(error, "ranker, query_id, doc_id", CANDIDATE_POOL.key, source=pool_folder)
    # The copies are in different files: the rule's detail names each file with its row, the
    # same row in both (late.parquet is first.parquet's first rows).
    rows = [row for row in (1, 2, 3) if has_name(broken.rule, f"late.parquet row {row}")]
    assert rows, broken.rule
    assert_names(broken.rule, *(f"first.parquet row {row}" for row in rows))
    assert not target.exists() and not any(p.name.startswith(".") for p in tmp_path.iterdir())


def test_a_key_repeated_in_one_file_is_worded_as_the_in_memory_path(pool_folder, tmp_path):
    dense = pl.read_parquet(pool_folder / "dense.parquet")
    pl.concat([dense, dense.slice(100, 2)]).write_parquet(pool_folder / "dense.parquet")
    error = _refusal(lambda: publish_pool(pool_folder, tmp_path / "pool.parquet",
                                          budget=BUDGET))
    assert refusal_fields(error) == refusal_fields(_refusal(lambda: read_pool(pool_folder)))
    violation(error, "ranker, query_id, doc_id", CANDIDATE_POOL.key,
              source=pool_folder / "dense.parquet",
              rows=[101, 102, dense.height + 1, dense.height + 2])


@pytest.mark.parametrize("column, value, rule", [
    ("grade", -1, "grade_at_least_zero"),
    ("grade_status", "maybe", "grade_status_one_of"),
])
def test_a_bad_grade_is_worded_as_the_in_memory_path(tmp_path, column, value, rule):
    rng = np.random.default_rng(8)
    frame = candidates(rng).head(50_000).with_columns(pl.lit(2, dtype=pl.Int64).alias("grade"),
                                                      pl.lit("graded").alias("grade_status"))
    frame = shuffled(frame, rng).with_columns(
        pl.when(pl.int_range(pl.len()) == 41_234).then(pl.lit(value)).otherwise(pl.col(column))
        .alias(column))
    source = tmp_path / "v1.parquet"
    frame.write_parquet(source, row_group_size=8_000)
    error = _refusal(lambda: publish_judgments(source, tmp_path / "out.parquet",
                                               budget=BUDGET))
    assert refusal_fields(error) == refusal_fields(_refusal(lambda: read_judgments(source)))
    assert [v.column for v in error.violations] == [column]
    violation(error, column, JUDGMENTS.rule(rule), source=source, rows=[41_235], values=[value])


def test_a_nan_score_is_worded_as_the_in_memory_path(pool_folder, tmp_path):
    dense = pl.read_parquet(pool_folder / "dense.parquet")
    dense.with_columns(pl.when(pl.int_range(pl.len()) == 7).then(float("nan"))
                       .otherwise(pl.col("score")).alias("score")).write_parquet(
        pool_folder / "dense.parquet")
    error = _refusal(lambda: publish_pool(pool_folder, tmp_path / "pool.parquet",
                                          budget=BUDGET))
    assert refusal_fields(error) == refusal_fields(_refusal(lambda: read_pool(pool_folder)))
    violation(error, "score", CANDIDATE_POOL.rule("score_is_finite"),
              source=pool_folder / "dense.parquet", rows=[8])


@pytest.mark.parametrize("text, expected", [
    ("2GB", 2_000_000_000), ("512MB", 512_000_000), ("1.5 GB", 1_500_000_000),
    ("4GiB", 4 * 1024**3), ("300000000", 300_000_000), (64_000_000, 64_000_000),
])
def test_budgets_as_people_write_them(text, expected):
    assert parse_memory_limit(text) == expected


def test_the_budget_comes_from_the_environment_then_the_default(monkeypatch):
    monkeypatch.delenv(settings.MEMORY_LIMIT.name, raising=False)
    assert parse_memory_limit(None) == 2_000_000_000
    monkeypatch.setenv(settings.MEMORY_LIMIT.name, "750MB")
    assert parse_memory_limit(None) == parse_memory_limit("") == 750_000_000


@pytest.mark.parametrize("text", ["two gigs", "2XB", "-1GB", "1MB"])
def test_a_budget_that_is_not_one_is_refused(text):
    with pytest.raises(EvaluationError) as refused:
        parse_memory_limit(text)
    assert_names(refused, "memory limit", repr(text))  # the setting, and its value refused


@pytest.mark.parametrize("limit_mb, used_mb, expected_mb", [
    (2000, 100, 500),   # a quarter of the default budget, whatever the process holds
    (2000, 1200, 500),
    (8000, 900, 2000),
    (64, 100, 32),      # a budget below what the process holds bounds DuckDB alone: half
])
def test_duckdb_gets_a_quarter_of_the_budget(monkeypatch, limit_mb, used_mb, expected_mb):
    from evaluation_pipeline.ingest import external_sort

    monkeypatch.setattr(external_sort, "_resident_bytes", lambda: used_mb * 1000**2)
    assert external_sort.duckdb_share(limit_mb * 1000**2) == expected_mb * 1000**2


def test_a_large_sort_gets_at_least_what_it_needs(monkeypatch):
    """A sort of 333M rows failed at 483 MB (a quarter of 2 GB): a large sort's floor is what
    its merge needs, which grows as the square root of its rows, up to half the budget."""
    from evaluation_pipeline.ingest import external_sort

    monkeypatch.setattr(external_sort, "_resident_bytes", lambda: 40 * 1000**2)

    assert external_sort.duckdb_share(2 * 1000**3, 10_000_000) == 500 * 1000**2
    large = external_sort.duckdb_share(2 * 1000**3, 333_000_000)
    assert large == external_sort.sort_floor(333_000_000) and 900e6 < large < 1000e6
    assert external_sort.duckdb_share(2 * 1000**3, 10**10) == 1000 * 1000**2  # at most half
    # The tests' budget of 64 MB: a sort of 150k rows needs more than a quarter, gets half.
    assert external_sort.duckdb_share(64 * 1000**2, 150_000) == 32 * 1000**2


def rated_version(rng: np.random.Generator, n_queries: int = 30) -> pl.DataFrame:
    """Three raters over shuffled documents, some ratings unknown, some documents unrated."""
    rows = []
    for q in range(n_queries):
        for d in range(int(rng.integers(1, 8))):
            for rater in ("h1", "h2", "llm"):
                if rng.random() < 0.7:
                    grade = None if rng.random() < 0.1 else int(rng.integers(0, 4))
                    rows.append((f"q{q}", f"d{d}", rater, "llm" if rater == "llm" else "human",
                                 grade, "unknown" if grade is None else "graded"))
    frame = pl.DataFrame(rows, schema={"query_id": pl.String, "doc_id": pl.String,
                                       "rater": pl.String, "rater_kind": pl.String,
                                       "grade": pl.Int64, "grade_status": pl.String},
                         orient="row")
    return frame.sample(fraction=1.0, shuffle=True, seed=7).with_columns(
        judgment_version=pl.lit("rated-v1"))


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_a_version_with_raters_publishes_every_rating_under_its_hash(tmp_path, suffix):
    frame = rated_version(np.random.default_rng(3))
    source = tmp_path / f"rated-v1.{suffix}"
    getattr(frame, f"write_{suffix}")(source)
    published = publish_judgments(source, tmp_path / "out.parquet",
                                  budget=dataclasses.replace(BUDGET, spill_dir=tmp_path))
    written = pl.read_parquet(tmp_path / "out.parquet")
    assert published.rows == frame.height == written.height
    assert published.sha256 == judgments_sha256(frame) == judgments_sha256(written)
    assert set(written.columns) >= {"rater", "rater_kind"}
    key = ["query_id", "doc_id", "rater"]
    assert written.sort(key).select(frame.columns).equals(frame.sort(key))


def test_a_rating_repeated_under_its_rater_is_refused_on_publishing(tmp_path):
    frame = rated_version(np.random.default_rng(4))
    source = tmp_path / "rated-v1.parquet"
    pl.concat([frame, frame.head(1)]).write_parquet(source)
    with pytest.raises(InputError) as refused:
        publish_judgments(source, tmp_path / "out.parquet",
                          budget=dataclasses.replace(BUDGET, spill_dir=tmp_path))
    violation(refused, "query_id, doc_id, rater", RATED_JUDGMENTS.key, source=source,
              rows=[1, frame.height + 1])
    assert not (tmp_path / "out.parquet").exists()


def test_a_rater_with_two_kinds_in_different_batches_is_refused(tmp_path, monkeypatch):
    from evaluation_pipeline.ingest import inputs, publish

    frame = rated_version(np.random.default_rng(5)).sort("query_id", "doc_id")
    last = frame["query_id"].max()
    frame = frame.with_columns(pl.when((pl.col("rater") == "h1") & (pl.col("query_id") == last))
                               .then(pl.lit("llm")).otherwise("rater_kind").alias("rater_kind"))
    frame.write_parquet(tmp_path / "rated-v1.parquet")
    for module in (inputs, publish):  # batches of a few rows: each alone is consistent
        monkeypatch.setattr(module, "BATCH_ROWS", 7)
    with pytest.raises(InputError) as refused:
        publish_judgments(tmp_path / "rated-v1.parquet", tmp_path / "out.parquet",
                          budget=dataclasses.replace(BUDGET, spill_dir=tmp_path))
    # The rows are in different batches: the rule's detail names the rater and both kinds.
    broken = violation(refused, "rater_kind")
    assert_names(broken.rule, "'h1'", "'human'", "'llm'")
    assert not (tmp_path / "out.parquet").exists()
