"""Where the pipeline's reports are and what they say, for the terminal (``make run``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from evaluation_pipeline.report.headline import PIPELINE_VIEW, headline_table
from evaluation_pipeline.spec import EvaluationSpec


@dataclass(frozen=True)
class StoredReport:
    """One evaluation's report.json as the pipeline stored it, and where its page is."""

    candidate_pool: str
    judgment_version: str
    report: dict
    html: str


def describe_stored_reports(spec: EvaluationSpec, reports: Iterable[StoredReport]) -> str:
    """Each report under ``spec``: its folder, a table per ranker and cutoff, the headline."""
    lines = [f"spec {spec.spec_id}: {spec.describe()}"]
    for stored in reports:
        lineage = stored.report["lineage"]
        lines += [
            "",
            f"== pool {stored.candidate_pool} x judgments {stored.judgment_version} "
            f"(sha256 {lineage['judgments_sha256'][:12]}, pool sha256 "
            f"{lineage['pool_sha256'][:12]})",
            f"   report: {stored.html}",
            headline_table(stored.report["results"], PIPELINE_VIEW),
        ]
        lines += [f"   - {sentence}" for sentence in stored.report["headline"]]
    if len(lines) == 1:
        lines.append("no reports yet")
    return "\n".join(lines)
