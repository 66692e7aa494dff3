"""report.html: one self-contained page (inline CSS and SVG, no scripts, nothing fetched)."""

from __future__ import annotations

from html import escape

from evaluation_pipeline.report import svg
from evaluation_pipeline.report.format import interval, number
from evaluation_pipeline.report.night_html import (GRADINGS, night_section, range_cell,
                                                    verdict_box)
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

STATUS_LABELS = (
    ("scored", "scored"), ("no_positive", "no positive"), ("incomplete", "incomplete"),
    ("not_judged", "not judged"), ("missing_from_run", "missing from run"),
)


def render_html(report: dict, differences: dict) -> str:
    """The page, its first screen first: the verdict against the previous night (pipeline
    reports), tonight's numbers at the headline cutoff and the conventions in one line; then
    the night over night, the tables per cutoff, the results in words, the charts, the ranker
    comparison, the conventions in full and the lineage."""
    lineage = report["lineage"]
    title = f"NDCG report: {lineage['judgment_version']} x {lineage['candidate_pool']}"
    body = [f"<h1>{escape(title)}</h1>", *verdict_box(report), *_summary(report)]
    comparison = report.get("comparison")
    if report.get("nightly"):
        body += night_section(report)
    for cutoff in report["spec"]["cutoffs"]:
        body += _cutoff_table(report, cutoff)
    body.append('<h2 id="in-words">In words</h2><section class="headline" id="headline">')
    body.append('<p>Each number under the <a href="#conventions">declared conventions</a>.</p>')
    body += [f'<p class="sentence">{escape(in_words(s, report))}</p>' for s in report["headline"]]
    if comparison and comparison.get("note"):
        body.append(f'<p class="note">{escape(comparison["note"])}</p>')
    body.append("</section>")
    body += _charts(report, differences)
    if comparison:
        body += _comparison(report, comparison)
    if report.get("agreement"):
        body += _agreement(report["agreement"])
    body += _conventions(report)
    body += _lineage(report)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        + "\n".join(body) + "</body></html>\n"
    )


def _summary(report: dict) -> list[str]:
    """Tonight's macro NDCG per ranker at the headline cutoff, and the conventions in one line
    with a link to them in full."""
    cutoff = report["headline_cutoff"]
    out = [f'<table class="summary"><tr><th>ranker</th><th>NDCG@{cutoff}</th><th>interval</th>'
           f"<th>{GRADINGS}</th><th>queries with a number</th></tr>"]
    for r in report["results"]:
        if r["cutoff"] == cutoff:
            out.append(f"<tr><td>{escape(r['ranker'])}</td><td>{number(r['macro_ndcg'])}</td>"
                       f"<td>{interval(r['macro_ndcg_interval'], 4)}</td>{_range(r)}"
                       f"<td>{r['n_with_number']} of {r['n_queries']}</td></tr>")
    out.append("</table>")
    out.append(f'<p class="conventions">Spec <code>{escape(report["spec_id"])}</code>: '
               f'{escape(brief(report["spec"]))} (<a href="#conventions">in full</a>)</p>')
    return out


def _range(row: dict) -> str:
    low, high = row["macro_ndcg_bounds"]
    return range_cell(low, high, row["n_bounded"])


def brief(spec: dict) -> str:
    """The conventions as one short line of the spec's fields and values (the cutoffs are the
    tables'); the page spells them out once, under "Declared conventions"."""
    return " · ".join(f"{name} {value}" for name, value in spec.items() if name != "cutoffs")


def in_words(sentence: str, report: dict) -> str:
    """A result sentence without the conventions it repeats: report.json's sentences keep them
    (contract section 4), and the page writes them once, under "Declared conventions"."""
    return sentence.replace(f" ({report['conventions']})", "")


def _conventions(report: dict) -> list[str]:
    out = ['<h2 id="conventions">Declared conventions</h2>',
           f"<p>{escape(report['conventions'])}.</p>", "<dl>"]
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
    head = ("<tr><th>ranker</th><th>NDCG (macro)</th><th>interval</th>"
            f"<th>{GRADINGS}</th><th>weighted</th>"
            "<th>interval</th><th>with number</th><th>queries</th>"
            + "".join(f"<th>{label}</th>" for _, label in STATUS_LABELS)
            + "<th>judged@K</th><th>cand. recall</th></tr>")
    out = [f'<h2 id="ndcg-{cutoff}">NDCG@{cutoff}</h2>', f'<table class="results">{head}']
    for r in rows:
        attrs = f'data-ranker="{escape(r["ranker"])}" data-cutoff="{cutoff}"'
        out.append(
            f"<tr><td>{escape(r['ranker'])}</td>"
            f'<td data-field="macro_ndcg" {attrs}>{number(r["macro_ndcg"])}</td>'
            f"<td>{interval(r['macro_ndcg_interval'], 4)}</td>{_range(r)}"
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
            f"<th>{GRADINGS}</th><th>p</th><th>p (Holm)</th><th>better</th><th>worse</th><th>tied</th></tr>")
    out.append(f'<table class="comparison">{head}')
    for p in comparison["pairs"]:
        bounds = interval([p["difference_low"], p["difference_high"]], 4, signed=True)
        diff = number(p["mean_difference"], signed=True)
        out.append(
            f"<tr><td>{escape(p['second'])} vs {escape(p['first'])}</td><td>{p['cutoff']}</td>"
            f"<td>{p['n_paired']}</td><td>{diff}</td><td>{bounds}</td>"
            f"{range_cell(p['difference_min'], p['difference_max'], p['n_bounded'], True)}"
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


def _agreement(agreement: dict) -> list[str]:
    """The raters' agreement (report.json's ``agreement``, as ``ndcg-eval agreement`` prints
    it): the pairs, the overall statistics, NDCG under each rater and Kendall's tau."""
    rule = agreement["rule"]
    out = ['<h2 id="agreement">Raters and their agreement</h2>',
           f"<p>{len(agreement['raters'])} raters; the grades scored above are combined by "
           f"<code>{escape(str(rule))}</code>. Only grades count here: an unknown rating is no "
           "rating.</p>",
           '<table class="agreement-pairs"><tr><th>rater a</th><th>rater b</th><th>overlap</th>'
           "<th>Cohen's kappa</th><th>quadratic</th><th>mean a &minus; b</th></tr>"]
    for p in agreement["pairs"]:
        out.append(f"<tr><td>{escape(p['rater_a'])}</td><td>{escape(p['rater_b'])}</td>"
                   f"<td>{p['overlap']}</td><td>{number(p['cohen_kappa'])}</td>"
                   f"<td>{number(p['cohen_kappa_quadratic'])}</td>"
                   f"<td>{number(p['mean_difference'])}</td></tr>")
    out.append("</table>")
    out.append(f"<p>Krippendorff's alpha: ordinal {number(agreement['krippendorff_alpha_ordinal'])}"
               f", interval {number(agreement['krippendorff_alpha_interval'])} (every rating). "
               f"Fleiss' kappa: {number(agreement['fleiss_kappa'])} over the "
               f"{agreement['fleiss_documents']} documents every rater graded.</p>")
    if agreement.get("ndcg"):
        out.append('<table class="agreement-ndcg"><tr><th>rater</th><th>ranker</th><th>K</th>'
                   "<th>NDCG</th></tr>")
        out += [f"<tr><td>{escape(n['rater'])}</td><td>{escape(n['ranker'])}</td>"
                f"<td>{n['cutoff']}</td><td>{number(n['mean'])}</td></tr>"
                for n in agreement["ndcg"]]
        out.append('</table><table class="agreement-tau"><tr><th>rater a</th><th>rater b</th>'
                   "<th>K</th><th>Kendall's tau-b of the rankers' orders</th></tr>")
        out += [f"<tr><td>{escape(t['rater_a'])}</td><td>{escape(t['rater_b'])}</td>"
                f"<td>{t['cutoff']}</td><td>{number(t['tau'])}</td></tr>"
                for t in agreement["kendall_tau"]]
        out.append("</table>")
    return out


def _lineage(report: dict) -> list[str]:
    out = ['<h2>Lineage</h2><dl class="lineage">']
    for key, value in report["lineage"].items():
        out.append(f"<dt>{escape(key)}</dt><dd><code>{escape(str(value))}</code></dd>")
    out.append("</dl>")
    return out
