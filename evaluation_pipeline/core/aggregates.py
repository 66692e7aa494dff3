"""Aggregates per (ranker, cutoff, slice) over per-query rows (contract section 4).

Means are taken over the rows whose ``ndcg`` is not null (contract section 3, rule 5); the
status counts say why the others are apart.
"""

from __future__ import annotations

import polars as pl

from evaluation_pipeline.core.ndcg import STATUSES

ALL = "all"


def aggregate(
    per_query: pl.DataFrame,
    queries: pl.DataFrame | None = None,
    slices: tuple[str, ...] = (),
) -> pl.DataFrame:
    """One row per (ranker, cutoff, slice_column, slice_value), plus the pooled ``all`` rows.

    With a queries table, ``weighted_ndcg`` is the mean weighted by each query's ``weight``
    (queries without a row weigh 0); without one it is null.
    """
    frame = per_query
    if queries is not None:
        keep = ["query_id", "weight", *[s for s in slices if s != "weight"]]
        frame = frame.join(queries.select(keep), on="query_id", how="left")
    frame = frame.with_columns(pl.lit(ALL).alias("__all"))
    parts = []
    for column in ("__all", *slices):
        parts.append(
            _aggregate_by(frame, column, weighted=queries is not None).with_columns(
                pl.lit(ALL if column == "__all" else column).alias("slice_column")
            )
        )
    order = ["ranker", "cutoff", "slice_column", "slice_value"]
    out = pl.concat(parts, how="vertical_relaxed")
    out = out.select(*order, pl.exclude(order)).sort(order)
    # One evaluation is one (version, pool, spec): its lineage is the same on every row.
    lineage = [c for c in LINEAGE_COLUMNS if c in per_query.columns]
    if lineage and per_query.height:
        first = per_query.row(0, named=True)
        out = out.with_columns(pl.lit(first[c], dtype=pl.String).alias(c) for c in lineage)
    return out


LINEAGE_COLUMNS = (
    "judgment_version",
    "judgments_sha256",
    "candidate_pool",
    "pool_sha256",
    "spec_id",
    "project_version",
)


def _aggregate_by(frame: pl.DataFrame, column: str, *, weighted: bool) -> pl.DataFrame:
    has_number = pl.col("ndcg").is_not_null()
    aggs = [
        pl.len().alias("n_queries"),
        has_number.sum().cast(pl.Int64).alias("n_with_number"),
        pl.col("ndcg").mean().alias("macro_ndcg"),
        *[
            (pl.col("status") == status).sum().cast(pl.Int64).alias(f"n_{status}")
            for status in STATUSES
        ],
        pl.col("judged_at_k").mean().alias("mean_judged_at_k"),
        pl.col("candidate_recall").mean().alias("mean_candidate_recall"),
    ]
    if weighted:
        weight = pl.col("weight").fill_null(0.0)
        weight_with_number = pl.when(has_number).then(weight).otherwise(0.0)
        aggs.append(
            pl.when(weight_with_number.sum() > 0)
            .then((pl.col("ndcg").fill_null(0.0) * weight_with_number).sum() / weight_with_number.sum())
            .otherwise(None)
            .alias("weighted_ndcg")
        )
    else:
        aggs.append(pl.lit(None, dtype=pl.Float64).alias("weighted_ndcg"))
    return (
        frame.with_columns(pl.col(column).cast(pl.String).fill_null("(none)").alias("slice_value"))
        .group_by(["ranker", "cutoff", "slice_value"])
        .agg(aggs)
    )
