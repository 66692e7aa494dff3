"""Aggregates per (ranker, cutoff, slice) over per-query rows (contract section 4).

Means are taken over the rows whose ``ndcg`` is not null (contract section 3, rule 5); the
status counts say why the others are apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import polars as pl

from evaluation_pipeline.core.intervals import ALL, NO_VALUE
from schemas.columns import (
    AGGREGATE_KEY,
    LINEAGE_COLUMNS,
    STATUS_COUNT_COLUMNS,
    STATUSES,
)


def aggregate(
    per_query: pl.DataFrame,
    queries: pl.DataFrame | None = None,
    slices: tuple[str, ...] = (),
) -> pl.DataFrame:
    """One row per (ranker, cutoff, slice_column, slice_value), plus the pooled ``all`` rows.

    With a queries table, ``weighted_ndcg`` is the mean weighted by each query's ``weight``
    (queries without a row weigh 0); without one it is null.
    """
    table = _query_columns(queries, slices)
    parts = []
    for rows in _results(per_query):
        frame = _with_query_columns(rows, table)
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
        frame.with_columns(pl.col(column).cast(pl.String).fill_null(NO_VALUE).alias("slice_value"))
        .group_by(["ranker", "cutoff", "slice_value"])
        .agg(aggs)
    )


AGGREGATED_COLUMNS = ("ranker", "query_id", "cutoff", "ndcg", "status", "judged_at_k",
                      "candidate_recall")


def _results(per_query: pl.DataFrame) -> Iterator[pl.DataFrame]:
    """The rows of one (ranker, cutoff) at a time, only the columns the aggregates read (the
    lineage columns alone are most of a row): a group never spans two results, and with the
    query columns joined, the rows of all results at once took a gigabyte at a million
    queries. Each group's rows keep their order, so its means are the same to the bit."""
    frame = per_query.lazy().select(AGGREGATED_COLUMNS)
    results = frame.select("ranker", "cutoff").unique().sort("ranker", "cutoff").collect()
    if results.height == 0:
        yield frame.collect()
    for ranker, cutoff in results.iter_rows():
        yield frame.filter((pl.col("ranker") == ranker) & (pl.col("cutoff") == cutoff)).collect()


def _query_columns(queries: pl.DataFrame | None, slices: tuple[str, ...]) -> pl.DataFrame | None:
    """The weight and slice columns of the queries table, slice values as categories: joined
    onto every row, a code each rather than a string."""
    if queries is None:
        return None
    return queries.select("query_id", "weight", *[
        pl.col(s).cast(pl.String).cast(pl.Categorical) for s in slices if s != "weight"])


def _with_query_columns(rows: pl.DataFrame, table: pl.DataFrame | None) -> pl.DataFrame:
    if table is not None:
        rows = rows.join(table, on="query_id", how="left")
    return rows.with_columns(pl.lit(ALL).alias("__all"))


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
    """:func:`aggregate`'s rows plus seeded bootstrap intervals for the macro and weighted
    means, all from sums over chunks of queries (``core.report_numbers``: the same numbers on
    one machine or a cluster).

    Queries with a number (contract section 3, rule 5) are resampled by Poisson bootstrap
    counts drawn once per (query, resample) and shared by every row (``core.resampling``).
    Fewer than two queries with a number give no interval (null): one value says nothing
    about its spread. ``progress`` is called with (chunks done, chunks in all).
    """
    from evaluation_pipeline.core import report_numbers as rn

    plan = rn.plan_of(rn.results_of(per_query), queries=queries, slices=slices,
                      n_bootstrap=n_bootstrap, seed=seed,
                      n_queries=rn.distinct_queries(per_query))
    numbers = rn.Numbers(plan, rn.local_partial(per_query, None, queries, plan, progress))
    return numbers.aggregates(ci_level, lineage_of(per_query))


def lineage_of(per_query: pl.DataFrame) -> dict[str, str]:
    """The lineage columns of per-query rows (one evaluation: the same on every row)."""
    lineage = [c for c in LINEAGE_COLUMNS if c in per_query.columns]
    if not lineage or per_query.height == 0:
        return {}
    first = per_query.row(0, named=True)
    return {c: first[c] for c in lineage}
