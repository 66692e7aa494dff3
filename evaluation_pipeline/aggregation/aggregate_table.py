"""Aggregates per (ranker, measure, slice) over per-query rows (contract section 4).

Means are taken over the rows whose ``value`` is not null (contract section 3, rule 5); the
status counts say why the others are apart.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from schemas.columns import (
    AGGREGATE_KEY,
    LINEAGE_COLUMNS,
    NDCG_AGGREGATE_COLUMNS,
    STATUS_COUNT_COLUMNS,
)


def aggregate(
    per_query: pl.DataFrame,
    queries: pl.DataFrame | None = None,
    slices: tuple[str, ...] = (),
) -> pl.DataFrame:
    """One row per (ranker, measure, slice_column, slice_value), plus the pooled ``all`` rows:
    :func:`aggregate_with_intervals`' numbers without its intervals (the same sums, so the
    same bits; summary.json and report.json agree to the last digit).

    With a queries table, ``weighted_value`` is the mean weighted by each query's ``weight``
    (queries without a row weigh 0); without one it is null.
    """
    out = aggregate_with_intervals(per_query, queries, slices, n_bootstrap=0)
    numbers = ("macro_value", *STATUS_COUNT_COLUMNS, "mean_judged_at_k", "mean_candidate_recall",
               "weighted_value", "n_bounded", "macro_value_min", "macro_value_max")
    return out.select(*AGGREGATE_KEY, "n_queries", "n_with_number", *numbers,
                      *[ndcg for ndcg, value in NDCG_AGGREGATE_COLUMNS.items()
                        if value in numbers],
                      *[c for c in LINEAGE_COLUMNS if c in out.columns])


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
    means, all from sums over chunks of queries (``aggregation.sums``: the same numbers on
    one machine or a cluster).

    Queries with a number (contract section 3, rule 5) are resampled by Poisson bootstrap
    counts drawn once per (query, resample) and shared by every row (``stats.resampling``).
    Fewer than two queries with a number give no interval (null): one value says nothing
    about its spread. ``progress`` is called with (chunks done, chunks in all).
    """
    from evaluation_pipeline.aggregation import sums as rn

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
