"""``ndcg-eval reconcile``: how much each convention moves the mean between two specs.

    ndcg-eval reconcile --judgments FILE --run FILE|DIR --from SPEC --to SPEC
                        [--cutoff K ...] [--queries FILE] [--order F1,F2,...]
                        [--shapley] [--sensitivity] [--json [FILE]]

SPEC is a profile name or a YAML/TOML spec file. The inputs are read once; every spec of the
walk, of the Shapley subsets and of the sensitivity table is scored on them in memory.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluation_pipeline.core.reconcile import (
    MAX_ROW_SCORINGS,
    ReconcileError,
    Scorer,
    plan,
    reconcile,
)
from evaluation_pipeline.engines.local import read_and_evaluate
from evaluation_pipeline.io.atomic import json_text, write_json
from evaluation_pipeline.io.readers import FORMATS, read_queries
from evaluation_pipeline.report.reconcile_view import render_reconcile
from evaluation_pipeline.spec import PROFILES, EvaluationSpec, SpecError, load_spec


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "reconcile",
        help="walk from one spec to another field by field: what each convention does to the mean",
    )
    parser.add_argument("--judgments", required=True, type=Path, help="judgment version file")
    parser.add_argument("--run", required=True, type=Path,
                        help="run file, or a pool folder with one run file per ranker")
    parser.add_argument("--from", dest="source", required=True, metavar="SPEC",
                        help=f"profile ({', '.join(PROFILES)}) or spec file to start from")
    parser.add_argument("--to", dest="target", metavar="SPEC",
                        help="profile or spec file to walk to (optional with --sensitivity)")
    parser.add_argument("--cutoff", type=int, action="append", metavar="K",
                        help="compare at NDCG@K; repeat for several (needed when the two specs' "
                        "cutoffs differ)")
    parser.add_argument("--queries", type=Path, help="query weights: adds the weighted mean")
    parser.add_argument("--order", metavar="F1,F2,...",
                        help="fields to walk first, in this order (default: spec field order)")
    parser.add_argument("--shapley", action="store_true",
                        help="each field's mean contribution over all orders (scores 2^n specs; "
                        f"refused past {MAX_ROW_SCORINGS:,} row scorings)")
    parser.add_argument("--sensitivity", action="store_true",
                        help="from --from, each field set to each alternative, one at a time")
    parser.add_argument("--json", nargs="?", const="-", metavar="FILE",
                        help="the same as a JSON document: on stdout, or written to FILE")
    parser.add_argument("--format", choices=FORMATS, help="format of every input file")
    parser.add_argument("--judgment-version", help="version name when the file carries none")
    parser.add_argument("--pool", help="candidate pool name when the file carries none")
    parser.add_argument("--ranker", help="ranker name for a run file without one")
    return parser


def spec_named(text: str) -> EvaluationSpec:
    """A profile by name, otherwise a spec file."""
    if text in PROFILES:
        return PROFILES[text]
    if not Path(text).is_file():
        raise SpecError(f"{text!r} is neither a profile ({', '.join(PROFILES)}) nor a spec file")
    return load_spec(text)


def run(args: argparse.Namespace) -> int:
    if args.target is None and not args.sensitivity:
        raise ReconcileError("give --to SPEC to walk to, or --sensitivity to vary --from alone")
    target = spec_named(args.target) if args.target else None
    # Cutoffs and order are checked before the inputs are read.
    the_plan = plan(spec_named(args.source), target, cutoffs=args.cutoff,
                    order=args.order.split(",") if args.order else None,
                    source_label=args.source, target_label=args.target or "")
    judgments, pool, rows, lineage = read_and_evaluate(
        args.judgments, args.run, the_plan.source,
        judgments_format=args.format, run_format=args.format,
        judgment_version=args.judgment_version,
        pool=args.pool, ranker=args.ranker)
    queries = read_queries(args.queries) if args.queries else None
    scorer = Scorer(judgments, pool, queries, lineage)
    scorer.add(the_plan.source, rows)
    document = reconcile(scorer, the_plan, shapley=args.shapley, sensitivity=args.sensitivity)
    if args.json == "-":
        print(json_text(document), end="")
        return 0
    print(render_reconcile(document))
    if args.json:
        write_json(document, args.json)
        print(f"\nwrote {args.json}")
    return 0
