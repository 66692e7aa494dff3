"""report.html's night over night: the verdict box of the first screen, and the section on the
previous night with the queries that moved most and the change broken down by slice."""

from __future__ import annotations

from html import escape

from evaluation_pipeline.report.format import interval, number

# Inline, so that pages without a nightly section keep their stylesheet byte for byte.
VERDICT_STYLES = {"regressed": "color:#c0392b;font-weight:600", "improved": "color:#2e8b57"}
BOX_STYLES = {
    "regressed": "border-left:6px solid #c0392b;background:#fdecea;padding:.6rem 1rem",
    "calm": "border-left:6px solid #2e8b57;background:#eef7f1;padding:.6rem 1rem",
}


# The header of the column beside each interval: the mean's least and greatest value over
# every grading of the unjudged and unknown documents (the contract's bounds of a mean).
GRADINGS = ('<span title="the least and greatest mean over every grading of the unjudged and '
            'unknown documents">over every grading</span>')


def range_cell(low: float | None, high: float | None, n_bounded: int, signed: bool = False
               ) -> str:
    """A mean's range over every grading of the holes, in a cell that says over how many
    queries it runs; blank when no query has a number under every grading."""
    if low is None:
        return "<td></td>"
    return (f'<td title="over the {n_bounded} queries with a number under every grading">'
            f"{interval([low, high], 4, signed)}</td>")


def shown(nightly: dict, top_cutoff: int) -> list[dict]:
    """The comparisons whose movers and slices the page lists: every one with a verdict, and
    each ranker's at the headline cutoff; the regressed first, then the improved."""
    listed = [c for c in nightly["comparisons"]
              if c["verdict"] != "no_change" or c["cutoff"] == top_cutoff]
    first = {"regressed": 0, "improved": 1}
    return sorted(listed, key=lambda c: first.get(c["verdict"], 2))


def verdict_box(report: dict) -> list[str]:
    """The first thing on the page: did tonight regress against the previous night?"""
    nightly = report.get("nightly")
    if not nightly:
        return []
    if nightly["previous_pool"] is None:
        return [f'<section class="verdict" id="verdict" style="{BOX_STYLES["calm"]}"><p>The '
                "first night: there is no previous night to compare with.</p></section>"]
    regressed = [c for c in nightly["comparisons"] if c["verdict"] == "regressed"]
    if not regressed:
        return [f'<section class="verdict" id="verdict" style="{BOX_STYLES["calm"]}"><p>No '
                f"ranker regressed against {escape(nightly['previous_pool'])} (judgments "
                f"{escape(nightly['judgment_version'])}). <a href=\"#nightly\">The night over "
                "night</a>.</p></section>"]
    sentences = [s for s in report["headline"] if " regressed against " in s]
    items = "".join(f"<li>{escape(s)}</li>" for s in sentences)
    return [f'<section class="verdict regressed" id="verdict" style="{BOX_STYLES["regressed"]}">'
            f"<p><b>Regressed against {escape(nightly['previous_pool'])}</b></p><ul>{items}</ul>"
            '<p><a href="#movers">The queries that moved</a> and <a href="#slices">the change by '
            "slice</a> say what drove it.</p></section>"]


def night_section(report: dict) -> list[str]:
    """The comparison with the previous night (or the pinned baseline): verdicts, movers, the
    change by slice, and the attribution."""
    nightly = report["nightly"]
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
            f"<th>mean difference</th><th>interval</th><th>{GRADINGS}</th><th>p</th><th>p (Holm)</th>"
            "<th>verdict</th><th>cand. recall previous</th><th>cand. recall tonight</th></tr>")
    out.append(f'<table class="nightly">{head}')
    for c in nightly["comparisons"]:
        out.append(
            f"<tr><td>{escape(c['ranker'])}</td><td>{c['cutoff']}</td><td>{c['paired']}</td>"
            f"<td>{number(c['mean_previous'])}</td><td>{number(c['mean_current'])}</td>"
            f"<td>{number(c['mean_diff'], signed=True)}</td>"
            f"<td>{interval([c['ci_low'], c['ci_high']], 4, signed=True)}</td>"
            f"{range_cell(c['diff_min'], c['diff_max'], c['n_bounded'], True)}"
            f"<td>{number(c['p'])}</td><td>{number(c['p_adjusted'])}</td>"
            f'<td class="{escape(c["verdict"])}" style="{VERDICT_STYLES.get(c["verdict"], "")}">'
            f'{escape(c["verdict"].replace("_", " "))}</td>'
            f"<td>{number(c['candidate_recall_previous'], 3)}</td>"
            f"<td>{number(c['candidate_recall_current'], 3)}</td></tr>")
    out.append("</table>")
    listed = shown(nightly, report["headline_cutoff"])
    out += _movers(listed)
    out += _slices(listed)
    out += _attribution(nightly)
    return out


def _movers(listed: list[dict]) -> list[str]:
    out = ['<h3 id="movers">The queries that moved most</h3>',
           "<p>Per ranker and K, the queries whose NDCG changed most between the two nights, "
           "either way; a trace shows both nights' ranked candidates with their grades, gains "
           "and contributions.</p>"]
    for c in listed:
        if not c.get("movers"):
            continue
        out.append(f"<h4>{escape(c['ranker'])}, NDCG@{c['cutoff']} "
                   f"({number(c['mean_diff'], signed=True)} on average)</h4>"
                   '<table class="movers"><tr><th>query</th><th>query text</th>'
                   "<th>previous</th><th>tonight</th><th>difference</th><th>trace</th></tr>")
        for m in c["movers"]:
            trace = (f'<a href="{escape(m["trace"])}">both nights</a>' if m.get("trace")
                     else "not written")
            out.append(f"<tr><td>{escape(m['query_id'])}</td>"
                       f'<td style="text-align:left">{escape(m.get("query_text") or "")}</td>'
                       f"<td>{number(m['ndcg_previous'])}</td><td>{number(m['ndcg_current'])}"
                       f"</td><td>{number(m['difference'], signed=True)}</td><td>{trace}</td>"
                       "</tr>")
        out.append("</table>")
    return out


def _slices(listed: list[dict]) -> list[str]:
    if not any(c.get("slices") for c in listed):
        return []
    out = ['<h3 id="slices">The change by slice</h3>',
           "<p>Per slice column and value, the paired mean difference of its queries with its "
           "interval, and its share of the total change (its queries' differences over all of "
           "them: the shares of one column add up to 1).</p>"]
    for c in listed:
        if not c.get("slices"):
            continue
        out.append(f"<h4>{escape(c['ranker'])}, NDCG@{c['cutoff']}</h4>"
                   '<table class="slices"><tr><th>slice</th><th>value</th><th>paired</th>'
                   "<th>mean difference</th><th>interval</th><th>share of the change</th></tr>")
        for s in c["slices"]:
            share = "" if s["share"] is None else f"{s['share']:.0%}"
            out.append(f"<tr><td>{escape(s['slice'])}</td><td>{escape(s['value'])}</td>"
                       f"<td>{s['paired']}</td><td>{number(s['mean_diff'], signed=True)}</td>"
                       f"<td>{interval([s['ci_low'], s['ci_high']], 4, signed=True)}</td>"
                       f"<td>{share}</td></tr>")
        out.append("</table>")
    return out


def _attribution(nightly: dict) -> list[str]:
    if not nightly["attribution"]:
        return []
    first = nightly["attribution"][0]["previous_judgment_version"]
    out = [f"<h3>Attribution</h3><p>The previous night's headline was judged under "
           f"{escape(first)}. The change of each mean splits into the part from judgments "
           "(the previous pool under the new version minus under the old) and the part from "
           "the pool (this pool minus the previous, both under the new version).</p>"
           '<table class="attribution"><tr><th>ranker</th><th>K</th><th>total change</th>'
           "<th>from judgments</th><th>from pool</th></tr>"]
    for a in nightly["attribution"]:
        out.append(
            f"<tr><td>{escape(a['ranker'])}</td><td>{a['cutoff']}</td>"
            f"<td>{number(a['total_change'], signed=True)}</td>"
            f"<td>{number(a['from_judgments'], signed=True)}</td>"
            f"<td>{number(a['from_pool'], signed=True)}</td></tr>")
    out.append("</table>")
    return out
