"""``ndcg-eval gate``: would a version with a judge's ratings be promoted to the nightly's
headline? (``judging.gate``; docs/judging.md, The gate).

    ndcg-eval gate --judgments FILE [--run FILE|DIR] [--spec FILE] [--min-kappa K]
                   [--min-tau T] [--min-overlap N] [--json]

Each threshold left out is its setting's (NDCG_EVAL_GATE_MIN_KAPPA, _MIN_TAU, _MIN_OVERLAP).
Exit status 0: promoted; 3: refused (the reason printed); 2: bad input, as every command.
"""

from __future__ import annotations

import argparse
import json

from evaluation_pipeline.cli.options import place, resolve_spec
from evaluation_pipeline.io.readers import read_candidates, read_judgments
from evaluation_pipeline.judging.gate import Thresholds, Verdict, gate
from evaluation_pipeline.report.format import which_measure

# Not 1 (a write that failed) nor 2 (bad input): a script tells a refusal apart.
EXIT_REFUSED = 3


def run(args: argparse.Namespace) -> int:
    thresholds = Thresholds.declared(min_kappa=args.min_kappa, min_tau=args.min_tau,
                                     min_overlap=args.min_overlap)
    spec = resolve_spec(args)
    source = place(args, args.judgments)
    ratings = read_judgments(source, args.format, version=args.judgment_version)
    candidates = None if args.run is None else read_candidates(place(args, args.run),
                                                               args.format, pool=args.pool)
    verdict = gate(ratings, spec, candidates, thresholds, str(source))
    print(json.dumps(verdict.to_dict(), indent=2) if args.json else render(verdict))
    return 0 if verdict.promoted else EXIT_REFUSED


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def render(verdict: Verdict) -> str:
    """The verdict as text: the pairs, the taus, the thresholds, then the decision."""
    t = verdict.thresholds
    lines = [f"judges: {', '.join(verdict.judges) or 'none'}; people: "
             f"{', '.join(verdict.people) or 'none'}"]
    if verdict.pairs:
        lines += ["", "judge            person           overlap  kappa_q2  decides"]
        lines += [f"{p['judge']:<16} {p['person']:<16} {p['overlap']:>7} "
                  f"{_number(p['kappa_quadratic']):>9}  {'yes' if p['decides'] else 'no'}"
                  for p in verdict.pairs]
    if verdict.taus:
        lines += ["", "Kendall's tau of the rankers' orders under people's grades "
                  f"({verdict.people_rule}) and the judge's, over the documents both graded",
                  "judge             K  documents     tau"]
        lines += [f"{x['judge']:<16} {which_measure(x):>2}  {x['documents']:>9}  "
                  f"{_number(x['tau']):>6}" for x in verdict.taus]
        lines += ["", f"shown, not deciding: people alone vs the combined version ({verdict.rule})"
                  " over every document: " + ", ".join(
                      f"K={which_measure(x)} tau {_number(x['tau'])}"
                      for x in verdict.taus_combined)]
    lines += ["", f"thresholds: kappa >= {t.min_kappa:g}, tau >= {t.min_tau:g}, overlap >= "
              f"{t.min_overlap}", verdict.reason]
    return "\n".join(lines)
