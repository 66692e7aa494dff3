"""``ndcg-eval reconcile``: how much each convention moves the mean between two specs.

    ndcg-eval reconcile --judgments FILE --run FILE|DIR --from SPEC --to SPEC
                        [--cutoff K ...] [--queries FILE] [--order F1,F2,...]
                        [--shapley] [--sensitivity] [--json [FILE]]

SPEC is a profile name or a YAML/TOML spec file. The inputs are read once; every spec of the
walk, of the Shapley subsets and of the sensitivity table is scored on them in memory.
"""

from __future__ import annotations

import argparse

from evaluation_pipeline.analysis.reconcile import (
    ReconcileError,
    Scorer,
    plan,
    reconcile,
)
from evaluation_pipeline.cli.options import place
from evaluation_pipeline.engines import ScoringInputs
from evaluation_pipeline.engines.local import read_and_evaluate
from evaluation_pipeline.io.atomic import json_text, write_json
from evaluation_pipeline.io.readers import read_queries
from evaluation_pipeline.io.spec_files import spec_named
from evaluation_pipeline.report.reconcile_view import render_reconcile


def run(args: argparse.Namespace) -> int:
    if args.target is None and not args.sensitivity:
        raise ReconcileError("give --to SPEC to walk to, or --sensitivity to vary --from alone")
    target = spec_named(args.target) if args.target else None
    # Cutoffs and order are checked before the inputs are read.
    the_plan = plan(spec_named(args.source), target, cutoffs=args.cutoff,
                    order=args.order.split(",") if args.order else None,
                    source_label=args.source, target_label=args.target or "")
    # The run's ranks are read and checked when a spec of the walk orders ties by them, and
    # kept when present for the sensitivity table's `ties: rank`.
    needs_rank = the_plan.source.needs_rank or (target is not None and target.needs_rank)
    inputs = ScoringInputs(place(args, args.judgments), place(args, args.run),
                           judgments_format=args.format, run_format=args.format,
                           judgment_version=args.judgment_version, pool=args.pool,
                           ranker=args.ranker)
    judgments, pool, rows, lineage = read_and_evaluate(inputs, the_plan.source,
                                                       ranks=needs_rank,
                                                       display=args.sensitivity)
    queries = read_queries(place(args, args.queries)) if args.queries else None
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
