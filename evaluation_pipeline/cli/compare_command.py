"""``ndcg-eval compare``: the rankers within one result, or two results side by side.

Two results over the same pool differ by their grades alone (a judgment-version diff); under
the same judgment version, by their candidates (a pool diff, not a pure reranker comparison).
"""

from __future__ import annotations

import argparse

import polars as pl

from evaluation_pipeline.aggregation.comparison import compare_pools, compare_rankers, narrowed
from evaluation_pipeline.analysis.diff import judgment_version_diff, pool_diff
from evaluation_pipeline.cli.options import place, report_config
from evaluation_pipeline.cli.results import ResultsError, check_measures, load_results
from evaluation_pipeline.io.readers import read_candidates, read_judgments
from evaluation_pipeline.io.table_inputs import NO_JUDGMENTS
from evaluation_pipeline.metric.raters import combine_ratings, is_rated
from evaluation_pipeline.report.terminal import (
    render_comparison,
    render_judgment_diff,
    render_pool_diff,
)
from evaluation_pipeline.stats.family import Family
from schemas.columns import spec_ndcg_rows, with_measure_columns


def run(args: argparse.Namespace) -> int:
    if len(args.results) > 2:
        raise ResultsError("compare takes one result (its rankers) or two results")
    loaded = [load_results(place(args, path)) for path in args.results]
    config = report_config(args).under(loaded[0][1])
    options = dict(ci_level=config.ci_level, n_bootstrap=config.n_bootstrap, seed=config.seed,
                   n_regressions=config.n_regressions, alpha=config.alpha, power=config.power)
    # Every measure of the results, Holm within the spec's family as report.json, the history
    # and the alert adjust them; --measure and --cutoff narrow what is shown, never the family.
    # The diffs of two versions or two pools read the spec's nDCG@K rows.
    frames = [with_measure_columns(pq) for pq, _, _ in loaded]
    if args.measure:
        check_measures(frames[0], args.measure, args.results[0])
    family = Family.of(loaded[0][1])
    # The diffs list rows, not tests: --cutoff narrows them as it is.
    ndcg_rows = [spec_ndcg_rows(pq) if not args.cutoff else
                 spec_ndcg_rows(pq).filter(pl.col("cutoff").is_in(args.cutoff)) for pq in frames]

    def shown(comparison: dict) -> dict:
        return narrowed(comparison, args.measure, args.cutoff)

    if len(loaded) == 1:
        config.check_baseline(sorted(frames[0]["ranker"].unique().to_list()))
        print(render_comparison(shown(compare_rankers(
            frames[0], baseline=config.baseline, family=family, **options)), config.power))
        return 0
    (_, spec_a, old), (_, spec_b, new) = loaded
    if spec_a.spec_id != spec_b.spec_id:
        raise ResultsError(
            f"the two results use different specs ({spec_a.spec_id}, {spec_b.spec_id}): their "
            "numbers do not measure the same thing"
        )
    same_pool = old.pool_sha256 == new.pool_sha256
    same_version = old.judgments_sha256 == new.judgments_sha256
    if same_pool and not same_version:
        # A version with raters is listed in the grades of the results' rule.
        grades = [combine_ratings(g, spec_a) if is_rated(g) else g
                  for g in (read_judgments(place(args, p), args.format)
                            for p in args.judgments or ())]
        diff = judgment_version_diff(*(grades or (NO_JUDGMENTS, NO_JUDGMENTS)),
                                     *ndcg_rows)
        print(render_judgment_diff(diff, grades_given=bool(grades)))
        return 0
    comparison = shown(compare_pools(*frames, family=family, min_effect=config.min_effect,
                                     **options))
    changes = None
    if same_version and args.pools:
        changes = pool_diff(*(read_candidates(place(args, p), args.format)
                              for p in args.pools), *ndcg_rows)
    # Printed once both are computed: a refused diff leaves no half-printed comparison.
    print(render_comparison(comparison, config.power))
    if changes is not None:
        print()
        print(render_pool_diff(changes))
    elif not same_version:
        print("\nnote: the judgment versions differ too; differences mix grades and candidates")
    return 0
