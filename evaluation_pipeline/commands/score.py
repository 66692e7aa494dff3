"""``ndcg-eval score``: per_query.parquet and summary.json, and with --report the report.

Every engine scores through ``engines.score_files`` (default ``auto``), and the engine that
scored is recorded in summary.json. Every option is checked before the first byte is written:
the memory budget and the report options (level, resamples, slice columns against the queries
table) before scoring, the baseline against the rankers before the rows, scored into a folder
beside --out, are moved into it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl

from evaluation_pipeline.commands.options import (
    memory_budget,
    report_config,
    resolve_spec,
)
from evaluation_pipeline.core.evaluation import summarize
from evaluation_pipeline.core.ndcg import sort_results
from evaluation_pipeline.engines import score_files
from evaluation_pipeline.io.atomic import json_text, write_json
from evaluation_pipeline.io.readers import read_queries
from evaluation_pipeline.io.storage import PER_QUERY_FILE, SUMMARY_FILE
from evaluation_pipeline.report import check_options, write_report
from evaluation_pipeline.report.terminal import progress, render_report, render_summary
from schemas import InputError
from schemas.columns import PER_QUERY_KEY
from schemas.errors import violation

# The per-query columns summarize reads for its means and counts (core.evaluation.summarize).
SUMMARY_COLUMNS = (*PER_QUERY_KEY, "status", "ndcg", "judged_at_k", "candidate_recall")


def run(args: argparse.Namespace) -> int:
    urls = [str(x) for x in (args.judgments, args.run, args.out) if isinstance(x, str)]
    if urls and args.engine != "spark":
        raise InputError(urls[0], [violation(
            "(file)", f"a URL is read and written by --engine spark only, not {args.engine}; "
            "give a local path", [])])
    if isinstance(args.out, str) and args.report:
        raise InputError(args.out, [violation(
            "(file)", "--report writes local files (HTML, traces): give a local --out, or "
            "report later from a copy with ndcg-eval report", [])])
    spec = resolve_spec(args)
    config = report_config(args) if args.report else None
    budget = memory_budget(args)
    queries = read_queries(args.queries) if args.queries else None
    if config is not None:
        config.slice_columns(queries)  # the baseline is checked once the rankers are known
    remote = isinstance(args.out, str)  # a URL: Spark writes there, and the summary beside
    # Every engine but Spark scores into a folder beside --out: the rows reach --out only
    # once every option has been checked against them (the baseline against the rankers).
    with _staging(args.out, staged=not remote and args.engine != "spark") as place:
        target = inside(place, PER_QUERY_FILE)
        result = score_files(
            args.judgments, args.run, spec, target, engine=args.engine,
            batch_rows=args.batch_rows, judgments_format=args.judgments_format or args.format,
            run_format=args.run_format or args.format, judgment_version=args.judgment_version,
            pool=args.pool, ranker=args.ranker, spark_master=args.spark_master, budget=budget,
        )
        for note in result.notes:
            print(f"ndcg-eval: {note}", file=sys.stderr)
        per_query = _read_scores(target, remote, full=config is not None)
        if config is not None:
            per_query = sort_results(per_query)
            check_options(_rankers(per_query), queries, config)
        summary = {**summarize(per_query, spec, result.lineage, queries),
                   "engine": result.engine}
        if place != args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            os.replace(target, args.out / PER_QUERY_FILE)
    if remote:
        from evaluation_pipeline.engines.spark import write_text_at

        write_text_at(inside(args.out, SUMMARY_FILE), json_text(summary))
    else:
        write_json(summary, args.out / SUMMARY_FILE)
    _print_summary(summary, args.out)
    if config is not None:
        report = write_report(args.out, per_query, spec, result.lineage, queries, config,
                              candidates=result.candidates, judgments=result.judgments,
                              progress=progress)
        print()
        print(render_report(report, args.out))
    return 0


def _read_scores(target: Path | str, remote: bool, full: bool) -> pl.DataFrame:
    """The per-query rows an engine wrote (for Spark, a folder of parts, in any order).

    The summary reads the columns its means and counts need, in any row order (the lineage is
    known): all columns, sorted, took 0.9 GB at 100M rows, the peak of a streamed run. A
    report lists rows, so it reads them all."""
    columns = None if full else list(SUMMARY_COLUMNS)
    if remote:
        from evaluation_pipeline.engines.spark import read_results

        return read_results(target, columns)
    files = sorted(target.glob("*.parquet")) if target.is_dir() else target
    return pl.read_parquet(files, columns=columns, glob=False)


@contextmanager
def _staging(out: Path | str, staged: bool) -> Iterator[Path | str]:
    """A temporary folder beside ``out`` (one file system: the rows are moved in by a rename),
    removed on exit; ``out`` itself when not ``staged``."""
    if not staged:
        yield out
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out.parent) as tmp:
        yield Path(tmp)


def _rankers(per_query: pl.DataFrame) -> list[str]:
    return sorted(per_query["ranker"].unique().to_list())


def _print_summary(summary: dict, out: Path | str) -> None:
    print(render_summary(summary))
    print(f"\nwrote {inside(out, PER_QUERY_FILE)} and {inside(out, SUMMARY_FILE)}")


def inside(folder: Path | str, name: str) -> Path | str:
    """``folder / name`` for a local folder or a URL."""
    return folder / name if isinstance(folder, Path) else f"{folder.rstrip('/')}/{name}"
