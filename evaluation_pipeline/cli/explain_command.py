"""``ndcg-eval explain``: the per-candidate trace of one number, per cutoff of the spec."""

from __future__ import annotations

import argparse
import json

from evaluation_pipeline.analysis.explain import explain
from evaluation_pipeline.cli.options import place, resolve_spec
from evaluation_pipeline.io.readers import read_candidates, read_judgments
from evaluation_pipeline.report.terminal import render_trace


def run(args: argparse.Namespace) -> int:
    spec = resolve_spec(args)
    judgments = read_judgments(place(args, args.judgments), args.format,
                               version=args.judgment_version)
    candidates = read_candidates(place(args, args.run), args.format, pool=args.pool)
    traces = [explain(candidates, judgments, spec, query_id=args.query, ranker=args.ranker,
                      cutoff=k) for k in spec.cutoffs]
    # Each trace names its grades; the pool and conventions behind it are the same for all.
    context = {"candidate_pool": str(candidates["candidate_pool"][0]), "spec_id": spec.spec_id,
               "conventions": spec.describe()}
    if args.json:
        print(json.dumps([{**t.to_dict(), **context} for t in traces], indent=2))
    else:
        print(f"pool {context['candidate_pool']}, spec {spec.spec_id}: {context['conventions']}\n")
        print("\n\n".join(render_trace(t) for t in traces))
    return 0
