"""report.html: one self-contained page (inline CSS and SVG, no scripts, nothing fetched)."""

from __future__ import annotations

from html import escape

from evaluation_pipeline.report import svg
from evaluation_pipeline.report.format import interval, number
from evaluation_pipeline.spec import FIELD_DOCS

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1250px;
color:#222;line-height:1.45;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
.headline{background:#f4f7fb;border-left:4px solid #1f5fa8;padding:.6rem 1rem}
.headline p{margin:.3rem 0}.note{color:#8a4b00}
table{border-collapse:collapse;margin:.5rem 0;font-size:.85rem}
th,td{border-bottom:1px solid #e3e3e3;padding:.25rem .4rem;text-align:right}td{white-space:nowrap}
th:first-child,td:first-child{text-align:left}
code{font-size:.85rem}.chart text{font-size:11px;fill:#333}dl{display:grid;
grid-template-columns:max-content auto;gap:.2rem 1rem}dt{font-weight:600}dd{margin:0}
"""

# Inline, so that pages without a nightly section keep their stylesheet byte for byte.
VERDICT_STYLES = {"regressed": "color:#c0392b;font-weight:600", "improved": "color:#2e8b57"}

STATUS_LABELS = (
    ("scored", "scored"), ("no_positive", "no positive"), ("incomplete", "incomplete"),
    ("not_judged", "not judged"), ("missing_from_run", "missing from run"),
)


def render_html(report: dict, differences: dict) -> str:
    lineage = report["lineage"]
    title = f"NDCG report: {lineage['judgment_version']} x {lineage['candidate_pool']}"
    body = [f"<h1>{escape(title)}</h1>", '<section class="headline" id="headline">']
    body += [f'<p class="sentence">{escape(s)}</p>' for s in report["headline"]]
    comparison = report.get("comparison")
    if comparison and comparison.get("note"):
        body.append(f'<p class="note">{escape(comparison["note"])}</p>')
    body.append("</section>")
    body += _conventions(report)
    for cutoff in report["spec"]["cutoffs"]:
        body += _cutoff_table(report, cutoff)
    body += _charts(report, differences)
    if comparison:
        body += _comparison(report, comparison)
    if report.get("nightly"):
        body += _nightly(report["nightly"])
    body += _lineage(report)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        + "\n".join(body) + "</body></html>\n"
    )


def _conventions(report: dict) -> list[str]:
    out = ["<h2>Declared conventions</h2>", f"<p>{escape(report['conventions'])}.</p>", "<dl>"]
    for name, value in report["spec"].items():
        out.append(f"<dt>{escape(name)} = <code>{escape(str(value))}</code></dt>"
                   f"<dd>{escape(FIELD_DOCS.get(name, ''))}</dd>")
    stats = report["statistics"]
    out.append("</dl><p>Means are over queries with a number; the status counts say why the "
               f"others are apart. Weights: {escape(report['weights']['description'])}. "
               f"Intervals: {stats['ci_level']:.0%} {escape(stats['interval_method'])}, "
               f"{stats['n_bootstrap']} resamples, seed {stats['seed']}.</p>")
    return out


def _cutoff_table(report: dict, cutoff: int) -> list[str]:
    rows = [r for r in report["results"] if r["cutoff"] == cutoff]
    head = ("<tr><th>ranker</th><th>NDCG (macro)</th><th>interval</th><th>weighted</th>"
            "<th>interval</th><th>with number</th><th>queries</th>"
            + "".join(f"<th>{label}</th>" for _, label in STATUS_LABELS)
            + "<th>judged@K</th><th>cand. recall</th></tr>")
    out = [f'<h2 id="ndcg-{cutoff}">NDCG@{cutoff}</h2>', f'<table class="results">{head}']
    for r in rows:
        attrs = f'data-ranker="{escape(r["ranker"])}" data-cutoff="{cutoff}"'
        out.append(
            f"<tr><td>{escape(r['ranker'])}</td>"
            f'<td data-field="macro_ndcg" {attrs}>{number(r["macro_ndcg"])}</td>'
            f"<td>{interval(r['macro_ndcg_interval'], 4)}</td>"
            f'<td data-field="weighted_ndcg" {attrs}>{number(r["weighted_ndcg"])}</td>'
            f"<td>{interval(r['weighted_ndcg_interval'], 4)}</td>"
            f'<td data-field="n_with_number" {attrs}>{r["n_with_number"]}</td>'
            f"<td>{r['n_queries']}</td>"
            + "".join(f'<td data-field="n_{s}" {attrs}>{r["status_counts"][s]}</td>'
                      for s, _ in STATUS_LABELS)
            + f"<td>{number(r['mean_judged_at_k'], 3)}</td>"
            f"<td>{number(r['mean_candidate_recall'], 3)}</td></tr>"
        )
    out.append("</table>")
    return out


def _charts(report: dict, differences: dict) -> list[str]:
    cutoff = report["headline_cutoff"]
    out = ["<h2>Charts</h2>", f"<h3>NDCG per ranker with {report['statistics']['ci_level']:.0%} "
           "intervals</h3>"]
    rows = [(f"{r['ranker']} @{r['cutoff']}", r["macro_ndcg"], *r["macro_ndcg_interval"])
            for r in report["results"]]
    out.append(svg.interval_chart(rows, "macro NDCG per ranker and cutoff"))
    rankers = report["rankers"]
    for column in report["slices"]:
        rows = [r for r in report["slice_results"]
                if r["slice_column"] == column and r["cutoff"] == cutoff]
        values = sorted({r["slice_value"] for r in rows})
        groups = [(value, [(r["ranker"], r["macro_ndcg"], r["n_with_number"])
                           for r in rows if r["slice_value"] == value]) for value in values]
        out.append(f"<h3>NDCG@{cutoff} by {escape(column)}</h3>")
        out.append(svg.grouped_bars(groups, rankers, f"NDCG@{cutoff} by {column}"))
    for (first, second, k), histogram in differences.items():
        if k != cutoff:
            continue
        out.append(f"<h3>Per-query NDCG@{k} difference, {escape(second)} minus "
                   f"{escape(first)} ({histogram.n} queries)</h3>")
        out.append(svg.histogram(*histogram.chart_bins(), f"{second} minus {first} at {k}"))
    return out


def _comparison(report: dict, comparison: dict) -> list[str]:
    stats = report["statistics"]
    out = ["<h2>Ranker comparison</h2>",
           f"<p>{escape(comparison['kind'])}; {escape(comparison['pairs_compared'])}; "
           f"multiple comparisons: {escape(comparison['multiple_comparisons'])}. "
           f"Test: {escape(stats['test_method'])}.</p>"]
    head = ("<tr><th>pair</th><th>K</th><th>paired</th><th>mean difference</th><th>interval</th>"
            "<th>p</th><th>p (Holm)</th><th>better</th><th>worse</th><th>tied</th></tr>")
    out.append(f'<table class="comparison">{head}')
    for p in comparison["pairs"]:
        bounds = interval([p["difference_low"], p["difference_high"]], 4, signed=True)
        diff = number(p["mean_difference"], signed=True)
        out.append(
            f"<tr><td>{escape(p['second'])} vs {escape(p['first'])}</td><td>{p['cutoff']}</td>"
            f"<td>{p['n_paired']}</td><td>{diff}</td><td>{bounds}</td>"
            f"<td>{number(p['p_value'])}</td><td>{number(p['p_value_holm'])}</td>"
            f"<td>{p['wins']}</td><td>{p['losses']}</td><td>{p['ties']}</td></tr>")
    out.append("</table><h3>Most regressed queries</h3>")
    traces = {(t["ranker"], t["query_id"], t["cutoff"]): t["path"] for t in report["traces"]}
    for p in comparison["pairs"]:
        if not p["regressions"]:
            continue
        out.append(f"<h4>{escape(p['second'])} vs {escape(p['first'])}, NDCG@{p['cutoff']}</h4>"
                   "<table><tr><th>query</th><th>first</th><th>second</th><th>difference</th>"
                   "<th>traces</th></tr>")
        for r in p["regressions"]:
            links = []
            for ranker in (p["first"], p["second"]):
                path = traces.get((ranker, r["query_id"], p["cutoff"]))
                if path:
                    links.append(f'<a href="{escape(path)}">{escape(ranker)}</a>')
            out.append(f"<tr><td>{escape(r['query_id'])}</td><td>{number(r['ndcg_first'])}</td>"
                       f"<td>{number(r['ndcg_second'])}</td>"
                       f"<td>{number(r['difference'], signed=True)}</td>"
                       f"<td>{' '.join(links) or 'not written'}</td></tr>")
        out.append("</table>")
    return out


def _nightly(nightly: dict) -> list[str]:
    """The comparison with the previous night (or the pinned baseline) and its attribution."""
    against = "the pinned baseline pool" if nightly["baseline_pinned"] else "the previous night"
    out = [f'<h2 id="nightly">Against {against}</h2>']
    if nightly["previous_pool"] is None:
        return out + ["<p>The first night: there is no previous night to compare with.</p>"]
    out.append(
        f"<p>This pool minus {escape(nightly['previous_pool'])}, both under judgments "
        f"{escape(nightly['judgment_version'])}: {escape(nightly['method'])}. A verdict is "
        f"<i>regressed</i> (<i>improved</i>) when the adjusted p is below {nightly['alpha']:g} "
        f"and the mean drops (rises) by at least {nightly['min_effect']:g}.</p>")
    head = ("<tr><th>ranker</th><th>K</th><th>paired</th><th>previous</th><th>tonight</th>"
            "<th>mean difference</th><th>interval</th><th>p</th><th>p (Holm)</th>"
            "<th>verdict</th><th>cand. recall previous</th><th>cand. recall tonight</th></tr>")
    out.append(f'<table class="nightly">{head}')
    for c in nightly["comparisons"]:
        out.append(
            f"<tr><td>{escape(c['ranker'])}</td><td>{c['cutoff']}</td><td>{c['paired']}</td>"
            f"<td>{number(c['mean_previous'])}</td><td>{number(c['mean_current'])}</td>"
            f"<td>{number(c['mean_diff'], signed=True)}</td>"
            f"<td>{interval([c['ci_low'], c['ci_high']], 4, signed=True)}</td>"
            f"<td>{number(c['p'])}</td><td>{number(c['p_adjusted'])}</td>"
            f'<td class="{escape(c["verdict"])}" style="{VERDICT_STYLES.get(c["verdict"], "")}">'
            f'{escape(c["verdict"].replace("_", " "))}</td>'
            f"<td>{number(c['candidate_recall_previous'], 3)}</td>"
            f"<td>{number(c['candidate_recall_current'], 3)}</td></tr>")
    out.append("</table>")
    if nightly["attribution"]:
        first = nightly["attribution"][0]["previous_judgment_version"]
        out.append(
            f"<h3>Attribution</h3><p>The previous night's headline was judged under "
            f"{escape(first)}. The change of each mean splits into the part from judgments "
            "(the previous pool under the new version minus under the old) and the part from "
            "the pool (this pool minus the previous, both under the new version).</p>"
            '<table class="attribution"><tr><th>ranker</th><th>K</th><th>total change</th>'
            "<th>from judgments</th><th>from pool</th></tr>")
        for a in nightly["attribution"]:
            out.append(
                f"<tr><td>{escape(a['ranker'])}</td><td>{a['cutoff']}</td>"
                f"<td>{number(a['total_change'], signed=True)}</td>"
                f"<td>{number(a['from_judgments'], signed=True)}</td>"
                f"<td>{number(a['from_pool'], signed=True)}</td></tr>")
        out.append("</table>")
    return out


def _lineage(report: dict) -> list[str]:
    out = ['<h2>Lineage</h2><dl class="lineage">']
    for key, value in report["lineage"].items():
        out.append(f"<dt>{escape(key)}</dt><dd><code>{escape(str(value))}</code></dd>")
    out.append("</dl>")
    return out
