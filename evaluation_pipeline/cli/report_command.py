"""``ndcg-eval report``: aggregates with intervals, ranker comparison and report.html from the
output of ``ndcg-eval score``; with the judgments and the run, traces of the regressions.

The report replaces the folder it is written to whole (``io.result_set``): into the results'
own folder (the default) it keeps the score's summary.json; elsewhere it holds the report's
files only. Every path may be a URL on object storage; a report written there is put whole,
its marker last (``io.result_folder``)."""

from __future__ import annotations

import argparse

import polars as pl

from evaluation_pipeline.cli.options import file_sha256, place, report_config
from evaluation_pipeline.cli.results import check_measures, load_results
from evaluation_pipeline.io.locations import Location
from evaluation_pipeline.io.readers import read_candidates, read_judgments, read_queries
from evaluation_pipeline.io.result_folder import IncompleteResult, result_file, writing
from evaluation_pipeline.io.storage import SUMMARY_FILE
from evaluation_pipeline.report import check_options, write_report
from evaluation_pipeline.report.terminal import progress, render_report
from schemas.columns import is_spec_ndcg_row, with_measure_columns


def run(args: argparse.Namespace) -> int:
    config = report_config(args)
    results, out = place(args, args.results), place(args, args.out)
    per_query, spec, lineage = load_results(results, args)
    if args.measure:
        per_query = _of_measures(per_query, args.measure, results)
    queries = read_queries(place(args, args.queries)) if args.queries else None
    check_options(sorted(per_query["ranker"].unique().to_list()), queries, config)
    candidates = judgments = None
    if args.judgments and args.run:
        judgments = read_judgments(place(args, args.judgments), args.format)
        candidates = read_candidates(place(args, args.run), args.format)
    folder = results if results.is_dir() else results.parent
    out = out or folder
    # The report replaces its folder whole; written into the results' own folder, the score's
    # summary stays part of the result.
    keep = _summary(folder) if str(out) == str(folder) else None
    with writing(out, keep, inputs=(args.judgments, args.run, args.queries)) as staging:
        report = write_report(staging, per_query, spec, lineage, queries, config,
                              candidates=candidates, judgments=judgments, progress=progress,
                              queries_sha256=file_sha256(place(args, args.queries)))
    print(render_report(report, out))
    return 0


def _summary(folder: Location) -> dict[str, bytes] | None:
    """The score's summary.json in ``folder`` (as the result there names it), if it has one."""
    try:
        stored = result_file(folder, SUMMARY_FILE)
    except IncompleteResult:
        return None
    return {SUMMARY_FILE: stored.read_bytes()} if stored.exists() else None


def _of_measures(per_query: pl.DataFrame, measures: list[str], results: Location
                 ) -> pl.DataFrame:
    """The rows of ``measures`` beside the spec's nDCG@K, which every report holds (its
    ``results``, the headline, the traces); a measure the results lack is refused."""
    check_measures(per_query, measures, results)
    return with_measure_columns(per_query).filter(is_spec_ndcg_row().fill_null(False)
                            | pl.col("measure").is_in(measures))
