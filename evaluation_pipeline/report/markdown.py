"""A short markdown view of report.json: the headline table and sentences (Dagster metadata)."""

from __future__ import annotations

from evaluation_pipeline.report.headline import MARKDOWN_VIEW, headline_table, measures_table


def headline_markdown(report: dict) -> str:
    """Rankers by measures first when the spec scores more than its nDCG@K, then the nDCG@K
    table and the sentences."""
    by_measure = measures_table(report, "markdown")
    lines = [by_measure, ""] if by_measure else []
    lines += [headline_table(report["results"], MARKDOWN_VIEW), ""]
    lines += [f"- {sentence}" for sentence in report["headline"]]
    return "\n".join(lines)
