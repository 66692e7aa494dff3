"""Where the reports are and what they say, for the terminal (``make run``)."""

from evaluation_pipeline.orchestration.assets import report_folder
from evaluation_pipeline.orchestration.partitions import (
    candidate_pool_partitions,
    judgment_version_partitions,
)
from evaluation_pipeline.orchestration.resources import EvaluationStorage
from evaluation_pipeline.spec import EvaluationSpec


def _number(value: float | None, interval: list | None) -> str:
    if value is None:
        return "n/a"
    if interval and interval[0] is not None:
        return f"{value:.4f} [{interval[0]:.3f}, {interval[1]:.3f}]"
    return f"{value:.4f}"


def describe_reports(storage: EvaluationStorage, spec: EvaluationSpec, instance) -> str:
    """Each report under ``spec``: its folder, a table per ranker and cutoff, the headline."""
    lines = [f"spec {spec.spec_id}: {spec.describe()}"]
    for version in instance.get_dynamic_partitions(judgment_version_partitions.name):
        for pool in instance.get_dynamic_partitions(candidate_pool_partitions.name):
            folder = report_folder(pool, version, spec.spec_id)
            if not storage.exists(*folder, "report.json"):
                continue
            report = storage.read_json(*folder, "report.json")
            lineage = report["lineage"]
            lines += [
                "",
                f"== pool {pool} x judgments {version} "
                f"(sha256 {lineage['judgments_sha256'][:12]}, pool sha256 "
                f"{lineage['pool_sha256'][:12]})",
                f"   report: {storage.path(*folder, 'report.html')}",
                f"   {'ranker':<14} {'K':>3}  {'NDCG [CI]':<26} {'with number':>11} "
                f"{'queries':>7}",
            ]
            for row in report["results"]:
                lines.append(
                    f"   {row['ranker']:<14} {row['cutoff']:>3}  "
                    f"{_number(row['macro_ndcg'], row.get('macro_ndcg_interval')):<26} "
                    f"{row['n_with_number']:>11} {row['n_queries']:>7}"
                )
            lines += [f"   - {sentence}" for sentence in report["headline"]]
    if len(lines) == 1:
        lines.append("no reports yet")
    return "\n".join(lines)
