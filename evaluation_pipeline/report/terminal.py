"""Readable terminal tables for summaries, reports, comparisons, diffs and traces; progress on
stderr."""

from __future__ import annotations

import sys
from pathlib import Path

from evaluation_pipeline.analysis.explain import Trace
from evaluation_pipeline.analysis.measure_trace import COLUMNS, MeasureTrace
from evaluation_pipeline.io.storage import AGGREGATES_FILE, HTML_FILE, REPORT_FILE
from evaluation_pipeline.measures.parse import parse_measure
from evaluation_pipeline.report.format import (
    TIER_HEADERS,
    adjusted_interval,
    adjusted_notes,
    floor_notes,
    holm_families,
    interval,
    number,
    p_shown,
    tier_cells,
    tiers_note,
)
from evaluation_pipeline.report.headline import (
    REPORT_VIEW,
    SUMMARY_VIEW,
    headline_table,
    measures_table,
)
from evaluation_pipeline.report.tables import aligned as table
from schemas.columns import measure_label, ndcg_name


def progress(stage: str, done: int, total: int) -> None:
    """A progress line on stderr: rewritten in place on a terminal, every 25% otherwise."""
    if sys.stderr.isatty():
        end = "\n" if done == total else ""
        print(f"\r{stage}: {done}/{total}", end=end, file=sys.stderr, flush=True)
    elif done == total or done % max(1, total // 4) == 0:
        print(f"{stage}: {done}/{total}", file=sys.stderr, flush=True)


def evaluated_lines(document: dict) -> list[str]:
    """What a summary or report is of: its inputs by name and hash, its spec and conventions."""
    lineage = document["lineage"]
    return [
        f"judgments {lineage['judgment_version']} (sha256 {lineage['judgments_sha256'][:12]}), "
        f"pool {lineage['candidate_pool']} (sha256 {lineage['pool_sha256'][:12]}), "
        f"spec {document['spec_id']}",
        f"conventions: {document['conventions']}",
    ]


def render_summary(summary: dict, measures: str | None = None) -> str:
    """summary.json (``ndcg-eval score``): macro means and status counts, no intervals;
    ``measures``, the rankers by every measure of the spec, first when given."""
    return "\n".join([*evaluated_lines(summary), "", *([measures, ""] if measures else []),
                      headline_table(summary["results"], SUMMARY_VIEW)])


def render_report(report: dict, out: Path | None = None) -> str:
    stats = report["statistics"]
    lines = [
        *evaluated_lines(report),
        f"intervals: {stats['ci_level']:.0%} bootstrap over queries, {stats['n_bootstrap']} "
        f"resamples, seed {stats['seed']}; weights: {report['weights']['description']}",
        "",
    ]
    by_measure = measures_table(report, "aligned")
    if by_measure:
        lines += [by_measure, ""]
    lines.append(headline_table(report["results"], REPORT_VIEW))
    if report.get("tiers"):
        lines += ["", table(TIER_HEADERS, [tier_cells(t) for t in report["tiers"]]),
                  tiers_note(stats.get("alpha"))]
    if report["comparison"]:
        lines += ["", render_comparison(report["comparison"],
                                        report["statistics"].get("power"))]
    if out is not None:
        lines += ["", f"wrote {out / HTML_FILE}, {out / REPORT_FILE}, {out / AGGREGATES_FILE}"
                  + (f" and {len(report['traces'])} traces" if report["traces"] else "")]
    return "\n".join(lines)


def render_comparison(comparison: dict, power: float | None = None) -> str:
    """The ranker pairs' table with its notes; ``power``: that of the detectable effects."""
    lines = [f"comparison: {comparison['kind']}; {comparison.get('pairs_compared', 'per ranker')}"
             f"; multiple comparisons: {comparison['multiple_comparisons']}"]
    if comparison.get("note"):
        lines.append(f"note: {comparison['note']}")
    across = comparison["kind"].startswith("rankers across")

    def pair_label(p: dict) -> str:
        if across:
            return f"{p['first']}: {comparison['pool_second']} vs {comparison['pool_first']}"
        return f"{p['second']} vs {p['first']}"

    # The spec's nDCG@K alone: its cutoff says which; with other measures, each by its name.
    ndcg_only = all(p.get("measure", ndcg_name(p["cutoff"])) == ndcg_name(p["cutoff"])
                    for p in comparison["pairs"])

    def which(p: dict) -> object:
        return p["cutoff"] if ndcg_only else measure_label(p["measure"], p["cutoff"])

    rows = []
    for p in comparison["pairs"]:
        label = pair_label(p)
        row = [label, which(p), p["n_paired"],
               number(p["mean_difference"], signed=True),
               interval([p["difference_low"], p["difference_high"]], signed=True),
               adjusted_interval(p), number(p.get("detectable_effect"), 3, missing=""),
               p_shown(p), p_shown(p, "p_value_holm"), p["wins"], p["losses"], p["ties"]]
        if across:
            row += [p.get("verdict", "").replace("_", " "),
                    number(p["mean_candidate_recall_first"], 3),
                    number(p["mean_candidate_recall_second"], 3)]
        rows.append(row)
    headers = ["pair", "K" if ndcg_only else "measure", "paired", "mean diff", "interval",
               "adjusted interval", "detectable", "p", "p holm", "better", "worse", "tied"]
    if across:
        headers += ["verdict", "recall first", "recall second"]
    lines += ["", table(headers, rows)]
    lines += [f"p holm: {family}" for family in holm_families(comparison["pairs"])]
    lines += floor_notes(comparison["pairs"])
    lines += adjusted_notes(comparison["pairs"], power)
    worst = [(p, r) for p in comparison["pairs"] for r in p["regressions"][:3]]
    if worst:
        lines += ["", "most regressed queries (up to 3 per pair):"]
        lines.append(table(
            ["pair", "K" if ndcg_only else "measure", "query_id", "first", "second",
             "difference"],
            [[pair_label(p), which(p), r["query_id"],
              number(r["ndcg_first"]), number(r["ndcg_second"]),
              number(r["difference"], signed=True)]
             for p, r in worst]))
    return "\n".join(lines)


def render_judgment_diff(diff: dict, grades_given: bool) -> str:
    lines = [f"judgments {diff['judgment_version_old']} -> {diff['judgment_version_new']} over "
             f"pool {diff['candidate_pool']} (same candidates: changes are due to grades alone)"]
    if grades_given:
        lines.append(f"documents: {diff['n_added']} added, {diff['n_removed']} removed, "
                     f"{diff['n_regraded']} regraded")
    else:
        lines.append("documents: give --judgments OLD NEW to list added, removed, regraded")
    change = diff["ndcg_change"]
    lines += ["", table(
        ["ranker", "K", "NDCG old", "over", "NDCG new", "over", "paired", "old, paired",
         "new, paired", "paired change", "status changed"],
        [[r["ranker"], r["cutoff"], number(r["macro_ndcg_old"]), r["n_old"],
          number(r["macro_ndcg_new"]), r["n_new"], r["n_paired"],
          number(r["paired_ndcg_old"]), number(r["paired_ndcg_new"]),
          number(r["paired_mean_change"], signed=True), r["n_status_changed"]]
         for r in change.iter_rows(named=True)])]
    lines.append("NDCG old and new: each over its own queries with a number (over); the paired "
                 "columns over the queries with a number in both (paired), whose change it is")
    statuses = diff["status_changes"]
    if statuses.height:
        lines += ["", "queries whose status changed:", table(
            ["ranker", "query_id", "K", "old", "new"],
            [[r["ranker"], r["query_id"], r["cutoff"], r["status_old"], r["status_new"]]
             for r in statuses.iter_rows(named=True)], left=2)]
    return "\n".join(lines)


def render_pool_diff(diff: dict) -> str:
    lines = [f"pools {diff['candidate_pool_old']} -> {diff['candidate_pool_new']} under "
             f"judgments {diff['judgment_version']}", ""]
    lines.append(table(["ranker", "candidates added", "removed"],
                       [list(r) for r in diff["candidate_changes"].iter_rows()]))
    lines += ["", table(
        ["ranker", "K", "recall old", "recall new", "change"],
        [[r["ranker"], r["cutoff"], number(r["mean_candidate_recall_old"], 3),
          number(r["mean_candidate_recall_new"], 3),
          number(r["candidate_recall_change"], 3, signed=True)]
         for r in diff["candidate_recall_change"].iter_rows(named=True)])]
    return "\n".join(lines)


def render_trace(trace: Trace) -> str:
    head = (f"query {trace.query_id}, ranker {trace.ranker}, "
            f"NDCG@{trace.cutoff} {number(trace.ndcg, 6)} (status {trace.status}); "
            f"DCG {number(trace.dcg, 6)} / ideal DCG {number(trace.ideal_dcg, 6)}; "
            f"judgments {trace.judgment_version}")
    return "\n".join([head, "", _candidates_table(trace.candidates, ["gain", "discount"]),
                      *_ideal_table(trace.ideal)])


def render_measure_trace(trace: MeasureTrace) -> str:
    """A measure's trace as the NDCG trace prints: the number and its formula, then each
    candidate's position and the measure's own terms (and nDCG's ideal order)."""
    head = (f"query {trace.query_id}, ranker {trace.ranker}, {trace.measure} "
            f"{number(trace.value, 6)} (status {trace.status}); {trace.formula}; "
            f"judgments {trace.judgment_version}")
    own = list(COLUMNS[parse_measure(trace.measure).name])
    return "\n".join([head, "", _candidates_table(trace.candidates, own),
                      *_ideal_table(trace.ideal)])


def _candidates_table(candidates, terms: list[str]) -> str:
    """One row per candidate: its rank, document, score, grade, the position the tie rule
    gives it (a tie group's span), the ``terms`` of the number and its contribution."""
    rows = []
    for r in candidates.iter_rows(named=True):
        if r["position_first"] is None:
            position = "-"
        elif r["position_first"] == r["position_last"]:
            position = str(r["position_first"])
        else:
            position = f"{r['position_first']}-{r['position_last']}"
        rows.append([r["rank"], r["doc_id"], f"{r['score']:g}", r["grade"], r["grade_status"],
                     position, *(_cell(r[term]) for term in terms), number(r["contribution"]),
                     r["note"]])
    return table(["#", "doc_id", "score", "grade", "status", "position",
                  *(term.replace("_", " ") for term in terms), "contrib", "note"], rows, left=2)


def _ideal_table(ideal) -> list[str]:
    """nDCG's ideal order under its heading (none for a measure without one)."""
    if ideal is None:
        return []
    rows = [[r["ideal_position"], r["doc_id"], number(r["gain"]), number(r["discount"]),
             number(r["contribution"])] for r in ideal.iter_rows(named=True)]
    return ["", "ideal order:",
            table(["position", "doc_id", "gain", "discount", "contrib"], rows, left=2)]


def _cell(value) -> str:
    """A term of a trace: a flag as yes or no, a count as it is, a number as numbers print."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    return number(value)
