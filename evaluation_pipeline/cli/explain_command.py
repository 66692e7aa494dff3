"""``ndcg-eval explain``: the per-candidate trace of one number, per cutoff of the spec, or of
each measure --measure names."""

from __future__ import annotations

import argparse
import json

from evaluation_pipeline.analysis.explain import Trace, explain
from evaluation_pipeline.analysis.measure_trace import (
    explain_measures,
    is_spec_ndcg,
    scoring_spec,
)
from evaluation_pipeline.cli.options import place
from evaluation_pipeline.io.readers import read_candidates, read_judgments
from evaluation_pipeline.measures.parse import Measure, MeasureError, parse_measure
from evaluation_pipeline.report.terminal import render_measure_trace, render_trace
from evaluation_pipeline.spec import EvaluationSpec, load_spec, overridden, profile


def run(args: argparse.Namespace) -> int:
    measures = [parse_measure(name) for name in dict.fromkeys(args.measure or ())]
    spec = _spec(args, measures)
    judgments = read_judgments(place(args, args.judgments), args.format,
                               version=args.judgment_version)
    candidates = read_candidates(place(args, args.run), args.format, pool=args.pool)
    if measures and not all(map(is_spec_ndcg, measures)):
        traces = explain_measures(candidates, judgments, spec,
                                  [(args.ranker, args.query, m) for m in measures])
    else:  # NDCG alone: one trace per cutoff of the spec
        traces = [explain(candidates, judgments, spec, query_id=args.query,
                          ranker=args.ranker, cutoff=k) for k in spec.cutoffs]
    # Each trace names its grades; the pool and conventions behind it are the same for all.
    context = {"candidate_pool": str(candidates["candidate_pool"][0]), "spec_id": spec.spec_id,
               "conventions": spec.describe()}
    if args.json:
        print(json.dumps([{**t.to_dict(), **context} for t in traces], indent=2))
    else:
        print(f"pool {context['candidate_pool']}, spec {spec.spec_id}: {context['conventions']}\n")
        print("\n\n".join(render_trace(t) if isinstance(t, Trace) else render_measure_trace(t)
                          for t in traces))
    return 0


def _spec(args: argparse.Namespace, measures: list[Measure]) -> EvaluationSpec:
    """The spec of --spec or --profile, its nDCG@K replaced by --cutoff's; with --measure,
    the spec that scores those measures (their plain nDCG@K its cutoffs, else the spec's own
    beside them). --cutoff beside --measure must be the measures' own cutoffs."""
    spec = load_spec(args.spec) if args.spec else profile(args.profile or "default")
    if not measures:
        return overridden(spec, args.cutoff or None)
    if args.cutoff:
        own = {m.cutoff for m in measures}
        if own != set(args.cutoff):
            names = ", ".join(map(str, measures))
            raise MeasureError(
                f"--cutoff {' '.join(map(str, args.cutoff))} and --measure {names} disagree: "
                "each measure names its own cutoff; give --measure alone (NAME@K for a "
                "cutoff K)")
    if any(map(is_spec_ndcg, measures)):
        return overridden(spec, None, [str(m) for m in measures])
    return scoring_spec(spec, measures)
