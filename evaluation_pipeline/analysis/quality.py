"""Facts about inputs and results that the pipeline records and checks.

Each function is one vectorized polars expression over a whole table; assets attach the results
as metadata and asset checks compare them with the configured thresholds.
"""

from __future__ import annotations

import hashlib

import polars as pl

from schemas.columns import UNKNOWN, spec_ndcg_rows


def grade_distribution(judgments: pl.DataFrame) -> dict[str, int]:
    """Rows per grade, with ``unknown`` for explicit unknown rows."""
    counts = (
        judgments.select(
            pl.when(pl.col("grade_status") == UNKNOWN)
            .then(pl.lit(UNKNOWN))
            .otherwise(pl.col("grade").cast(pl.String))
            .alias("grade")
        )
        .group_by("grade")
        .len()
        .sort("grade")
    )
    return dict(zip(counts["grade"].to_list(), counts["len"].to_list()))


def ranker_counts(pool: pl.DataFrame) -> pl.DataFrame:
    """Per ranker: queries answered and candidates returned."""
    return (
        pool.group_by("ranker")
        .agg(pl.col("query_id").n_unique().alias("n_queries"), pl.len().alias("n_candidates"))
        .sort("ranker")
    )


def queries_sha256(queries: pl.DataFrame) -> str:
    """SHA-256 of the queries table, rows sorted by query_id and columns by name."""
    return _table_sha256(queries, "query_id")


def documents_sha256(documents: pl.DataFrame) -> str:
    """SHA-256 of the documents table, rows sorted by doc_id and columns by name."""
    return _table_sha256(documents, "doc_id")


def _table_sha256(table: pl.DataFrame, key: str) -> str:
    """SHA-256 of a table's CSV text with its columns sorted by name and its rows by ``key``
    (unique), so that the file's row and column order do not count."""
    canonical = table.select(sorted(table.columns)).sort(key)
    return hashlib.sha256(canonical.write_csv().encode()).hexdigest()


def judged_at_k_by_ranker(per_query: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Mean judged@K per (ranker, cutoff) of the spec's nDCG@K rows that carry it (a lazy scan
    is streamed: results bigger than memory are read a slice at a time)."""
    return (
        spec_ndcg_rows(per_query.lazy()).group_by("ranker", "cutoff")
        .agg(pl.col("judged_at_k").mean().alias("mean_judged_at_k"))
        .sort("ranker", "cutoff").collect(engine="streaming")
    )


def incomplete_share(per_query: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Share of the spec's nDCG@K rows with status ``incomplete`` per (ranker, cutoff),
    streamed likewise."""
    return (
        spec_ndcg_rows(per_query.lazy()).group_by("ranker", "cutoff")
        .agg((pl.col("status") == "incomplete").mean().alias("incomplete_share"))
        .sort("ranker", "cutoff").collect(engine="streaming")
    )
