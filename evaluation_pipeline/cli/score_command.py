"""``ndcg-eval score``: per_query.parquet and summary.json, and with --report the report.

The engine named by --engine (default ``auto``, resolved by ``engines.resolve``) scores the
inputs (``engines.ScoringInputs``) into the output with the resources the flags give
(``engines.Resources``), and the engine that scored is recorded in summary.json. Inputs and
--out may be URLs on object storage (``io.locations``); a result there is written whole to a
local folder first, then put with its marker last (``io.result_folder``); a local result is
built in a staging folder and swapped in whole.

Every option is checked before the first byte is written: the memory budget and the report
options (level, resamples, slice columns against the queries table) before scoring, the
baseline against the rankers before the staged result is swapped in.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from evaluation_pipeline.aggregation.measure_means import measure_means
from evaluation_pipeline.analysis.agreement import agreement
from evaluation_pipeline.cli.options import (
    file_sha256,
    memory_budget,
    place,
    report_config,
    resolve_spec,
)
from evaluation_pipeline.engines import (
    Resources,
    ScoringInputs,
    ScoringOutput,
    resolve,
    score_inputs,
)
from evaluation_pipeline.evaluation import Summary, read_with_lineage, summarize
from evaluation_pipeline.io import integrity
from evaluation_pipeline.io.atomic import json_text, write_json
from evaluation_pipeline.io.datasets import read_dataset, scan_dataset
from evaluation_pipeline.io.locations import Location, is_remote, location
from evaluation_pipeline.io.readers import read_queries
from evaluation_pipeline.io.result_folder import writing
from evaluation_pipeline.io.storage import PER_QUERY_FILE, SUMMARY_FILE
from evaluation_pipeline.metric.ndcg import sort_results
from evaluation_pipeline.metric.raters import is_rated
from evaluation_pipeline.report import ReportConfig, check_options, write_report
from evaluation_pipeline.report.terminal import progress, render_report, render_summary
from evaluation_pipeline.spec import EvaluationSpec
from schemas import InputError
from schemas.columns import PER_QUERY_KEY, is_spec_ndcg_row, spec_ndcg_rows
from schemas.errors import violation

# The per-query columns summarize reads for its means and counts (evaluation.summarize).
SUMMARY_COLUMNS = (*PER_QUERY_KEY, "status", "value", "ndcg", "judged_at_k", "candidate_recall")


def run(args: argparse.Namespace) -> int:
    reads_urls = resolve(args.engine).reads_urls
    if isinstance(args.out, str) and args.report and reads_urls:
        raise InputError(args.out, [violation(
            "(file)", f"with --engine {args.engine}, --report writes local files (HTML, "
            "traces): give a local --out, or report later with ndcg-eval report", [])])
    # Spark reads and writes URLs itself; every other engine through io.locations.
    names = ("queries",) if reads_urls else ("judgments", "run", "out", "queries")
    for name in names:
        setattr(args, name, place(args, getattr(args, name)))
    spec = resolve_spec(args)
    config = report_config(args) if args.report else None
    budget = memory_budget(args)
    if isinstance(args.out, str):  # a URL Spark writes to
        return _score(args, spec, config, budget, args.out)
    # The result is built in a staging folder, then swapped in whole (a local --out: an
    # input folder or a folder of other files is refused first) or put there with its marker
    # last (object storage): old and new results never mix (io.result_folder).
    with writing(args.out, inputs=(args.judgments, args.run, args.queries)) as folder:
        return _score(args, spec, config, budget, folder)


def _score(args: argparse.Namespace, spec: EvaluationSpec, config: ReportConfig | None,
           budget, folder: Path | str) -> int:
    """The engine writes per_query.parquet (for Spark, a folder of parts) into ``folder``; the
    summary and report are computed from what it wrote, or from the frames it kept."""
    queries = read_queries(args.queries) if args.queries else None
    if config is not None:
        config.slice_columns(queries)  # the baseline is checked once the rankers are known
    remote = isinstance(folder, str)  # a URL: Spark writes there, and the summary beside
    target = inside(folder, PER_QUERY_FILE)
    inputs = ScoringInputs(
        args.judgments, args.run, judgments_format=args.judgments_format or args.format,
        run_format=args.run_format or args.format, judgment_version=args.judgment_version,
        pool=args.pool, ranker=args.ranker)
    resources = Resources(budget=budget, batch_rows=args.batch_rows,
                          spark_master=args.spark_master)
    result = score_inputs(inputs, spec, ScoringOutput(target), resources, engine=args.engine)
    for note in result.notes:
        print(f"ndcg-eval: {note}", file=sys.stderr)
    per_query = _read_scores(target, remote, full=config is not None)
    if config is not None:
        per_query = sort_results(per_query)
        # The rows are in the staging folder only: a refused baseline leaves --out as it was.
        check_options(_rankers(per_query), queries, config)
    summary = {**summarize(per_query, spec, result.lineage, queries), "engine": result.engine}
    if remote:
        # Beside the rows the engine wrote at a URL, by the engine, with the storage settings
        # it wrote them with (Spark's: spark-defaults.conf).
        resolve(args.engine).write_text_at(inside(folder, SUMMARY_FILE),
                                            json_text(Summary.checked(summary)), resources)
    else:
        # The rows' bytes as written (a file, or Spark's parts), which compare and report
        # prove before they read them back (cli.results.rows_alteration).
        summary["stamp"] = integrity.dataset_stamp(Path(target))
        write_json(Summary.checked(summary), folder / SUMMARY_FILE)
    _print_summary(summary, args.out)
    if spec.other_measures:
        print()
        print(other_measures_table(_other_measures(target, remote)))
    if config is not None:
        if result.candidates is None:
            # Traces re-rank the pool's rows of each regressed query: an engine that streamed
            # the pool kept none of them.
            print(f"ndcg-eval: the {result.engine} engine holds no pool rows in memory, so the "
                  "report has no traces of its regressions; `ndcg-eval explain` traces one "
                  "query, and --engine local writes them all", file=sys.stderr)
        rated = result.judgments is not None and is_rated(result.judgments)
        report = write_report(folder, per_query, spec, result.lineage, queries, config,
                              candidates=result.candidates, judgments=result.judgments,
                              progress=progress, queries_sha256=file_sha256(args.queries),
                              agreement=agreement(result.judgments, spec, result.candidates)
                              if rated else None)
        print()
        print(render_report(report, args.out))
    return 0


def _read_scores(target: Location | str, remote: bool, full: bool) -> pl.DataFrame:
    """The per-query rows an engine wrote (for Spark, a folder of parts, in any order).

    The summary reads the columns its means and counts need, of the spec's nDCG@K rows, in any
    row order (the lineage is known): all columns, sorted, took 0.9 GB at 100M rows, the peak
    of a streamed run. A report lists rows, so it reads them all, the lineage columns once
    (``evaluation.read_with_lineage``)."""
    where = location(target) if remote else target
    if full:
        return read_with_lineage(where)[0]
    if is_remote(where):
        return spec_ndcg_rows(read_dataset(where, list(SUMMARY_COLUMNS)))
    return spec_ndcg_rows(scan_dataset(where).select(SUMMARY_COLUMNS)).collect(
        engine="streaming")


def _other_measures(target: Location | str, remote: bool) -> pl.LazyFrame:
    """The rows of the measures beside the spec's nDCG@K, as a scan (streamed where local)."""
    where = location(target) if remote else target
    columns = ["ranker", "cutoff", "measure", "value"]
    rows = (read_dataset(where, columns).lazy() if is_remote(where)
            else scan_dataset(where).select(columns))
    own = is_spec_ndcg_row()
    return rows.filter(~own.fill_null(False))


def _rankers(per_query: pl.DataFrame) -> list[str]:
    return sorted(per_query["ranker"].unique().to_list())


def other_measures_table(rows: pl.LazyFrame) -> str:
    """Each ranker's mean of each measure beside the spec's nDCG@K (``rows``: theirs alone),
    over the queries that have a number (as the nDCG@K means), and how many queries have
    none; summed in one streamed pass, the rows never held."""
    rows = measure_means(rows).iter_rows()
    lines = [f"{'ranker':<22} {'measure':<22} {'mean':>7} {'queries':>8} {'no number':>9}"]
    lines += [f"{ranker:<22} {measure:<22} {'n/a' if mean is None else f'{mean:.4f}':>7} "
              f"{n:>8} {none:>9}" for ranker, measure, mean, n, none in rows]
    return "\n".join(lines)


def _print_summary(summary: dict, out: Path | str) -> None:
    print(render_summary(summary))
    print(f"\nwrote {inside(out, PER_QUERY_FILE)} and {inside(out, SUMMARY_FILE)}")


def inside(folder: Location | str, name: str) -> Location | str:
    """``folder / name`` for a location, or a URL kept as written (Spark's)."""
    return f"{folder.rstrip('/')}/{name}" if isinstance(folder, str) else folder / name
