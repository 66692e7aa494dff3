"""What changed between two evaluations.

Two judgment versions over the same pool: documents added, removed and regraded, queries whose
status changed, and the NDCG change per ranker, which with the pool fixed is due to the new
grades alone. Two pools under the same version: candidates added and removed per ranker and
the change in candidate recall.
"""

from __future__ import annotations

import polars as pl

from evaluation_pipeline.aggregation.comparison import paired_frame
from schemas.columns import JUDGMENT_KEY, NDCG_KEY, POOL_KEY, spec_ndcg_rows
from schemas.errors import EvaluationError

KEY = list(JUDGMENT_KEY)


class DiffError(EvaluationError):
    """Two evaluations that a diff cannot set side by side: a judgment-version diff needs one
    candidate pool, a pool diff one judgment version."""


def judgment_changes(old: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """One row per (query_id, doc_id) that differs: change is added, removed or regraded.

    A change between a grade and an explicit unknown is a regrade too.
    """
    columns = [*KEY, "grade", pl.col("grade_status").cast(pl.String)]
    joined = old.select(columns).join(
        new.select(columns), on=KEY, how="full", coalesce=True, suffix="_new"
    ).rename({"grade": "grade_old", "grade_status": "grade_status_old"})
    in_old = pl.col("grade_status_old").is_not_null()
    in_new = pl.col("grade_status_new").is_not_null()
    regraded = (pl.col("grade_status_old") != pl.col("grade_status_new")) | (
        pl.col("grade_old").ne_missing(pl.col("grade_new"))
    )
    return (
        joined.with_columns(
            pl.when(~in_old).then(pl.lit("added"))
            .when(~in_new).then(pl.lit("removed"))
            .when(regraded).then(pl.lit("regraded"))
            .otherwise(None)
            .alias("change")
        )
        .filter(pl.col("change").is_not_null())
        .select(*KEY, "change", "grade_old", "grade_status_old", "grade_new", "grade_status_new")
        .sort(KEY)
    )


def status_changes(old: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """Per-query rows (ranker, query_id, cutoff) of the spec's nDCG@K whose status differs, or
    that exist on one side."""
    keys = list(NDCG_KEY)
    old, new = spec_ndcg_rows(old), spec_ndcg_rows(new)
    return (
        old.select(*keys, pl.col("status").alias("status_old"), pl.col("ndcg").alias("ndcg_old"))
        .join(new.select(*keys, pl.col("status").alias("status_new"),
                         pl.col("ndcg").alias("ndcg_new")),
              on=keys, how="full", coalesce=True)
        .filter(pl.col("status_old").ne_missing(pl.col("status_new")))
        .sort(keys)
    )


def ndcg_change(old: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """Per (ranker, cutoff): macro means old and new, each over its own queries with a number
    (``n_old``, ``n_new``), and over the queries with a number in both (``n_paired``): the
    paired means and their change. Where the two sides number different queries, the paired
    means stand beside the others, so a change and the means it is read against never
    disagree in sign."""
    rows = []
    for (ranker, cutoff), before in old.partition_by(["ranker", "cutoff"], as_dict=True).items():
        after = new.filter((pl.col("ranker") == ranker) & (pl.col("cutoff") == cutoff))
        paired = paired_frame(before, after)
        rows.append({
            "ranker": ranker,
            "cutoff": cutoff,
            "macro_ndcg_old": before["ndcg"].mean(),
            "macro_ndcg_new": after["ndcg"].mean(),
            "n_old": before["ndcg"].count(),
            "n_new": after["ndcg"].count(),
            "n_paired": paired.height,
            "paired_ndcg_old": paired["ndcg_first"].mean(),
            "paired_ndcg_new": paired["ndcg_second"].mean(),
            "paired_mean_change": paired["difference"].mean(),
            "n_status_changed": status_changes(before, after).height,
        })
    schema = {"ranker": pl.String, "cutoff": pl.Int64, "macro_ndcg_old": pl.Float64,
              "macro_ndcg_new": pl.Float64, "n_old": pl.Int64, "n_new": pl.Int64,
              "n_paired": pl.Int64, "paired_ndcg_old": pl.Float64,
              "paired_ndcg_new": pl.Float64, "paired_mean_change": pl.Float64,
              "n_status_changed": pl.Int64}
    return pl.DataFrame(rows, schema=schema).sort("ranker", "cutoff")


def judgment_version_diff(
    old_judgments: pl.DataFrame,
    new_judgments: pl.DataFrame,
    old_per_query: pl.DataFrame,
    new_per_query: pl.DataFrame,
) -> dict:
    """Everything that changed between two judgment versions scored over the same pool."""
    pools = (set(old_per_query["candidate_pool"].unique())
             | set(new_per_query["candidate_pool"].unique()))
    if len(pools) != 1:
        raise DiffError(
            f"a judgment-version diff needs one candidate pool, got {sorted(pools)}")
    changes = judgment_changes(old_judgments, new_judgments)
    counts = changes["change"].value_counts()
    count = dict(zip(counts["change"].to_list(), counts["count"].to_list(), strict=True))
    return {
        "candidate_pool": pools.pop(),
        "judgment_version_old": old_per_query["judgment_version"][0],
        "judgment_version_new": new_per_query["judgment_version"][0],
        "n_added": count.get("added", 0),
        "n_removed": count.get("removed", 0),
        "n_regraded": count.get("regraded", 0),
        "judgment_changes": changes,
        "status_changes": status_changes(old_per_query, new_per_query),
        "ndcg_change": ndcg_change(old_per_query, new_per_query),
    }


def pool_changes(old_pool: pl.DataFrame, new_pool: pl.DataFrame) -> pl.DataFrame:
    """Per ranker: candidates (query_id, doc_id) added and removed between two pools."""
    keys = list(POOL_KEY)
    before = old_pool.select(keys).with_columns(pl.lit(True).alias("old"))
    after = new_pool.select(keys).with_columns(pl.lit(True).alias("new"))
    joined = before.join(after, on=keys, how="full", coalesce=True)
    return (
        joined.group_by("ranker")
        .agg(
            pl.col("old").is_null().sum().cast(pl.Int64).alias("n_candidates_added"),
            pl.col("new").is_null().sum().cast(pl.Int64).alias("n_candidates_removed"),
        )
        .sort("ranker")
    )


def candidate_recall_change(old: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """Per (ranker, cutoff): mean candidate recall in each pool and the change."""
    def mean_recall(frame: pl.DataFrame, name: str) -> pl.DataFrame:
        return frame.group_by("ranker", "cutoff").agg(pl.col("candidate_recall").mean().alias(name))

    return (
        mean_recall(old, "mean_candidate_recall_old")
        .join(mean_recall(new, "mean_candidate_recall_new"), on=["ranker", "cutoff"], how="full",
              coalesce=True)
        .with_columns((pl.col("mean_candidate_recall_new") - pl.col("mean_candidate_recall_old"))
                      .alias("candidate_recall_change"))
        .sort("ranker", "cutoff")
    )


def pool_diff(
    old_pool: pl.DataFrame,
    new_pool: pl.DataFrame,
    old_per_query: pl.DataFrame,
    new_per_query: pl.DataFrame,
) -> dict:
    """Everything that changed between two candidate pools scored under the same version."""
    versions = set(old_per_query["judgment_version"].unique()) | set(
        new_per_query["judgment_version"].unique()
    )
    if len(versions) != 1:
        raise DiffError(f"a pool diff needs one judgment version, got {sorted(versions)}")
    return {
        "judgment_version": versions.pop(),
        "candidate_pool_old": old_per_query["candidate_pool"][0],
        "candidate_pool_new": new_per_query["candidate_pool"][0],
        "candidate_changes": pool_changes(old_pool, new_pool),
        "candidate_recall_change": candidate_recall_change(old_per_query, new_per_query),
    }
