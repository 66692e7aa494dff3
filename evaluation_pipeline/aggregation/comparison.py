"""Paired comparison of rankers over per-query NDCG (contract section 4).

Within one candidate pool, two rankers are compared on the queries that have a number (contract
section 3, rule 5) for both: the paired mean difference (second minus first), its bootstrap
interval, a sign-flip randomization p-value, wins / losses / ties and the most regressed
queries. The p-values are Holm-adjusted within the spec's declared family (``stats.family``:
by default every pair x headline measure together, each other measure's pairs apart). Between
pools the candidate sets differ, so the same numbers are labelled "not a pure
reranker comparison" and carry candidate recall beside NDCG.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import polars as pl

from evaluation_pipeline import settings
from evaluation_pipeline.aggregation import sums as rn
from evaluation_pipeline.aggregation.partials import (
    PREVIOUS,
    TONIGHT,
    Result,
    measure_order,
)
from evaluation_pipeline.stats.family import DEFAULT as DEFAULT_FAMILY
from evaluation_pipeline.stats.family import Family
from evaluation_pipeline.stats.verdict import verdict

NOT_PURE = "not a pure reranker comparison"
# The level the family holds each test to and the power of its detectable effect: the
# watch's settings (NDCG_EVAL_ALPHA, NDCG_EVAL_POWER), one answer for the report and the night.
ALPHA = settings.ALPHA.value_default
POWER = settings.POWER.value_default
MIN_EFFECT = settings.MIN_EFFECT.value_default


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


def ranker_pair_results(results: Sequence[Result], baseline: str | None) -> list[rn.Pair]:
    """The pairs of a comparison within one pool: per measure (the spec's nDCG@K first, by
    cutoff, then the others in ``Result``'s order), every pair of rankers (or each against
    ``baseline``), as (first, second) results."""
    rankers = sorted({r.ranker for r in results})
    pairs = ranker_pairs(rankers, baseline)
    return [(Result(TONIGHT, first, cutoff, measure), Result(TONIGHT, second, cutoff, measure))
            for cutoff, measure in measures_of(results) for first, second in pairs]


def measures_of(results: Sequence[Result]) -> list[tuple[int | None, str]]:
    """The (cutoff, measure) of ``results``, each once, in ``Result``'s order."""
    return sorted({(r.cutoff, r.measure) for r in results},
                  key=lambda measure: measure_order(*measure))


def compare_rankers(
    per_query: pl.DataFrame,
    *,
    baseline: str | None = None,
    ci_level: float = 0.95,
    n_bootstrap: int = 2000,
    seed: int = 20261130,
    n_regressions: int = 10,
    differing_queries: pl.DataFrame | None = None,
    family: Family = DEFAULT_FAMILY,
    alpha: float = ALPHA,
    power: float = POWER,
) -> dict:
    """Every pair of rankers of one pool (or each against ``baseline``), per measure, Holm
    within ``family`` (the spec's: ``Family.of(spec)``).

    ``differing_queries`` (query_id) overrides the per-query evidence of candidate sets that
    differ, e.g. with :func:`candidate_set_differences` of the pool.
    """
    results = rn.results_of(per_query)
    pairs = ranker_pair_results(results, baseline)
    family.check_resolution([first for first, _ in pairs], n_bootstrap, alpha,
                            what="ranker pairs")
    plan = rn.plan_of(results, pairs=pairs, n_bootstrap=n_bootstrap, seed=seed,
                      n_regressions=n_regressions, n_queries=rn.distinct_queries(per_query))
    numbers = rn.Numbers(plan, rn.local_partial(per_query, None, None, plan))
    return ranker_comparison(numbers, pairs, baseline=baseline, ci_level=ci_level,
                             differing_queries=differing_queries, family=family, alpha=alpha,
                             power=power)


def ranker_comparison(numbers: rn.Numbers, pairs: Sequence[rn.Pair], *, baseline: str | None,
                      ci_level: float, differing_queries: pl.DataFrame | None = None,
                      family: Family = DEFAULT_FAMILY, alpha: float = ALPHA,
                      power: float = POWER) -> dict:
    """report.json's ``comparison`` from the numbers of a plan whose pairs start with
    ``pairs`` (:func:`ranker_pair_results`), Holm within ``family``, each pair's adjusted
    interval at the level the family holds it to under ``alpha``."""
    if differing_queries is not None:
        n_differing = differing_queries.height
        first_differing = differing_queries["query_id"].head(5).to_list()
    else:
        n_differing, first_differing = numbers.differing()
    pure = n_differing == 0
    results = _tested(numbers, pairs, ci_level, family=family, unit="ranker pair",
                      unit_of=lambda result: (result["first"], result["second"]),
                      alpha=alpha, power=power)
    return {
        "kind": "rankers within one pool",
        "baseline": baseline,
        "pairs_compared": "each ranker vs the baseline" if baseline else "every pair",
        "pure_reranker_comparison": pure,
        "note": None if pure else (
            f"{NOT_PURE}: rankers rank different candidate sets for "
            f"{n_differing} queries ({', '.join(first_differing)}"
            f"{' ...' if n_differing > 5 else ''})"
        ),
        "multiple_comparisons": "holm",
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
    family: Family = DEFAULT_FAMILY,
    alpha: float = ALPHA,
    power: float = POWER,
    min_effect: float = MIN_EFFECT,
) -> dict:
    """The same rankers over two candidate pools: paired per ranker and measure, never pure;
    Holm within ``family`` (the spec's), as the nightly watch adjusts the same changes, and each
    change's verdict by the watch's rule (``stats.verdict``) under ``alpha`` and
    ``min_effect``: the second pool against the first as a night against the one before."""
    rankers = sorted(set(first["ranker"].unique()) & set(second["ranker"].unique()))
    pools = _single(first, "candidate_pool"), _single(second, "candidate_pool")
    before, after = rn.results_of(first, PREVIOUS), rn.results_of(second)
    measures = [m for m in measures_of(after) if m in set(measures_of(before))]
    pairs = [(Result(PREVIOUS, ranker, *measure), Result(TONIGHT, ranker, *measure))
             for measure in measures for ranker in rankers]
    family.check_resolution([now for _, now in pairs], n_bootstrap, alpha,
                            what="rankers' changes between the pools")
    plan = rn.plan_of(after, previous=before,
                      pairs=pairs, n_bootstrap=n_bootstrap, seed=seed,
                      n_regressions=n_regressions,
                      n_queries=rn.distinct_queries(first, second))
    numbers = rn.Numbers(plan, rn.local_partial(second, first, None, plan))
    results = _tested(numbers, pairs, ci_level, family=family, unit="ranker",
                      unit_of=lambda result: result["second"], alpha=alpha, power=power)
    for result, (one, other) in zip(results, pairs, strict=True):
        result["mean_candidate_recall_first"] = numbers.mean_candidate_recall(one)
        result["mean_candidate_recall_second"] = numbers.mean_candidate_recall(other)
        result["verdict"] = verdict(
            result["mean_difference"], result["p_value_holm"],
            (result["difference_low_adjusted"], result["difference_high_adjusted"]),
            alpha=alpha, min_effect=min_effect)
    return {
        "kind": "rankers across two pools",
        "pool_first": pools[0],
        "pool_second": pools[1],
        "pure_reranker_comparison": False,
        "note": f"{NOT_PURE}: the candidate pools differ; candidate recall is shown beside NDCG",
        "multiple_comparisons": "holm",
        "pairs": results,
    }


def narrowed(comparison: dict, measures: Sequence[str] | None = None,
             cutoffs: Sequence[int] | None = None) -> dict:
    """``comparison`` with only the pairs of ``measures`` and ``cutoffs`` (None: all). The
    p-values stay adjusted within the whole family: a narrower view of one comparison shows
    the numbers the report, the history and the alert show."""
    return {**comparison, "pairs": [
        pair for pair in comparison["pairs"]
        if (measures is None or pair["measure"] in measures)
        and (cutoffs is None or pair["cutoff"] in cutoffs)]}


def _single(frame: pl.DataFrame, column: str) -> str | None:
    if column not in frame.columns:
        return None
    values = frame[column].unique().to_list()
    return str(values[0]) if len(values) == 1 else None


def _tested(numbers: rn.Numbers, pairs: Sequence[rn.Pair], ci_level: float, *,
            family: Family, unit: str, unit_of, alpha: float, power: float) -> list[dict]:
    """The result of each pair (the plan's first ``len(pairs)``), Holm-adjusted within
    ``family``, which is named on each (``holm_family``), with its interval at the level the
    family holds it to under ``alpha`` and its detectable effect at ``power``; ``unit``: what
    ``unit_of`` a result returns, for the family's words."""
    results = []
    for p, (one, other) in enumerate(pairs):
        first, second = one.ranker, other.ranker
        stats = numbers.pair(p, ci_level)
        regressions, histogram = stats.pop("regressions"), stats.pop("histogram")
        del stats["movers"]  # a ranker pair lists its regressions; movers are the nights'
        label = one.cutoff if one.is_spec_ndcg else one.measure
        results.append({"first": first, "second": second, "cutoff": one.cutoff,
                        "measure": one.measure, **stats, "rng_key": f"{first}|{second}|{label}",
                        "histogram": histogram, "regressions": regressions})
    adjusted = family.adjust(results, unit=unit, unit_of=unit_of, alpha=alpha)
    for p, (result, test) in enumerate(zip(results, adjusted, strict=True)):
        result["p_value_holm"], result["holm_family"] = test.p, test.family
        result.update(numbers.adjusted(p, alpha=alpha, scale=test.scale, power=power))
    return results
