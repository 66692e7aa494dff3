"""``ndcg-eval holes``: the worklist of what to judge next (contract section 3, rule 8).

    ndcg-eval holes --judgments FILE --run FILE|DIR [--queries FILE] [--budget N]
                    [--spec FILE | --profile NAME] [--cutoff K ...] [--out FILE.csv]

Without --out the worklist is printed as a table; with it, it is written as a CSV file at once
(``io.atomic``), which once its grades are filled in is a judgment version. Every option is
checked before an input is read, so that a refused one leaves --out as it was.
"""

from __future__ import annotations

import argparse

import polars as pl

from evaluation_pipeline.analysis.worklist import WorklistError, narrowed_measures, worklist
from evaluation_pipeline.cli.options import place, resolve_spec
from evaluation_pipeline.io.atomic import atomic_write
from evaluation_pipeline.io.readers import read_candidates, read_judgments, read_queries
from evaluation_pipeline.measures.parse import parse_measure
from evaluation_pipeline.metric.hashing import judgments_sha256, pool_sha256
from evaluation_pipeline.report.format import number
from evaluation_pipeline.report.tables import aligned
from evaluation_pipeline.report.terminal import evaluated_lines
from schemas.columns import measure_label

CSV_SUFFIX = ".csv"


def label(measure: str) -> str:
    """A narrowed measure as the tables name it: the spec's nDCG@K as NDCG@K."""
    return measure_label(measure, parse_measure(measure).cutoff)


def run(args: argparse.Namespace) -> int:
    spec = resolve_spec(args)
    for name in ("judgments", "run", "queries", "out"):
        setattr(args, name, place(args, getattr(args, name)))
    _check_options(args)
    judgments = read_judgments(args.judgments, args.format, version=args.judgment_version)
    candidates = read_candidates(args.run, args.format, pool=args.pool, ranker=args.ranker,
                                 ranks=spec.needs_rank)
    queries = read_queries(args.queries) if args.queries else None
    listed = worklist(judgments, candidates, spec, queries, budget=args.budget)
    version = str(judgments["judgment_version"][0]) if judgments.height else "(empty)"
    rankers = sorted(candidates["ranker"].unique().to_list())
    weighted = "the queries table's weight" if queries is not None else "1 each"
    # The inputs by name and content hash, the spec and its conventions, as score prints them
    # (contract sections 4 and 5): the widths and narrowings below are numbers of these.
    print("\n".join(evaluated_lines({
        "lineage": {"judgment_version": version, "judgments_sha256": judgments_sha256(judgments),
                    "candidate_pool": candidates["candidate_pool"][0],
                    "pool_sha256": pool_sha256(candidates)},
        "spec_id": spec.spec_id, "conventions": spec.describe()})))
    print(f"holes by the narrowing their grades are expected to bring to the bounds of "
          f"{', '.join(map(label, narrowed_measures(spec)))}, over {len(rankers)} ranker"
          f"{'s' * (len(rankers) != 1)}; queries weigh {weighted}")
    if args.out is None:
        print()
        print(render_worklist(listed))
        return 0
    # Written by polars straight to the temporary file: the text of a large worklist (0.7 GB
    # at 10M rows) is never held in memory beside its frame.
    atomic_write(args.out, lambda tmp: listed.write_csv(tmp))
    print(f"wrote {args.out} ({listed.height} holes): fill in its grade column, then land it "
          "as a judgment version")
    return 0


def _check_options(args: argparse.Namespace) -> None:
    """A budget below 1, an --out that is not a new or existing .csv file, or one that is an
    input, is refused before anything is read or written."""
    if args.budget is not None and args.budget < 1:
        raise WorklistError(f"--budget {args.budget}: give a number of holes >= 1")
    if args.out is None:
        return
    if args.out.is_dir():
        raise WorklistError(f"--out {args.out} is a folder: name the worklist's file")
    if args.out.suffix.lower() != CSV_SUFFIX:
        raise WorklistError(f"--out {args.out}: the worklist is a CSV file (name it "
                            f"*{CSV_SUFFIX}), the format a judgment version is landed in")
    if any(args.out == given for given in (args.judgments, args.run, args.queries)):
        raise WorklistError(f"--out {args.out} is one of the inputs: name another file")


def render_worklist(listed: pl.DataFrame) -> str:
    """The worklist as a terminal table (the file has every column, query_text among them)."""
    if listed.height == 0:
        return "no holes: every candidate of every judged query is graded"
    rows = [(row["priority"], row["query_id"], row["doc_id"], row["rankers"] or "-",
             row["best_position"] or "-", number(row["bound_width"], 3),
             number(row["expected_narrowing"], 5), number(row["guaranteed_narrowing"], 5))
            for row in listed.iter_rows(named=True)]
    return aligned(["priority", "query_id", "doc_id", "top-K rankers", "best", "width",
                    "expected", "guaranteed"], rows, left=4)
