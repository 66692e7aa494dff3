"""``ndcg-eval agreement``: how far a version's raters agree and, with a run, whether they rank
the rankers alike (``analysis.agreement``; the --json fields in REPORT_FORMAT.md)."""

from __future__ import annotations

import argparse
import json

from evaluation_pipeline.analysis.agreement import agreement, check_ratings
from evaluation_pipeline.cli.options import place, resolve_spec
from evaluation_pipeline.io.readers import read_candidates, read_judgments
from evaluation_pipeline.report.format import which_measure


def run(args: argparse.Namespace) -> int:
    spec = resolve_spec(args)
    source = place(args, args.judgments)
    ratings = read_judgments(source, args.format, version=args.judgment_version)
    check_ratings(ratings, spec, str(source))
    candidates = None if args.run is None else read_candidates(place(args, args.run),
                                                               args.format, pool=args.pool)
    document = agreement(ratings, spec, candidates)
    print(json.dumps(document, indent=2) if args.json else render(document))
    return 0


def _number(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def render(document: dict) -> str:
    """The agreement document as text: raters, pairs, the overall statistics, NDCG and tau."""
    lines = ["rater            kind     graded"]
    lines += [f"{r['rater']:<16} {r['rater_kind'] or '':<8} {r['graded']:>6}"
              for r in document["raters"]]
    lines += ["", "rater_a          rater_b          overlap   kappa  kappa_q2  mean a-b"]
    lines += [f"{p['rater_a']:<16} {p['rater_b']:<16} {p['overlap']:>7} "
              f"{_number(p['cohen_kappa']):>7} {_number(p['cohen_kappa_quadratic']):>9} "
              f"{_number(p['mean_difference'], 3):>9}" for p in document["pairs"]]
    lines += ["", f"Krippendorff's alpha: ordinal {_number(document['krippendorff_alpha_ordinal'])}"
              f", interval {_number(document['krippendorff_alpha_interval'])} (every rating)",
              f"Fleiss' kappa: {_number(document['fleiss_kappa'])} over the "
              f"{document['fleiss_documents']} documents every rater graded"]
    if "ndcg" in document:
        rule = f" (rule: {document['rule']})" if document["rule"] else ""
        # The headline measures: by default the spec's nDCG@K, named by K as before.
        named = "NDCG@K" if all(which_measure(n).isdigit() for n in document["ndcg"]) else (
            "the headline measures (K: the spec's nDCG@K)")
        lines += ["", f"{named} per ranker under each rater{rule}",
                  "rater            ranker            K    NDCG"]
        lines += [f"{n['rater']:<16} {n['ranker']:<16} {which_measure(n):>2}  "
                  f"{_number(n['mean'])}" for n in document["ndcg"]]
        lines += ["", "Kendall's tau-b between the raters' orders of the rankers",
                  "rater_a          rater_b           K     tau"]
        lines += [f"{t['rater_a']:<16} {t['rater_b']:<16} {which_measure(t):>2}  "
                  f"{_number(t['tau'])}" for t in document["kendall_tau"]]
    return "\n".join(lines)
