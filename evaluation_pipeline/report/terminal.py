"""Readable terminal tables for reports, comparisons, diffs and traces; progress on stderr."""

from __future__ import annotations

import sys
from pathlib import Path

from evaluation_pipeline.core.explain import Trace


def progress(stage: str, done: int, total: int) -> None:
    """A progress line on stderr: rewritten in place on a terminal, every 25% otherwise."""
    if sys.stderr.isatty():
        end = "\n" if done == total else ""
        print(f"\r{stage}: {done}/{total}", end=end, file=sys.stderr, flush=True)
    elif done == total or done % max(1, total // 4) == 0:
        print(f"{stage}: {done}/{total}", file=sys.stderr, flush=True)


def table(headers: list[str], rows: list[list], left: int = 1) -> str:
    """Plain aligned columns: the first ``left`` columns left-aligned, the rest right."""
    cells = [[("n/a" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]

    def line(values: list[str]) -> str:
        return "  ".join(
            v.ljust(w) if i < left else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths))
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, cells)])


def _num(value: float | None, digits: int = 4) -> str | None:
    return None if value is None else f"{value:.{digits}f}"


def _interval(pair: list, digits: int = 3, signed: bool = False) -> str:
    if pair[0] is None:
        return ""
    fmt = f"{{:+.{digits}f}}" if signed else f"{{:.{digits}f}}"
    return f"[{fmt.format(pair[0])}, {fmt.format(pair[1])}]"


def render_report(report: dict, out: Path | None = None) -> str:
    lineage = report["lineage"]
    stats = report["statistics"]
    lines = [
        f"judgments {lineage['judgment_version']} (sha256 {lineage['judgments_sha256'][:12]}), "
        f"pool {lineage['candidate_pool']} (sha256 {lineage['pool_sha256'][:12]}), "
        f"spec {report['spec_id']}",
        f"conventions: {report['conventions']}",
        f"intervals: {stats['ci_level']:.0%} bootstrap over queries, {stats['n_bootstrap']} "
        f"resamples, seed {stats['seed']}; weights: {report['weights']['description']}",
        "",
    ]
    rows = []
    for r in report["results"]:
        c = r["status_counts"]
        rows.append([
            r["ranker"], r["cutoff"], _num(r["macro_ndcg"]), _interval(r["macro_ndcg_interval"]),
            _num(r["weighted_ndcg"]), r["n_with_number"], r["n_queries"], c["no_positive"],
            c["incomplete"], c["not_judged"], c["missing_from_run"],
        ])
    lines.append(table(
        ["ranker", "K", "NDCG", "interval", "weighted", "with_num", "queries", "no_pos",
         "incompl", "notjudg", "missing"], rows))
    if report["comparison"]:
        lines += ["", render_comparison(report["comparison"])]
    if out is not None:
        lines += ["", f"wrote {out / 'report.html'}, {out / 'report.json'}, "
                      f"{out / 'aggregates.parquet'}"
                  + (f" and {len(report['traces'])} traces" if report["traces"] else "")]
    return "\n".join(lines)


def render_comparison(comparison: dict) -> str:
    lines = [f"comparison: {comparison['kind']}; {comparison.get('pairs_compared', 'per ranker')}"
             f"; multiple comparisons: {comparison['multiple_comparisons']}"]
    if comparison.get("note"):
        lines.append(f"note: {comparison['note']}")
    across = comparison["kind"].startswith("rankers across")

    def pair_label(p: dict) -> str:
        if across:
            return f"{p['first']}: {comparison['pool_second']} vs {comparison['pool_first']}"
        return f"{p['second']} vs {p['first']}"

    rows = []
    for p in comparison["pairs"]:
        label = pair_label(p)
        row = [label, p["cutoff"], p["n_paired"],
               None if p["mean_difference"] is None else f"{p['mean_difference']:+.4f}",
               _interval([p["difference_low"], p["difference_high"]], signed=True),
               f"{p['p_value']:.4f}", _num(p["p_value_holm"]), p["wins"], p["losses"], p["ties"]]
        if across:
            row += [_num(p["mean_candidate_recall_first"], 3),
                    _num(p["mean_candidate_recall_second"], 3)]
        rows.append(row)
    headers = ["pair", "K", "paired", "mean diff", "interval", "p", "p holm", "better",
               "worse", "tied"]
    if across:
        headers += ["recall first", "recall second"]
    lines += ["", table(headers, rows)]
    worst = [(p, r) for p in comparison["pairs"] for r in p["regressions"][:3]]
    if worst:
        lines += ["", "most regressed queries (up to 3 per pair):"]
        lines.append(table(
            ["pair", "K", "query_id", "first", "second", "difference"],
            [[pair_label(p), p["cutoff"], r["query_id"],
              _num(r["ndcg_first"]), _num(r["ndcg_second"]), f"{r['difference']:+.4f}"]
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
        ["ranker", "K", "NDCG old", "NDCG new", "paired", "paired change", "status changed"],
        [[r["ranker"], r["cutoff"], _num(r["macro_ndcg_old"]), _num(r["macro_ndcg_new"]),
          r["n_paired"], None if r["paired_mean_change"] is None
          else f"{r['paired_mean_change']:+.4f}", r["n_status_changed"]]
         for r in change.iter_rows(named=True)])]
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
        [[r["ranker"], r["cutoff"], _num(r["mean_candidate_recall_old"], 3),
          _num(r["mean_candidate_recall_new"], 3),
          None if r["candidate_recall_change"] is None
          else f"{r['candidate_recall_change']:+.3f}"]
         for r in diff["candidate_recall_change"].iter_rows(named=True)])]
    return "\n".join(lines)


def render_trace(trace: Trace) -> str:
    ndcg = "n/a" if trace.ndcg is None else f"{trace.ndcg:.6f}"
    head = (f"query {trace.query_id}, ranker {trace.ranker}, NDCG@{trace.cutoff} {ndcg} "
            f"(status {trace.status}); DCG {trace.dcg:.6f} / ideal DCG {trace.ideal_dcg:.6f}; "
            f"judgments {trace.judgment_version}")
    rows = []
    for r in trace.candidates.iter_rows(named=True):
        if r["position_first"] is None:
            position = "-"
        elif r["position_first"] == r["position_last"]:
            position = str(r["position_first"])
        else:
            position = f"{r['position_first']}-{r['position_last']}"
        rows.append([r["rank"], r["doc_id"], f"{r['score']:g}", r["grade"], r["grade_status"],
                     position, _num(r["gain"]), _num(r["discount"]), f"{r['contribution']:.4f}",
                     r["note"]])
    ideal = [[r["ideal_position"], r["doc_id"], f"{r['gain']:.4f}", f"{r['discount']:.4f}",
              f"{r['contribution']:.4f}"] for r in trace.ideal.iter_rows(named=True)]
    return "\n".join([
        head, "",
        table(["#", "doc_id", "score", "grade", "status", "position", "gain", "discount",
               "contrib", "note"], rows, left=2),
        "", "ideal order:",
        table(["position", "doc_id", "gain", "discount", "contrib"], ideal, left=2),
    ])
