"""history.html: every ranker's NDCG@K night after night, one self-contained page.

Inline CSS and SVG, no scripts, nothing fetched, like report.html. Each night shows its
headline evaluation (the newest judgment version when the pool was first evaluated) with its
interval band; a dashed line marks the nights where that version changed, a red ring flags a
regression against the previous night, and every point links to its night's report.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

import polars as pl

from evaluation_pipeline.nightly.history import headline_trend
from evaluation_pipeline.report.format import interval, number, with_interval
from evaluation_pipeline.report.html import CSS
from evaluation_pipeline.report.svg import PALETTE
from schemas.columns import REGRESSED

REGRESSION_COLOUR = "#c0392b"
TREND_CSS = CSS + """
.regressed{color:#c0392b;font-weight:600}.improved{color:#2e8b57}
.trend text{font-size:11px;fill:#333}
"""
WIDTH, HEIGHT = 820, 300
LEFT, RIGHT, TOP, BOTTOM = 55, 150, 28, 60

# Labels are coloured by style, not by the fill attribute: the page's CSS sets text fill.
# (candidate_pool, judgment_version, spec_id) -> the link to that evaluation's report.html
ReportHref = Callable[[str, str, str], str]


def render_trend(history: pl.DataFrame, report_href: ReportHref,
                 spec_id: str | None = None) -> str:
    """The page for the history's headline evaluations (of one spec, or all)."""
    trend = headline_trend(history, spec_id)
    title = "NDCG night by night"
    body = [f"<h1>{escape(title)}</h1>"]
    if trend.is_empty():
        body.append("<p>No evaluation is in the history yet.</p>")
    nights = _nights(trend)
    changes = _version_changes(nights)
    if nights:
        body.append(
            f'<p class="headline">{len(nights)} nights, {escape(nights[0][0])} to '
            f"{escape(nights[-1][0])}. Each point is the night's headline evaluation with its "
            "interval band; dashed lines mark a new judgment version; a red ring marks a "
            "ranker that regressed against the previous night (Holm-adjusted). Click a point "
            "for that night's report.</p>")
    for spec in sorted(trend["spec_id"].unique().to_list()):
        of_spec = trend.filter(pl.col("spec_id") == spec)
        for cutoff in sorted(of_spec["cutoff"].unique().to_list(), reverse=True):
            rows = of_spec.filter(pl.col("cutoff") == cutoff)
            body.append(f'<h2 id="ndcg-{cutoff}-{escape(spec)}">NDCG@{cutoff} '
                        f"<small>spec {escape(spec)}</small></h2>")
            body.append(trend_chart(rows, nights, changes, report_href, cutoff))
            body += _table(rows, nights)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title><style>{TREND_CSS}</style></head><body>"
        + "\n".join(body) + "</body></html>\n"
    )


def _nights(trend: pl.DataFrame) -> list[tuple[str, str]]:
    """(pool, headline version) per night, in night order."""
    rows = trend.group_by("candidate_pool", maintain_order=True).agg(
        pl.col("judgment_version").first())
    return list(rows.iter_rows())


def _version_changes(nights: list[tuple[str, str]]) -> set[int]:
    """Indexes of the nights whose headline version differs from the night before."""
    return {i for i in range(1, len(nights)) if nights[i][1] != nights[i - 1][1]}


def trend_chart(rows: pl.DataFrame, nights: list[tuple[str, str]], changes: set[int],
                report_href: ReportHref, cutoff: int) -> str:
    """One line per ranker over the nights, its interval as a band, points linked."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    values = [v for c in ("ndcg", "ndcg_low", "ndcg_high") for v in rows[c].to_list()
              if v is not None]
    lo = max(0.0, (min(values) if values else 0.0) - 0.03)
    hi = min(1.0, (max(values) if values else 1.0) + 0.03)
    hi = hi if hi > lo else lo + 0.1

    def x(i: int) -> float:
        return LEFT + (plot_w * i / max(len(nights) - 1, 1) if len(nights) > 1 else plot_w / 2)

    def y(v: float) -> float:
        return TOP + plot_h * (1 - (v - lo) / (hi - lo))

    index = {pool: i for i, (pool, _) in enumerate(nights)}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{WIDTH}" '
           f'height="{HEIGHT}" class="chart trend"><title>NDCG@{cutoff} per night</title>']
    for t in range(5):  # horizontal grid with labels
        v = lo + (hi - lo) * t / 4
        out.append(f'<line x1="{LEFT}" y1="{y(v):.1f}" x2="{LEFT + plot_w}" y2="{y(v):.1f}" '
                   f'stroke="#e3e3e3"/><text x="{LEFT - 6}" y="{y(v) + 4:.1f}" '
                   f'text-anchor="end">{number(v, 2)}</text>')
    for i, (pool, version) in enumerate(nights):
        out.append(f'<text x="{x(i):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
                   f'{escape(pool[-5:] if len(nights) > 4 else pool)}</text>')
        if i in changes:
            xm = (x(i - 1) + x(i)) / 2
            out.append(f'<line class="version-change" x1="{xm:.1f}" y1="{TOP - 6}" x2="{xm:.1f}" '
                       f'y2="{TOP + plot_h}" stroke="#8a4b00" stroke-dasharray="4,3"/>'
                       f'<text x="{xm + 3:.1f}" y="{TOP - 10}" style="fill:#8a4b00">judgments '
                       f'{escape(version)}</text>')
    rankers = sorted(rows["ranker"].unique().to_list())
    for j, ranker in enumerate(rankers):
        colour = PALETTE[j % len(PALETTE)]
        points = rows.filter(pl.col("ranker") == ranker).to_dicts()
        points = sorted((p for p in points if p["ndcg"] is not None),
                        key=lambda p: index[p["candidate_pool"]])
        banded = [p for p in points if p["ndcg_low"] is not None]
        if len(banded) > 1:
            upper = [f"{x(index[p['candidate_pool']]):.1f},{y(p['ndcg_high']):.1f}" for p in banded]
            lower = [f"{x(index[p['candidate_pool']]):.1f},{y(p['ndcg_low']):.1f}"
                     for p in reversed(banded)]
            out.append(f'<polygon class="band" points="{" ".join(upper + lower)}" '
                       f'fill="{colour}" fill-opacity="0.15" stroke="none"/>')
        line = " ".join(f"{x(index[p['candidate_pool']]):.1f},{y(p['ndcg']):.1f}" for p in points)
        out.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for p in points:
            px, py = x(index[p["candidate_pool"]]), y(p["ndcg"])
            href = report_href(p["candidate_pool"], p["judgment_version"], p["spec_id"])
            tip = (f"{ranker} {p['candidate_pool']} ({p['judgment_version']}): "
                   f"NDCG@{cutoff} {with_interval(p['ndcg'], [p['ndcg_low'], p['ndcg_high']])}"
                   + _verdict_text(p))
            mark = ""
            if p["verdict"] == REGRESSED:
                mark = (f'<circle class="regression" cx="{px:.1f}" cy="{py:.1f}" r="9" '
                        f'fill="none" stroke="{REGRESSION_COLOUR}" stroke-width="2.5"/>'
                        f'<text x="{px:.1f}" y="{py + 22:.1f}" text-anchor="middle" '
                        f'style="fill:{REGRESSION_COLOUR}">regressed</text>')
            out.append(f'<a href="{escape(href)}"><circle cx="{px:.1f}" cy="{py:.1f}" r="4.5" '
                       f'fill="{colour}"><title>{escape(tip)}</title></circle></a>{mark}')
        ly = TOP + 14 + 18 * j
        out.append(f'<rect x="{WIDTH - RIGHT + 14}" y="{ly - 10}" width="12" height="12" '
                   f'fill="{colour}"/><text x="{WIDTH - RIGHT + 32}" y="{ly}">'
                   f'{escape(ranker)}</text>')
    out.append("</svg>")
    return "".join(out)


def _interval_text(p: dict) -> str:
    return interval([p["ndcg_low"], p["ndcg_high"]], 4)


def _verdict_text(p: dict) -> str:
    if p["verdict"] is None:
        return ""
    return (f"; {p['verdict']} vs {p['previous_pool']}: {number(p['mean_diff'], signed=True)}, "
            f"Holm-adjusted p {number(p['p_adjusted'])}")


def _table(rows: pl.DataFrame, nights: list[tuple[str, str]]) -> list[str]:
    """Per night and ranker: NDCG, interval, candidate recall, verdict, attribution."""
    head = ("<tr><th>night</th><th>judgments</th><th>ranker</th><th>NDCG</th><th>interval</th>"
            "<th>cand. recall</th><th>vs previous</th><th>verdict</th><th>p (Holm)</th>"
            "<th>from judgments</th><th>from pool</th></tr>")
    out = [f'<table class="trend-table">{head}']
    order = {pool: i for i, (pool, _) in enumerate(nights)}
    for p in sorted(rows.to_dicts(), key=lambda p: (order[p["candidate_pool"]], p["ranker"])):
        verdict = p["verdict"] or ""
        out.append(
            f"<tr><td>{escape(p['candidate_pool'])}</td><td>{escape(p['judgment_version'])}</td>"
            f"<td>{escape(p['ranker'])}</td><td>{number(p['ndcg'], missing='')}</td>"
            f"<td>{_interval_text(p)}</td>"
            f"<td>{number(p['mean_candidate_recall'], 3, missing='')}</td>"
            f"<td>{number(p['mean_diff'], signed=True, missing='')}</td>"
            f'<td class="{escape(verdict)}">{escape(verdict.replace("_", " "))}</td>'
            f"<td>{number(p['p_adjusted'], missing='')}</td>"
            f"<td>{number(p['from_judgments'], signed=True, missing='')}</td>"
            f"<td>{number(p['from_pool'], signed=True, missing='')}</td></tr>")
    out.append("</table>")
    return out

