"""history.html: every ranker's headline measures (NDCG@K by default) night after night, one
self-contained page.

Inline CSS and SVG, no scripts, nothing fetched, like report.html. Each night shows its
headline evaluation (the newest judgment version when the pool was first evaluated) with its
interval band; a dashed line marks the nights where that version changed, a red ring flags a
regression against the previous night, and every point links to its night's report.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from evaluation_pipeline.nightly.history import headline_trend
from evaluation_pipeline.report.format import interval, number, p_shown, with_interval
from evaluation_pipeline.report.svg import PALETTE
from evaluation_pipeline.report.templating import render
from schemas.columns import INCONCLUSIVE, REGRESSED, measure_label, ndcg_name

REGRESSION_COLOUR = "#c0392b"
WIDTH, HEIGHT = 820, 300
LEFT, RIGHT, TOP, BOTTOM = 55, 150, 28, 60

# (candidate_pool, judgment_version, spec_id) -> the link to that evaluation's report.html
ReportHref = Callable[[str, str, str], str]


def render_trend(history: pl.DataFrame, report_href: ReportHref,
                 spec_id: str | None = None) -> str:
    """The page for the history's headline evaluations (of one spec, or all)."""
    trend = headline_trend(history, spec_id)
    nights = _nights(trend)
    changes = _version_changes(nights)
    sections = []
    for spec in sorted(trend["spec_id"].unique().to_list()):
        of_spec = trend.filter(pl.col("spec_id") == spec)
        # The spec's nDCG@K largest cutoff first (as before the other measures), then each
        # other headline measure by name.
        measures = sorted(of_spec.select("measure", "cutoff").unique().iter_rows(),
                          key=lambda m: (m[1] is None or m[0] != ndcg_name(m[1]),
                                         -(m[1] or 0), m[0]))
        for measure, cutoff in measures:
            rows = of_spec.filter(pl.col("measure") == measure)
            label = measure_label(measure, cutoff)
            sections.append({"spec_id": spec, "label": label,
                             "anchor": f"{label.lower()}-{spec}".replace("@", "-"),
                             "chart": _chart(rows, nights, changes, report_href, label),
                             "rows": _table(rows, nights)})
    return render(
        "trend.html",
        title="NDCG night by night",
        nights={"count": len(nights), "first": nights[0][0], "last": nights[-1][0]}
        if nights else None,
        sections=sections,
    )


def _nights(trend: pl.DataFrame) -> list[tuple[str, str]]:
    """(pool, headline version) per night, in night order."""
    rows = trend.group_by("candidate_pool", maintain_order=True).agg(
        pl.col("judgment_version").first())
    return list(rows.iter_rows())


def _version_changes(nights: list[tuple[str, str]]) -> set[int]:
    """Indexes of the nights whose headline version differs from the night before."""
    return {i for i in range(1, len(nights)) if nights[i][1] != nights[i - 1][1]}


def _chart(rows: pl.DataFrame, nights: list[tuple[str, str]], changes: set[int],
           report_href: ReportHref, label: str) -> dict:
    """One line per ranker over the nights, its interval as a band, points linked: the
    coordinates ``templates/trend.html`` draws, to a tenth of a pixel."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    values = [v for c in ("value", "value_low", "value_high") for v in rows[c].to_list()
              if v is not None]
    # Within [0, 1] for a measure there (DCG@K runs past 1: its own range then).
    top = 1.0 if not values or max(values) <= 1.0 else max(values) + 0.03
    lo = max(0.0, (min(values) if values else 0.0) - 0.03)
    hi = min(top, (max(values) if values else 1.0) + 0.03)
    hi = hi if hi > lo else lo + 0.1

    def x(i: int) -> float:
        return LEFT + (plot_w * i / max(len(nights) - 1, 1) if len(nights) > 1 else plot_w / 2)

    def y(v: float) -> float:
        return TOP + plot_h * (1 - (v - lo) / (hi - lo))

    index = {pool: i for i, (pool, _) in enumerate(nights)}
    grid = [lo + (hi - lo) * t / 4 for t in range(5)]  # horizontal lines with labels
    night_marks = []
    for i, (pool, version) in enumerate(nights):
        xm = (x(i - 1) + x(i)) / 2 if i in changes else None
        night_marks.append({
            "x": f"{x(i):.1f}", "label": pool[-5:] if len(nights) > 4 else pool,
            "version_change": None if xm is None else {
                "x": f"{xm:.1f}", "label_x": f"{xm + 3:.1f}", "version": version}})
    series = []
    for j, ranker in enumerate(sorted(rows["ranker"].unique().to_list())):
        points = rows.filter(pl.col("ranker") == ranker).to_dicts()
        points = sorted((p for p in points if p["value"] is not None),
                        key=lambda p: index[p["candidate_pool"]])
        banded = [p for p in points if p["value_low"] is not None]
        upper = [f"{x(index[p['candidate_pool']]):.1f},{y(p['value_high']):.1f}"
                 for p in banded]
        lower = [f"{x(index[p['candidate_pool']]):.1f},{y(p['value_low']):.1f}"
                 for p in reversed(banded)]
        series.append({
            "ranker": ranker, "colour": PALETTE[j % len(PALETTE)],
            "band": " ".join(upper + lower) if len(banded) > 1 else None,
            "line": " ".join(f"{x(index[p['candidate_pool']]):.1f},{y(p['value']):.1f}"
                             for p in points),
            "points": [_point(p, x(index[p["candidate_pool"]]), y(p["value"]), ranker, label,
                              report_href) for p in points],
            "legend_y": TOP + 14 + 18 * j, "legend_box_y": TOP + 4 + 18 * j,
        })
    return {
        "label": label, "width": WIDTH, "height": HEIGHT,
        "left": LEFT, "right": LEFT + plot_w, "bottom": TOP + plot_h, "label_x": LEFT - 6,
        "grid": [{"y": f"{y(v):.1f}", "label_y": f"{y(v) + 4:.1f}", "label": number(v, 2)}
                 for v in grid],
        "nights": night_marks, "night_label_y": TOP + plot_h + 16,
        "change_top": TOP - 6, "change_label_y": TOP - 10,
        "series": series, "regression_colour": REGRESSION_COLOUR,
        "legend_x": WIDTH - RIGHT + 14, "legend_label_x": WIDTH - RIGHT + 32,
    }


def _point(p: dict, px: float, py: float, ranker: str, label: str, report_href: ReportHref
           ) -> dict:
    """A night's point: where it is, the link to its report, its tooltip, and whether it is
    ringed as a regression."""
    return {
        "x": f"{px:.1f}", "y": f"{py:.1f}", "mark_y": f"{py + 22:.1f}",
        "href": report_href(p["candidate_pool"], p["judgment_version"], p["spec_id"]),
        "tip": (f"{ranker} {p['candidate_pool']} ({p['judgment_version']}): "
                f"{label} {with_interval(p['value'], [p['value_low'], p['value_high']])}"
                + _verdict_text(p)),
        "regressed": p["verdict"] == REGRESSED,
        # Hollow: the night could not tell a change of min_effect from none, which a quiet
        # (filled) night did.
        "inconclusive": p["verdict"] == INCONCLUSIVE,
    }


def _verdict_text(p: dict) -> str:
    if p["verdict"] is None:
        return ""
    return (f"; {p['verdict']} vs {p['previous_pool']}: "
            f"{number(p['mean_difference'], signed=True)}, "
            f"Holm-adjusted p {p_shown(p, 'p_value_holm')}")


def _table(rows: pl.DataFrame, nights: list[tuple[str, str]]) -> list[dict]:
    """Per night and ranker: the measure's mean, interval, candidate recall, verdict,
    attribution."""
    order = {pool: i for i, (pool, _) in enumerate(nights)}
    return [{
        "candidate_pool": p["candidate_pool"], "judgment_version": p["judgment_version"],
        "ranker": p["ranker"], "value": number(p["value"], missing=""),
        "interval": interval([p["value_low"], p["value_high"]], 4),
        "mean_candidate_recall": number(p["mean_candidate_recall"], 3, missing=""),
        "mean_difference": number(p["mean_difference"], signed=True, missing=""),
        "verdict": p["verdict"] or "", "verdict_words": (p["verdict"] or "").replace("_", " "),
        "p_value_holm": p_shown(p, "p_value_holm", missing=""),
        "from_judgments": number(p["from_judgments"], signed=True, missing=""),
        "from_pool": number(p["from_pool"], signed=True, missing=""),
    } for p in sorted(rows.to_dicts(), key=lambda p: (order[p["candidate_pool"]], p["ranker"]))]
