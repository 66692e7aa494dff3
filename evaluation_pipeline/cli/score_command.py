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
from evaluation_pipeline.report.tables import aligned
from evaluation_pipeline.report.terminal import progress, render_report, render_summary
from evaluation_pipeline.spec import EvaluationSpec
from schemas import InputError
from schemas.columns import PER_QUERY_KEY, spec_ndcg_rows
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
    side_by_side = (measures_side_by_side(_measure_rows(target, remote),
                                          [str(m) for m in spec.measure_list])
                    if spec.other_measures else None)
    print(render_summary(summary, side_by_side))
    print(f"\nwrote {inside(args.out, PER_QUERY_FILE)} and {inside(args.out, SUMMARY_FILE)}")
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


def _measure_rows(target: Location | str, remote: bool) -> pl.LazyFrame:
    """Every measure's rows (ranker, measure, value), as a scan (streamed where local)."""
    where = location(target) if remote else target
    columns = ["ranker", "measure", "value"]
    return (read_dataset(where, columns).lazy() if is_remote(where)
            else scan_dataset(where).select(columns))


def _rankers(per_query: pl.DataFrame) -> list[str]:
    return sorted(per_query["ranker"].unique().to_list())


def measures_side_by_side(rows: pl.LazyFrame, names: list[str]) -> str:
    """Rankers by measures, in the spec's order of ``names``, as TREC overviews and
    ir_measures' ``calc_aggregate`` print them: each cell a ranker's mean of a measure over the
    queries with a number (as the nDCG@K means), summed in one streamed pass, the rows never
    held. Under the table, how many queries each mean is over: the measures' populations differ
    when a measure leaves some queries without a number (contract section 4)."""
    means = {(ranker, measure): (mean, n, none)
             for ranker, measure, mean, n, none in measure_means(rows).iter_rows()}
    rankers = sorted({ranker for ranker, _ in means})
    body = [[ranker, *(_mean_cell(means.get((ranker, name))) for name in names)]
            for ranker in rankers]
    return "\n".join([aligned(["ranker", *names], body),
                      _populations({name: {means[r, name][1:] for r in rankers
                                           if (r, name) in means} for name in names})])


def _mean_cell(found: tuple | None) -> str:
    return "n/a" if found is None or found[0] is None else f"{found[0]:.4f}"


def _populations(counts: dict[str, set[tuple[int, int]]]) -> str:
    """Over how many queries each measure's means are: one sentence when every mean is over as
    many, else each measure's (a range where the rankers differ)."""
    def over(pairs: set[tuple[int, int]]) -> str:
        if not pairs:
            return "none"
        if len(pairs) == 1:
            (n, none), = pairs
            return f"{n} of {n + none}"
        numbers = sorted(n for n, _ in pairs)
        return f"{numbers[0]} to {numbers[-1]}"

    if len({frozenset(pairs) for pairs in counts.values()}) == 1 and all(
            len(pairs) == 1 for pairs in counts.values()):
        return (f"each mean over the {over(next(iter(counts.values())))} queries with a number; "
                "the others are counted apart by their status")
    return "queries with a number: " + ", ".join(f"{name} {over(pairs)}"
                                                  for name, pairs in counts.items())


def inside(folder: Location | str, name: str) -> Location | str:
    """``folder / name`` for a location, or a URL kept as written (Spark's)."""
    return f"{folder.rstrip('/')}/{name}" if isinstance(folder, str) else folder / name
