"""Which evaluations are due: the selection that the evaluation sensor and the nightly schedule
share, and the run key that names an evaluation by the content it reads."""

from collections.abc import Iterator

import dagster as dg

from evaluation_pipeline.io.storage import (
    HTML_FILE,
    REPORT_FILE,
    judgments_folder,
    pool_folder,
    report_folder,
)
from evaluation_pipeline.orchestration.partitions import (
    candidate_pool_partitions,
    judgment_version_partitions,
)
from evaluation_pipeline.orchestration.resources import (
    EvaluationStorage,
    LandingZone,
    QualityPolicy,
)
from evaluation_pipeline.report.summary import StoredReport, describe_stored_reports
from evaluation_pipeline.spec import EvaluationSpec


def evaluable_pools(instance: dg.DagsterInstance, landing: LandingZone,
                    storage: EvaluationStorage, policy: QualityPolicy,
                    log=None) -> dict[str, dict]:
    """Manifests of the registered pools that are still landed, published, and pass the
    shared-candidates rule when it is required (the same rule as the blocking check)."""
    pools = {}
    for pool in instance.get_dynamic_partitions(candidate_pool_partitions.name):
        manifest = storage.manifest(*pool_folder(pool))
        if manifest is None or not landing.is_active(pool):
            continue
        if policy.require_shared_candidates and not manifest["shared_candidate_sets"]:
            if log is not None:
                log.warning(f"pool {pool}: rankers rank different candidate sets; not scored "
                            "while QualityPolicy.require_shared_candidates is set")
            continue
        pools[pool] = manifest
    return pools


def published_versions(instance: dg.DagsterInstance, storage: EvaluationStorage) -> dict[str, dict]:
    """Manifests of the registered judgment versions that are published, in landing order."""
    versions = {}
    for version in instance.get_dynamic_partitions(judgment_version_partitions.name):
        manifest = storage.manifest(*judgments_folder(version))
        if manifest is not None:
            versions[version] = manifest
    return versions


def evaluation_run_key(prefix: str, pool: str, version: str, pool_manifest: dict,
                       version_manifest: dict, queries_manifest: dict, spec: EvaluationSpec) -> str:
    return (f"{prefix}:{pool}:{version}:{version_manifest['sha256'][:16]}:"
            f"{pool_manifest['sha256'][:16]}:{queries_manifest['sha256'][:12]}:{spec.spec_id}")


def stored_reports(storage: EvaluationStorage, spec: EvaluationSpec,
                   instance: dg.DagsterInstance) -> Iterator[StoredReport]:
    """The report of every judgment version x pool of the instance under ``spec``, if written."""
    for version in instance.get_dynamic_partitions(judgment_version_partitions.name):
        for pool in instance.get_dynamic_partitions(candidate_pool_partitions.name):
            folder = report_folder(pool, version, spec.spec_id)
            if storage.exists(*folder, REPORT_FILE):
                yield StoredReport(pool, version, storage.read_json(*folder, REPORT_FILE),
                                   str(storage.path(*folder, HTML_FILE)))


def describe_reports(storage: EvaluationStorage, spec: EvaluationSpec,
                     instance: dg.DagsterInstance) -> str:
    """``make run``'s closing table: the headline numbers of every stored report."""
    return describe_stored_reports(spec, stored_reports(storage, spec, instance))
