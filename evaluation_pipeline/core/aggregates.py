"""Aggregates per (ranker, cutoff, slice) over per-query rows (contract section 4).

Means are taken over the rows whose ``ndcg`` is not null (contract section 3, rule 5); the
status counts say why the others are apart.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from evaluation_pipeline.core.statistics import bootstrap_means, percentile_interval, rng_for
from schemas.columns import (
    AGGREGATE_KEY,
    INTERVAL_COLUMNS,
    LINEAGE_COLUMNS,
    STATUS_COUNT_COLUMNS,
    STATUSES,
)

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
    frame = _with_query_columns(per_query, queries, slices)
    parts = []
    for column in ("__all", *slices):
        parts.append(
            _aggregate_by(frame, column, weighted=queries is not None).with_columns(
                pl.lit(ALL if column == "__all" else column).alias("slice_column")
            )
        )
    order = list(AGGREGATE_KEY)
    out = pl.concat(parts, how="vertical_relaxed")
    out = out.select(*order, pl.exclude(order)).sort(order)
    # One evaluation is one (version, pool, spec): its lineage is the same on every row.
    lineage = [c for c in LINEAGE_COLUMNS if c in per_query.columns]
    if lineage and per_query.height:
        first = per_query.row(0, named=True)
        out = out.with_columns(pl.lit(first[c], dtype=pl.String).alias(c) for c in lineage)
    return out


def _aggregate_by(frame: pl.DataFrame, column: str, *, weighted: bool) -> pl.DataFrame:
    has_number = pl.col("ndcg").is_not_null()
    aggs = [
        pl.len().cast(pl.Int64).alias("n_queries"),
        has_number.sum().cast(pl.Int64).alias("n_with_number"),
        pl.col("ndcg").mean().alias("macro_ndcg"),
        *[
            (pl.col("status") == status).sum().cast(pl.Int64).alias(name)
            for status, name in zip(STATUSES, STATUS_COUNT_COLUMNS, strict=True)
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


def _with_query_columns(
    per_query: pl.DataFrame, queries: pl.DataFrame | None, slices: tuple[str, ...]
) -> pl.DataFrame:
    frame = per_query
    if queries is not None:
        keep = ["query_id", "weight", *[s for s in slices if s != "weight"]]
        frame = frame.join(queries.select(keep), on="query_id", how="left")
    return frame.with_columns(pl.lit(ALL).alias("__all"))



def aggregate_with_intervals(
    per_query: pl.DataFrame,
    queries: pl.DataFrame | None = None,
    slices: tuple[str, ...] = (),
    *,
    ci_level: float = 0.95,
    n_bootstrap: int = 2000,
    seed: int = 20261130,
    progress: Callable[[int, int], None] | None = None,
) -> pl.DataFrame:
    """:func:`aggregate` plus seeded bootstrap intervals for the macro and weighted means.

    Queries with a number (contract section 3, rule 5) are resampled with replacement; the
    generator of each row is keyed by (ranker, cutoff, slice_column, slice_value), see
    :mod:`evaluation_pipeline.core.statistics`. Fewer than two queries with a number give no
    interval (null): one value says nothing about its spread.
    """
    out = aggregate(per_query, queries, slices)
    frame = _with_query_columns(per_query, queries, slices).filter(pl.col("ndcg").is_not_null())
    weighted = queries is not None
    rows: list[dict] = []
    groups = []
    for column in ("__all", *slices):
        label = ALL if column == "__all" else column
        keyed = frame.with_columns(
            pl.col(column).cast(pl.String).fill_null("(none)").alias("slice_value")
        )
        for key, part in keyed.partition_by(
            ["ranker", "cutoff", "slice_value"], as_dict=True, maintain_order=True
        ).items():
            groups.append((key, label, part))
    for done, ((ranker, cutoff, value), label, part) in enumerate(groups, start=1):
        row = {"ranker": ranker, "cutoff": cutoff, "slice_column": label, "slice_value": value}
        row.update(dict.fromkeys(INTERVAL_COLUMNS))
        if part.height >= 2:
            values = part["ndcg"].to_numpy()
            weights = part["weight"].fill_null(0.0).to_numpy() if weighted else None
            rng = rng_for(seed, f"{ranker}|{cutoff}|{label}|{value}")
            macro, weighted_means = bootstrap_means(values, weights, n_bootstrap, rng)
            row["macro_ndcg_low"], row["macro_ndcg_high"] = percentile_interval(macro, ci_level)
            if weighted_means is not None:
                low, high = percentile_interval(weighted_means, ci_level)
                row["weighted_ndcg_low"], row["weighted_ndcg_high"] = low, high
        rows.append(row)
        if progress is not None:
            progress(done, len(groups))
    schema = {
        "ranker": pl.String, "cutoff": pl.Int64, "slice_column": pl.String,
        "slice_value": pl.String, **dict.fromkeys(INTERVAL_COLUMNS, pl.Float64),
    }
    intervals = pl.DataFrame(rows, schema=schema)
    keys = list(AGGREGATE_KEY)
    out = out.join(intervals, on=keys, how="left", maintain_order="left")
    # Intervals sit beside the means they belong to.
    order = [
        *keys, "n_queries", "n_with_number", "macro_ndcg", "macro_ndcg_low", "macro_ndcg_high",
        "weighted_ndcg", "weighted_ndcg_low", "weighted_ndcg_high",
    ]
    return out.select(*order, pl.exclude(order))
