"""``ndcg-eval report``: aggregates with intervals, ranker comparison and report.html from the
output of ``ndcg-eval score``; with the judgments and the run, traces of the regressions.

Every path may be a URL on object storage; a report written there is put whole, its marker
last (``io.result_folder``)."""

from __future__ import annotations

import argparse

from evaluation_pipeline.commands.options import place, report_config
from evaluation_pipeline.commands.results import load_results
from evaluation_pipeline.io.readers import read_candidates, read_judgments, read_queries
from evaluation_pipeline.io.result_folder import writing
from evaluation_pipeline.report import check_options, write_report
from evaluation_pipeline.report.terminal import progress, render_report


def run(args: argparse.Namespace) -> int:
    config = report_config(args)
    results, out = place(args, args.results), place(args, args.out)
    per_query, spec, lineage = load_results(results, args)
    queries = read_queries(place(args, args.queries)) if args.queries else None
    check_options(sorted(per_query["ranker"].unique().to_list()), queries, config)
    candidates = judgments = None
    if args.judgments and args.run:
        judgments = read_judgments(place(args, args.judgments), args.format)
        candidates = read_candidates(place(args, args.run), args.format)
    out = out or (results if results.is_dir() else results.parent)
    with writing(out) as folder:
        report = write_report(folder, per_query, spec, lineage, queries, config,
                              candidates=candidates, judgments=judgments, progress=progress)
    print(render_report(report, out))
    return 0
