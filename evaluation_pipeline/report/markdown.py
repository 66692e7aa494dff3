"""A short markdown view of report.json: the headline table and sentences (Dagster metadata)."""

from __future__ import annotations

from evaluation_pipeline.report.headline import MARKDOWN_VIEW, headline_table


def headline_markdown(report: dict) -> str:
    lines = [headline_table(report["results"], MARKDOWN_VIEW), ""]
    lines += [f"- {sentence}" for sentence in report["headline"]]
    return "\n".join(lines)
