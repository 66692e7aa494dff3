"""``ndcg-eval reconcile``: how much each convention moves the mean between two specs.

    ndcg-eval reconcile --judgments FILE --run FILE|DIR --from SPEC --to SPEC
                        [--cutoff K ...] [--queries FILE] [--order F1,F2,...]
                        [--measure NAME [--to-measure NAME]]
                        [--shapley] [--sensitivity] [--json [FILE]]

SPEC is a profile name or a YAML/TOML spec file. The inputs are read once; every spec of the
walk, of the Shapley subsets and of the sensitivity table is scored on them in memory.
``--measure`` compares that measure instead of NDCG@K (``--to-measure``: another of its
family on the --to side; without --to, within the --from spec), and the walk steps through
the measure's differing parameters too (``analysis.reconcile_measures``).
"""

from __future__ import annotations

import argparse

from evaluation_pipeline.analysis.reconcile import (
    ReconcileError,
    Scorer,
    plan,
    reconcile,
)
from evaluation_pipeline.analysis.reconcile_measures import (
    MeasureScorer,
    plan_measure_walk,
    reconcile_measure,
)
from evaluation_pipeline.cli.options import place
from evaluation_pipeline.engines import ScoringInputs
from evaluation_pipeline.engines.local import read_and_evaluate
from evaluation_pipeline.io.atomic import json_text, write_json
from evaluation_pipeline.io.readers import read_queries
from evaluation_pipeline.io.spec_files import spec_named
from evaluation_pipeline.report import reconcile_view
from evaluation_pipeline.report.reconcile_view import render_reconcile


def run(args: argparse.Namespace) -> int:
    measure, to_measure = args.measure, args.to_measure
    if measure is not None or to_measure is not None:
        return _run_measure(args, measure, to_measure)
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
    judgments, pool, rows, lineage = read_and_evaluate(_inputs(args), the_plan.source,
                                                       ranks=needs_rank,
                                                       display=args.sensitivity)
    scorer = Scorer(judgments, pool, _queries(args), lineage)
    scorer.add(the_plan.source, rows)
    document = reconcile(scorer, the_plan, shapley=args.shapley, sensitivity=args.sensitivity)
    return _print(args, document, render_reconcile)


def _run_measure(args: argparse.Namespace, measure: str | None, to_measure: str | None) -> int:
    if args.sensitivity:
        raise ReconcileError("--sensitivity varies the spec's fields for NDCG@K; with "
                             "--measure give --to SPEC or --to-measure NAME to walk to")
    if args.target is None and to_measure is None:
        raise ReconcileError("give --to SPEC or --to-measure NAME to walk to")
    target = spec_named(args.target) if args.target else None
    # Measures, cutoffs and order are checked before the inputs are read.
    the_plan = plan_measure_walk(spec_named(args.source), target, measure, to_measure,
                                 cutoffs=args.cutoff,
                                 order=args.order.split(",") if args.order else None,
                                 source_label=args.source, target_label=args.target or "")
    start = the_plan.step_spec(())
    needs_rank = start.needs_rank or the_plan.target.needs_rank
    judgments, pool, rows, lineage = read_and_evaluate(_inputs(args), start, ranks=needs_rank)
    scorer = MeasureScorer(judgments, pool, _queries(args), lineage)
    scorer.add(start, rows)
    document = reconcile_measure(scorer, the_plan, shapley=args.shapley)
    return _print(args, document, render_measure_reconcile)


def _inputs(args: argparse.Namespace) -> ScoringInputs:
    return ScoringInputs(place(args, args.judgments), place(args, args.run),
                         judgments_format=args.format, run_format=args.format,
                         judgment_version=args.judgment_version, pool=args.pool,
                         ranker=args.ranker)


def _queries(args: argparse.Namespace):
    return read_queries(place(args, args.queries)) if args.queries else None


def _print(args: argparse.Namespace, document: dict, render) -> int:
    if args.json == "-":
        print(json_text(document), end="")
        return 0
    print(render(document))
    if args.json:
        write_json(document, args.json)
        print(f"\nwrote {args.json}")
    return 0


# -- the terminal form of a measure walk -------------------------------------------------------
# The walk table is report.reconcile_view's, fed the measure's numbers under the names it reads
# (its macro_ndcg columns hold the measure's macro_value here): one table for both walks.

# How a parameter the measure leaves to its default behaviour reads in "before -> after".
_UNSET = {"cutoff": "none", "dcg": "spec gain", "rel": "graded"}


def render_measure_reconcile(document: dict) -> str:
    source, target, walk = document["from"], document["to"], document["walk"]
    lineage, measures = document["lineage"], document["measures"]
    lines = [
        f"judgments {lineage['judgment_version']} (sha256 {lineage['judgments_sha256'][:12]}), "
        f"pool {lineage['candidate_pool']} (sha256 {lineage['pool_sha256'][:12]}), "
        f"{measures['from']} -> {measures['to']}",
        f"from {source['name']} (spec {source['spec_id']}), {source['measure']} to "
        f"{target['name']} (spec {target['spec_id']}), {target['measure']}",
    ]
    if not walk["order"]:
        lines.append("the two sides agree on every field and parameter: nothing to walk")
    else:
        lines.append(f"order ({walk['order_source']}): {', '.join(walk['order'])}; fields and "
                     "parameters that agree are not steps")
    if walk["not_applicable"]:
        lines.append(f"not steps, they do not apply to {measures['family']}: " + "; ".join(
            f"{f['field']} ({f['why']}"
            + (f"; {_shown(f['before'])} -> {_shown(f['after'])})" if f["differs"] else ")")
            for f in walk["not_applicable"]))
    shapley = {r["ranker"]: r for r in (walk["shapley"] or {}).get("results", [])}
    if walk["shapley"] is not None:
        n = walk["shapley"]["n_scorings"]
        lines.append(f"shapley: each step's mean contribution over all orders "
                     f"({n} spec{'s' if n != 1 else ''} scored)")
    for result in walk["results"]:
        lines += ["", f"{result['ranker']}, {measures['from']} -> {measures['to']}",
                  reconcile_view.walk_table(_as_walk_rows(result), shapley.get(
                      result["ranker"]), document["weights"], walk["shapley"] is not None)]
    return "\n".join(lines)


def _as_walk_rows(result: dict) -> dict:
    def numbers(row: dict) -> dict:
        return {**row, "macro_ndcg": row["macro_value"], "weighted_ndcg": row["weighted_value"]}

    def step(row: dict) -> dict:
        unset = _UNSET.get(row["field"], "not given") if row["kind"] == "measure" else "None"
        movers = [{**m, "ndcg_before": m["value_before"], "ndcg_after": m["value_after"]}
                  for m in row["movers"]]
        return {**numbers(row), "movers": movers,
                "before": _shown(row["before"], unset), "after": _shown(row["after"], unset)}

    return {**result, "start": numbers(result["start"]), "end": numbers(result["end"]),
            "steps": [step(row) for row in result["steps"]]}


def _shown(value, unset: str = "None") -> str:
    return unset if value is None else reconcile_view.shown_value(value)

