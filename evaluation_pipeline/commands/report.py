"""``ndcg-eval report``: aggregates with intervals, ranker comparison and report.html from the
output of ``ndcg-eval score``; with the judgments and the run, traces of the regressions."""

from __future__ import annotations

import argparse

from evaluation_pipeline.commands.options import report_config
from evaluation_pipeline.commands.results import load_results
from evaluation_pipeline.io.readers import read_candidates, read_judgments, read_queries
from evaluation_pipeline.report import check_options, write_report
from evaluation_pipeline.report.terminal import progress, render_report


def run(args: argparse.Namespace) -> int:
    config = report_config(args)
    per_query, spec, lineage = load_results(args.results, args)
    queries = read_queries(args.queries) if args.queries else None
    check_options(sorted(per_query["ranker"].unique().to_list()), queries, config)
    candidates = judgments = None
    if args.judgments and args.run:
        judgments = read_judgments(args.judgments, args.format)
        candidates = read_candidates(args.run, args.format)
    out = args.out or (args.results if args.results.is_dir() else args.results.parent)
    report = write_report(out, per_query, spec, lineage, queries, config,
                          candidates=candidates, judgments=judgments, progress=progress)
    print(render_report(report, out))
    return 0
