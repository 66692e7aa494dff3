"""Inline SVG charts drawn in Python: no scripts, no fonts or files fetched, print-safe."""

from __future__ import annotations

from html import escape

import numpy as np

PALETTE = ("#1f5fa8", "#c4622d", "#2e8b57", "#8e44ad", "#b8860b", "#5f6b73")
LABEL_WIDTH = 170
PLOT_WIDTH = 420
ROW = 26


def _axis(x0: float, y: float, width: float, lo: float, hi: float, ticks: int = 5) -> str:
    parts = [f'<line x1="{x0}" y1="{y}" x2="{x0 + width}" y2="{y}" stroke="#999"/>']
    for t in np.linspace(lo, hi, ticks + 1):
        x = x0 + (t - lo) / (hi - lo) * width
        parts.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#999"/>')
        parts.append(f'<text x="{x:.1f}" y="{y + 16}" text-anchor="middle">{t:.2f}</text>')
    return "".join(parts)


def interval_chart(rows: list[tuple[str, float | None, float | None, float | None]],
                   title: str) -> str:
    """One row per label: a dot at the mean and a whisker over its interval, on [0, 1]."""
    height = ROW * len(rows) + 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" '
           f'width="{LABEL_WIDTH + PLOT_WIDTH + 70}" '
           f'height="{height}" class="chart"><title>{escape(title)}</title>']
    for i, (label, value, low, high) in enumerate(rows):
        y = 20 + i * ROW
        out.append(f'<text x="{LABEL_WIDTH - 8}" y="{y + 4}" text-anchor="end">'
                   f'{escape(label)}</text>')
        if value is None:
            out.append(f'<text x="{LABEL_WIDTH}" y="{y + 4}">no number</text>')
            continue
        x = LABEL_WIDTH + value * PLOT_WIDTH
        if low is not None:
            x1, x2 = LABEL_WIDTH + low * PLOT_WIDTH, LABEL_WIDTH + high * PLOT_WIDTH
            out.append(f'<line x1="{x1:.1f}" y1="{y}" x2="{x2:.1f}" y2="{y}" '
                       f'stroke="#555" stroke-width="2"/>')
            for xe in (x1, x2):
                out.append(f'<line x1="{xe:.1f}" y1="{y - 5}" x2="{xe:.1f}" y2="{y + 5}" '
                           f'stroke="#555"/>')
        out.append(f'<circle cx="{x:.1f}" cy="{y}" r="5" fill="{PALETTE[0]}"/>')
        out.append(f'<text x="{LABEL_WIDTH + PLOT_WIDTH + 8}" y="{y + 4}">{value:.3f}</text>')
    out.append(_axis(LABEL_WIDTH, height - 28, PLOT_WIDTH, 0.0, 1.0))
    out.append("</svg>")
    return "".join(out)


def grouped_bars(groups: list[tuple[str, list[tuple[str, float | None, int]]]],
                 series: list[str], title: str) -> str:
    """Horizontal bars per group (slice value), one per series (ranker); n shown beside."""
    bar = 12
    group_height = bar * len(series) + 12
    height = group_height * len(groups) + 40 + 18 * len(series)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" '
           f'width="{LABEL_WIDTH + PLOT_WIDTH + 90}" '
           f'height="{height}" class="chart"><title>{escape(title)}</title>']
    y = 10
    for label, bars in groups:
        out.append(f'<text x="{LABEL_WIDTH - 8}" y="{y + group_height / 2:.0f}" text-anchor="end">'
                   f'{escape(label)}</text>')
        for j, (name, value, n) in enumerate(bars):
            yb = y + j * bar
            colour = PALETTE[series.index(name) % len(PALETTE)]
            if value is None:
                out.append(f'<text x="{LABEL_WIDTH + 4}" y="{yb + 10}" font-size="10">'
                           f'no number (n={n})</text>')
                continue
            out.append(f'<rect x="{LABEL_WIDTH}" y="{yb}" width="{value * PLOT_WIDTH:.1f}" '
                       f'height="{bar - 2}" fill="{colour}"><title>{escape(name)}: {value:.3f} '
                       f'over {n} queries</title></rect>')
            out.append(f'<text x="{LABEL_WIDTH + value * PLOT_WIDTH + 4:.1f}" y="{yb + 10}" '
                       f'font-size="10">{value:.3f} (n={n})</text>')
        y += group_height
    out.append(_axis(LABEL_WIDTH, y, PLOT_WIDTH, 0.0, 1.0))
    for j, name in enumerate(series):
        ly = y + 34 + 18 * j
        out.append(f'<rect x="{LABEL_WIDTH}" y="{ly - 10}" width="12" height="12" '
                   f'fill="{PALETTE[j % len(PALETTE)]}"/>')
        out.append(f'<text x="{LABEL_WIDTH + 18}" y="{ly}">{escape(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def histogram(counts: np.ndarray, edges: np.ndarray, title: str) -> str:
    """Distribution of per-query differences (``counts`` between ``edges``) on a symmetric
    axis, zero marked."""
    width, height, top, left = 520, 170, 10, 40
    plot_h = height - 50
    bins, extent = len(counts), float(edges[-1])
    peak = max(int(counts.max()) if counts.size else 0, 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width + left + 20}" '
           f'height="{height}" class="chart"><title>{escape(title)}</title>']
    bin_w = width / bins
    for i, c in enumerate(counts):
        h = c / peak * plot_h
        colour = PALETTE[2] if edges[i] >= 0 else PALETTE[1]
        out.append(f'<rect x="{left + i * bin_w:.1f}" y="{top + plot_h - h:.1f}" '
                   f'width="{bin_w - 1:.1f}" height="{h:.1f}" fill="{colour}">'
                   f'<title>{edges[i]:+.3f} to {edges[i + 1]:+.3f}: {c} queries</title></rect>')
    zero = left + width / 2
    out.append(f'<line x1="{zero}" y1="{top}" x2="{zero}" y2="{top + plot_h}" stroke="#333" '
               'stroke-dasharray="3,3"/>')
    out.append(f'<text x="{left - 4}" y="{top + 10}" text-anchor="end">{peak}</text>')
    out.append(_axis(left, top + plot_h, width, -extent, extent, ticks=4))
    out.append("</svg>")
    return "".join(out)
