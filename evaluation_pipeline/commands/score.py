"""``ndcg-eval score``: per_query.parquet and summary.json, and with --report the report.

Inputs and --out may be URLs on object storage (``io.locations``); a result there is written
whole to a local folder first, then put with its marker last (``io.result_folder``).

Every option is checked before the first byte is written: the report options (level,
resamples, slice columns against the queries table, baseline against the rankers) as soon as
what they refer to is known.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from evaluation_pipeline.commands.options import (
    file_sha256,
    place,
    report_config,
    resolve_spec,
)
from evaluation_pipeline.core.evaluation import summarize
from evaluation_pipeline.core.ndcg import sort_results
from evaluation_pipeline.engines import score_files
from evaluation_pipeline.engines.local import read_and_evaluate
from evaluation_pipeline.io.atomic import json_text, write_json, write_parquet
from evaluation_pipeline.io.locations import Location
from evaluation_pipeline.io.readers import read_queries
from evaluation_pipeline.io.result_folder import writing
from evaluation_pipeline.io.storage import PER_QUERY_FILE, SUMMARY_FILE
from evaluation_pipeline.report import ReportConfig, check_options, write_report
from evaluation_pipeline.report.terminal import progress, render_report, render_summary
from evaluation_pipeline.spec import EvaluationSpec
from schemas import InputError, validate
from schemas.columns import PER_QUERY_KEY
from schemas.errors import violation

# The per-query columns summarize reads for its means and counts (core.evaluation.summarize).
SUMMARY_COLUMNS = (*PER_QUERY_KEY, "status", "ndcg", "judged_at_k", "candidate_recall")


def run(args: argparse.Namespace) -> int:
    if isinstance(args.out, str) and args.report and args.engine == "spark":
        raise InputError(args.out, [violation(
            "(file)", "with --engine spark, --report writes local files (HTML, traces): give a "
            "local --out, or report later with ndcg-eval report", [])])
    # Spark reads and writes URLs itself; every other engine through io.locations.
    names = ("queries",) if args.engine == "spark" else ("judgments", "run", "out", "queries")
    for name in names:
        setattr(args, name, place(args, getattr(args, name)))
    spec = resolve_spec(args)
    config = report_config(args) if args.report else None
    if isinstance(args.out, str):  # a URL Spark writes to
        return _score_with_engine(args, spec, config, args.out)
    # The result is built in a staging folder, then swapped in whole (a local --out: an
    # input folder or a folder of other files is refused first) or put there with its marker
    # last (object storage): old and new results never mix (io.result_folder).
    with writing(args.out, inputs=(args.judgments, args.run, args.queries)) as folder:
        if args.engine != "local":
            return _score_with_engine(args, spec, config, folder)
        return _score_locally(args, spec, config, folder)


def _score_locally(args: argparse.Namespace, spec: EvaluationSpec, config: ReportConfig | None,
                   folder: Path) -> int:
    judgments, pool, per_query, lineage = read_and_evaluate(
        args.judgments, args.run, spec, judgments_format=args.judgments_format or args.format,
        run_format=args.run_format or args.format, judgment_version=args.judgment_version,
        pool=args.pool, ranker=args.ranker)
    queries = read_queries(args.queries) if args.queries else None
    per_query = validate("PerQueryResults", per_query, "per-query results")
    summary = summarize(per_query, spec, lineage, queries)
    if config is not None:
        check_options(_rankers(per_query), queries, config)
    # Everything is computed and validated before the first byte is written.
    write_parquet(per_query, folder / PER_QUERY_FILE)
    write_json(summary, folder / SUMMARY_FILE)
    _print_summary(summary, args.out)
    if config is not None:
        report = write_report(folder, per_query, spec, lineage, queries, config,
                              candidates=pool, judgments=judgments, progress=progress,
                              queries_sha256=file_sha256(args.queries))
        print()
        print(render_report(report, args.out))
    return 0


def _score_with_engine(args: argparse.Namespace, spec: EvaluationSpec,
                       config: ReportConfig | None, folder: Path | str) -> int:
    """Streaming or Spark: the engine writes per_query.parquet (for Spark, a folder of parts)
    into ``folder``; the summary and report are computed from what it wrote."""
    queries = read_queries(args.queries) if args.queries else None
    if config is not None:
        config.slice_columns(queries)  # the baseline is checked once the rankers are known
    remote = isinstance(folder, str)  # a URL: Spark writes there, and the summary beside
    target = inside(folder, PER_QUERY_FILE)
    result = score_files(
        args.judgments, args.run, spec, target, engine=args.engine, batch_rows=args.batch_rows,
        judgment_version=args.judgment_version, pool=args.pool, ranker=args.ranker,
        spark_master=args.spark_master,
    )
    for note in result.notes:
        print(f"ndcg-eval: {note}", file=sys.stderr)
    # The summary reads the columns its means and counts need, in any row order (the lineage is
    # known): all columns, sorted, took 0.9 GB at 100M rows, the peak of a streamed run. A
    # report lists rows, so it reads them all, in order (Spark writes parts in any order).
    columns = None if config is not None else list(SUMMARY_COLUMNS)
    if remote:
        from evaluation_pipeline.engines.spark import read_results, write_text_at

        per_query = read_results(target, columns)
    else:
        files = sorted(target.glob("*.parquet")) if target.is_dir() else target
        per_query = pl.read_parquet(files, columns=columns, glob=False)
    if config is not None:
        per_query = sort_results(per_query)
        # The engine has written the rows by now; the summary and report are not written.
        check_options(_rankers(per_query), queries, config)
    summary = summarize(per_query, spec, result.lineage, queries)
    if remote:
        write_text_at(inside(folder, SUMMARY_FILE), json_text(summary))
    else:
        write_json(summary, folder / SUMMARY_FILE)
    _print_summary(summary, args.out)
    if config is not None:
        report = write_report(folder, per_query, spec, result.lineage, queries, config,
                              progress=progress, queries_sha256=file_sha256(args.queries))
        print()
        print(render_report(report, args.out))
    return 0


def _rankers(per_query: pl.DataFrame) -> list[str]:
    return sorted(per_query["ranker"].unique().to_list())


def _print_summary(summary: dict, out: Path | str) -> None:
    print(render_summary(summary))
    print(f"\nwrote {inside(out, PER_QUERY_FILE)} and {inside(out, SUMMARY_FILE)}")


def inside(folder: Location | str, name: str) -> Location | str:
    """``folder / name`` for a location, or a URL kept as written (Spark's)."""
    return f"{folder.rstrip('/')}/{name}" if isinstance(folder, str) else folder / name
