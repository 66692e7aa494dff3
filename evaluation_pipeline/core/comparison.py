"""Paired comparison of rankers over per-query NDCG (contract section 4).

Within one candidate pool, two rankers are compared on the queries that have a number (contract
section 3, rule 5) for both: the paired mean difference (second minus first), its bootstrap
interval, a sign-flip randomization p-value, wins / losses / ties and the most regressed
queries. With more than two rankers the p-values are also Holm-adjusted over all pairs of a
cutoff. Between pools the candidate sets differ, so the same numbers are labelled "not a pure
reranker comparison" and carry candidate recall beside NDCG.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import polars as pl

from evaluation_pipeline.core.intervals import paired_intervals
from evaluation_pipeline.core.statistics import holm

# Per-query NDCG differences within this are ties (float rounding, not a ranking change).
TIE_TOLERANCE = 1e-12
NOT_PURE = "not a pure reranker comparison"


def paired_statistics(paired: pl.DataFrame, tested: dict) -> dict:
    """Means of the paired frame, wins/losses/ties, and its interval and p-value (``tested``,
    from :func:`intervals.paired_intervals`)."""
    first, second = paired["ndcg_first"].to_numpy(), paired["ndcg_second"].to_numpy()
    difference = paired["difference"].to_numpy()
    n = difference.size
    return {
        "n_paired": int(n),
        "mean_first": float(first.mean()) if n else None,
        "mean_second": float(second.mean()) if n else None,
        "mean_difference": float(difference.mean()) if n else None,
        "difference_low": tested["difference_low"],
        "difference_high": tested["difference_high"],
        "p_value": tested["p_value"],
        "wins": int(np.sum(difference > TIE_TOLERANCE)),
        "losses": int(np.sum(difference < -TIE_TOLERANCE)),
        "ties": int(np.sum(np.abs(difference) <= TIE_TOLERANCE)),
    }


def paired_frame(first: pl.DataFrame, second: pl.DataFrame,
                 carried: tuple[str, ...] = ("candidate_recall", "status")) -> pl.DataFrame:
    """Per-query rows of two results joined on (query_id, cutoff), with the difference and
    each side's ``carried`` columns (suffixed ``_first`` and ``_second``).

    Only queries with a number on both sides are paired; the rest are counted by the caller.
    """
    columns = ["query_id", "cutoff", "ndcg", *carried]
    return (
        first.select(columns)
        .join(second.select(columns), on=["query_id", "cutoff"], how="inner", suffix="_second")
        .rename({c: f"{c}_first" for c in ("ndcg", *carried)})
        .filter(pl.col("ndcg_first").is_not_null() & pl.col("ndcg_second").is_not_null())
        .with_columns((pl.col("ndcg_second") - pl.col("ndcg_first")).alias("difference"))
        .sort("cutoff", "query_id")
    )


def ranker_pairs(rankers: list[str], baseline: str | None) -> list[tuple[str, str]]:
    """Every pair (sorted names), or each ranker against a declared baseline."""
    if baseline is None:
        return list(combinations(sorted(rankers), 2))
    if baseline not in rankers:
        raise ValueError(f"baseline ranker {baseline!r} is not among {sorted(rankers)}")
    return [(baseline, r) for r in sorted(rankers) if r != baseline]


def candidate_sets_differ(per_query: pl.DataFrame) -> pl.DataFrame:
    """Queries where rankers of one pool evidently rank different candidate sets.

    Per-query results keep counts, not documents: a different number of candidates or a
    different candidate recall proves the sets differ (equal counts do not prove them equal;
    :func:`candidate_set_differences` checks the pool itself).
    """
    # The distinct (size, recall) pairs of each query: more than one means the sets differ.
    # Narrowed first: at a million queries the rows of every column would be copied twice.
    returned = per_query.lazy().filter(pl.col("status") != "missing_from_run").select(
        "query_id", "n_candidates", "candidate_recall")
    return (
        returned.unique()
        .group_by("query_id")
        .len()
        .filter(pl.col("len") > 1)
        .select("query_id")
        .sort("query_id")
        .collect()
    )


def candidate_set_differences(pool: pl.DataFrame) -> pl.DataFrame:
    """Queries of a pool whose rankers do not all rank the same documents (exact check).

    A query answered by only some rankers of the pool counts too: comparing the rankers on it
    is not a pure reranker comparison either (contract section 1).
    """
    n_rankers = pool["ranker"].n_unique()
    # One sorted document list per ranker and query: the sets agree when a query has one list
    # and every ranker gave it (the pool's key is unique, so a list holds no repeats).
    sets = pool.group_by("query_id", "ranker").agg(pl.col("doc_id").sort().alias("docs"))
    return (
        sets.group_by("query_id")
        .agg(pl.len().alias("n_rankers"), pl.col("docs").n_unique().alias("n_sets"))
        .filter((pl.col("n_rankers") < n_rankers) | (pl.col("n_sets") > 1))
        .select("query_id")
        .sort("query_id")
    )


COMPARED_COLUMNS = ("ranker", "query_id", "cutoff", "ndcg", "candidate_recall", "status",
                    "n_candidates")


def _numbers_of(per_query: pl.DataFrame, ranker: str, cutoff: int) -> pl.DataFrame:
    """(query_id, cutoff, ndcg) of one result's queries with a number: all a pair reads."""
    return per_query.lazy().filter(
        (pl.col("ranker") == ranker) & (pl.col("cutoff") == cutoff) & pl.col("ndcg").is_not_null()
    ).select("query_id", "cutoff", "ndcg").collect()


def compare_rankers(
    per_query: pl.DataFrame,
    *,
    baseline: str | None = None,
    ci_level: float = 0.95,
    n_bootstrap: int = 2000,
    seed: int = 20261130,
    n_regressions: int = 10,
    differing_queries: pl.DataFrame | None = None,
) -> dict:
    """Every pair of rankers of one pool (or each against ``baseline``), per cutoff.

    ``differing_queries`` (query_id) overrides the per-query evidence of candidate sets that
    differ, e.g. with :func:`candidate_set_differences` of the pool.
    """
    # Only the columns a comparison reads: the lineage columns alone are most of a row.
    per_query = per_query.select(COMPARED_COLUMNS)
    rankers = sorted(per_query["ranker"].unique().to_list())
    pairs = ranker_pairs(rankers, baseline)
    differing = differing_queries if differing_queries is not None else candidate_sets_differ(per_query)
    pure = differing.height == 0
    blocks = [
        [(first, second, cutoff, paired_frame(
            _numbers_of(per_query, first, cutoff), _numbers_of(per_query, second, cutoff),
            carried=()).drop("cutoff"))
         for first, second in pairs]
        for cutoff in sorted(per_query["cutoff"].unique().to_list())
    ]
    results = _tested_blocks(blocks, ci_level, n_bootstrap, seed, n_regressions,
                             correct=len(rankers) > 2)
    return {
        "kind": "rankers within one pool",
        "baseline": baseline,
        "pairs_compared": "each ranker vs the baseline" if baseline else "every pair",
        "pure_reranker_comparison": pure,
        "note": None if pure else (
            f"{NOT_PURE}: rankers rank different candidate sets for "
            f"{differing.height} queries ({', '.join(differing['query_id'].head(5).to_list())}"
            f"{' ...' if differing.height > 5 else ''})"
        ),
        "multiple_comparisons": "holm" if len(rankers) > 2 else "none (two rankers)",
        "pairs": results,
    }


def compare_pools(
    first: pl.DataFrame,
    second: pl.DataFrame,
    *,
    ci_level: float = 0.95,
    n_bootstrap: int = 2000,
    seed: int = 20261130,
    n_regressions: int = 10,
) -> dict:
    """The same rankers over two candidate pools: paired per ranker and cutoff, never pure."""
    rankers = sorted(set(first["ranker"].unique()) & set(second["ranker"].unique()))
    pools = _single(first, "candidate_pool"), _single(second, "candidate_pool")
    first, second = first.select(COMPARED_COLUMNS), second.select(COMPARED_COLUMNS)
    cutoffs = sorted(set(first["cutoff"].unique()) & set(second["cutoff"].unique()))
    blocks = [
        [(ranker, ranker, cutoff, paired_frame(
            _numbers_of(first, ranker, cutoff), _numbers_of(second, ranker, cutoff),
            carried=()).drop("cutoff")) for ranker in rankers]
        for cutoff in cutoffs
    ]
    results = _tested_blocks(blocks, ci_level, n_bootstrap, seed, n_regressions,
                             correct=len(rankers) > 1)
    for result in results:
        for side, frame in (("first", first), ("second", second)):
            rows = frame.filter((pl.col("ranker") == result["first"])
                                & (pl.col("cutoff") == result["cutoff"]))
            result[f"mean_candidate_recall_{side}"] = rows["candidate_recall"].mean()
    return {
        "kind": "rankers across two pools",
        "pool_first": pools[0],
        "pool_second": pools[1],
        "pure_reranker_comparison": False,
        "note": f"{NOT_PURE}: the candidate pools differ; candidate recall is shown beside NDCG",
        "multiple_comparisons": "holm" if len(rankers) > 1 else "none (one ranker)",
        "pairs": results,
    }


def _single(frame: pl.DataFrame, column: str) -> str | None:
    if column not in frame.columns:
        return None
    values = frame[column].unique().to_list()
    return str(values[0]) if len(values) == 1 else None


def _tested_blocks(blocks, ci_level, n_bootstrap, seed, n_regressions, *, correct):
    """Results of every (first, second, cutoff, paired frame) of the blocks (one per cutoff),
    intervals and p-values from one pass over the queries, Holm-adjusted within a block."""
    tested = iter(paired_intervals(
        [paired for block in blocks for *_, paired in block],
        ci_level=ci_level, n_bootstrap=n_bootstrap, seed=seed,
    ))
    results = []
    for block in blocks:
        done = [_pair_result(*pair, next(tested), n_regressions) for pair in block]
        _adjust(done, correct=correct)
        results.extend(done)
    return results


def _pair_result(first, second, cutoff, paired, tested, n_regressions):
    key = f"{first}|{second}|{cutoff}"
    stats = paired_statistics(paired, tested)
    regressed = (
        paired.filter(pl.col("difference") < -TIE_TOLERANCE)
        .sort(["difference", "query_id"])
        .head(n_regressions)
    )
    return {
        "first": first,
        "second": second,
        "cutoff": int(cutoff),
        **stats,
        "rng_key": key,
        "differences": paired["difference"].to_list(),
        "regressions": [
            {"query_id": r["query_id"], "ndcg_first": r["ndcg_first"],
             "ndcg_second": r["ndcg_second"], "difference": r["difference"]}
            for r in regressed.iter_rows(named=True)
        ],
    }


def _adjust(block: list[dict], *, correct: bool) -> None:
    adjusted = holm(np.array([r["p_value"] for r in block])) if correct else None
    for i, result in enumerate(block):
        result["p_value_holm"] = float(adjusted[i]) if correct else None
