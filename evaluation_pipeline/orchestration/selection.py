"""Which evaluations are due: the selection that the evaluation sensor and the nightly schedule
share, the run key that names an evaluation by the content it reads, and whether an
evaluation's outputs are whole and current.

An evaluation (pool x version under a spec) is whole when its scores and its report files are
in the storage, its report's materialization is recorded, the report used the queries table
published now (its lineage's ``queries_sha256``, else the materialization's), and the
published inputs it read still have the bytes stamped at publish. Versions and pools
are immutable and the spec_id is in the path, so the queries table is what can move under a
report.
"""

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import dagster as dg

from evaluation_pipeline import settings
from evaluation_pipeline.io.landing import FileHashes
from evaluation_pipeline.io.storage import (
    AGGREGATES_FILE,
    HTML_FILE,
    QUERIES_FOLDER,
    REPORT_FILE,
    judgments_folder,
    pool_folder,
    report_folder,
    scores_file,
)
from evaluation_pipeline.nightly import verdicts as nightly
from evaluation_pipeline.orchestration.local_runner import RUN_KEY_TAG
from evaluation_pipeline.orchestration.partitions import DEFAULT, Naming, evaluation_key
from evaluation_pipeline.orchestration.resources import (
    EvaluationStorage,
    LandingZone,
    QualityPolicy,
)
from evaluation_pipeline.report.summary import StoredReport, describe_stored_reports
from evaluation_pipeline.spec import EvaluationSpec


def evaluable_pools(instance: dg.DagsterInstance, landing: LandingZone,
                    storage: EvaluationStorage, policy: QualityPolicy,
                    log=None, naming: Naming = DEFAULT) -> dict[str, dict]:
    """Manifests of the registered pools (of the instance ``naming`` names) that are still
    landed, published, and pass the shared-candidates rule when it is required (the same rule
    as the blocking check)."""
    pools = {}
    for pool in instance.get_dynamic_partitions(naming.candidate_pools.name):
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


def published_versions(instance: dg.DagsterInstance, storage: EvaluationStorage,
                       naming: Naming = DEFAULT) -> dict[str, dict]:
    """Manifests of the registered judgment versions (of the instance ``naming`` names) that
    are published, in landing order."""
    versions = {}
    for version in instance.get_dynamic_partitions(naming.judgment_versions.name):
        manifest = storage.manifest(*judgments_folder(version))
        if manifest is not None:
            versions[version] = manifest
    return versions


def due_pairs(versions: dict[str, dict], pools: dict[str, dict], nights: int
              ) -> Iterator[tuple[str, dict, str, dict]]:
    """(version, its manifest, pool, its manifest) of every pair within the backfill window:
    each version against the newest ``nights`` pools landed by its publication and every pool
    after (``nightly.backfill_window``); versions in landing order, pools in theirs."""
    ready = {pool: nightly.ready_at_of(manifest) for pool, manifest in pools.items()}
    for version, version_manifest in versions.items():
        window = nightly.backfill_window(ready, version_manifest[nightly.PUBLISHED_AT], nights)
        for pool, pool_manifest in pools.items():
            if pool in window:
                yield version, version_manifest, pool, pool_manifest


def outside_window(versions: dict[str, dict], pools: dict[str, dict], nights: int
                   ) -> dict[str, list[str]]:
    """Per version, the evaluable pools it is not scored against (older than its window), in
    night order: scored on demand, by a backfill of their partitions or with the window
    widened (NDCG_EVAL_BACKFILL_NIGHTS=0)."""
    due = {(version, pool) for version, _, pool, _ in due_pairs(versions, pools, nights)}
    order = nightly.night_order({pool: nightly.ready_at_of(m) for pool, m in pools.items()})
    left = {version: [pool for pool in order if (version, pool) not in due]
            for version in versions}
    return {version: pools for version, pools in left.items() if pools}


def describe_outside_window(instance: dg.DagsterInstance, landing: LandingZone,
                            storage: EvaluationStorage, policy: QualityPolicy,
                            naming: Naming = DEFAULT) -> str:
    """The end of `make run`'s account: the pools each version was not scored against, and
    how to score them (empty when there are none)."""
    nights = policy.backfill()
    left = outside_window(published_versions(instance, storage, naming),
                          evaluable_pools(instance, landing, storage, policy, naming=naming),
                          nights)
    if not left:
        return ""
    lines = [f"\nNot scored: older than the backfill window of {nights} nights "
             f"({settings.BACKFILL_NIGHTS.name}; a Dagster backfill of evaluation_report's "
             f"partitions, or {settings.BACKFILL_NIGHTS.name}=0 with the same command, scores "
             "them):"]
    lines += [f"  {version}: {len(pools)} pool(s): {', '.join(pools)}"
              for version, pools in left.items()]
    return "\n".join(lines) + "\n"


def storage_key(storage: EvaluationStorage) -> str:
    """A short name of the storage a run writes to, for run keys and cursors."""
    return hashlib.sha256(str(storage.base).encode()).hexdigest()[:12]


def evaluation_run_key(prefix: str, pool: str, version: str, pool_manifest: dict,
                       version_manifest: dict, queries_manifest: dict, spec: EvaluationSpec,
                       storage: str | None = None) -> str:
    """The content key of an evaluation: its inputs' hashes, the spec and (``storage``) the
    storage it writes to."""
    key = (f"{prefix}:{pool}:{version}:{version_manifest['sha256'][:16]}:"
           f"{pool_manifest['sha256'][:16]}:{queries_manifest['sha256'][:12]}:{spec.spec_id}")
    return f"{key}@{storage}" if storage else key


def stored_reports(storage: EvaluationStorage, spec: EvaluationSpec,
                   instance: dg.DagsterInstance,
                   naming: Naming = DEFAULT) -> Iterator[StoredReport]:
    """The report of every judgment version x pool of the instance under ``spec``, if written."""
    for version in instance.get_dynamic_partitions(naming.judgment_versions.name):
        for pool in instance.get_dynamic_partitions(naming.candidate_pools.name):
            folder = report_folder(pool, version, spec.spec_id)
            if storage.exists(*folder, REPORT_FILE):
                yield StoredReport(pool, version, storage.read_json(*folder, REPORT_FILE),
                                   str(storage.path(*folder, HTML_FILE)))


def describe_reports(storage: EvaluationStorage, spec: EvaluationSpec,
                     instance: dg.DagsterInstance, naming: Naming = DEFAULT) -> str:
    """``make run``'s closing table: the headline numbers of every stored report."""
    return describe_stored_reports(spec, stored_reports(storage, spec, instance, naming))


# Every evaluation run the sensor requests carries its content key (the run key of its first
# attempt) under this tag: a later run for the same content is told apart by its run key only.
EVALUATION_TAG = "ndcg_eval/evaluation"
# Likewise every ingest run, under this one.
INGEST_TAG = "ndcg_eval/ingest"
REPORT_FILES = (REPORT_FILE, HTML_FILE, AGGREGATES_FILE)


@dataclass(frozen=True)
class EvaluationState:
    """Whether an evaluation's outputs are whole; ``missing`` says what is not, and why."""

    pool: str
    version: str
    missing: str | None = None
    # True when re-running cannot help: a published input changed after publish.
    altered: bool = False

    @property
    def whole(self) -> bool:
        return self.missing is None


def altered_input(storage: EvaluationStorage, pool: str, version: str) -> str | None:
    """Why a published input of pool x version is not what was published, or None."""
    for what, folder in (("judgment version", judgments_folder(version)),
                         ("candidate pool", pool_folder(pool)),
                         ("queries table", QUERIES_FOLDER)):
        reason = storage.alteration(folder)
        if reason is not None:
            return f"the published {what} changed after publish: {reason}"
    return None


def _reported_queries_sha256(instance: dg.DagsterInstance, pool: str, version: str,
                             naming: Naming) -> str | None:
    """The queries hash recorded by the last materialization of the pair's report."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=naming.key("evaluation_report"),
                              asset_partitions=[str(evaluation_key(pool, version))]),
        limit=1).records
    if not records:
        return None
    value = records[0].asset_materialization.metadata.get("queries_sha256")
    return value.value if value is not None else None


def _lineage_queries_sha256(storage: EvaluationStorage, pool: str, version: str,
                            spec: EvaluationSpec) -> str | None:
    """The queries hash in the stored report.json's lineage (``lineage.queries_sha256``)."""
    report = storage.read_json(*report_folder(pool, version, spec.spec_id), REPORT_FILE)
    return report.get("lineage", {}).get("queries_sha256")


def evaluation_state(instance: dg.DagsterInstance, storage: EvaluationStorage, pool: str,
                     version: str, queries_manifest: dict, spec: EvaluationSpec,
                     naming: Naming = DEFAULT) -> EvaluationState:
    """Whether pool x version has whole, current outputs under ``spec`` (its report: the
    instance ``naming`` names)."""
    altered = altered_input(storage, pool, version)
    if altered is not None:
        return EvaluationState(pool, version, altered, altered=True)
    files = [scores_file(pool, version, spec.spec_id)] + [
        (*report_folder(pool, version, spec.spec_id), name) for name in REPORT_FILES]
    absent = [storage.path(*place) for place in files if not storage.exists(*place)]
    if absent:
        return EvaluationState(pool, version, "missing " + ", ".join(map(str, absent)))
    recorded = _reported_queries_sha256(instance, pool, version, naming)
    if recorded is None:
        return EvaluationState(pool, version, "the report's materialization is not recorded in "
                               "this Dagster instance (a run did not finish)")
    # The report's own lineage says which table it was made from; reports written before it
    # did rely on the materialization's record.
    reported = _lineage_queries_sha256(storage, pool, version, spec) or recorded
    if reported != queries_manifest["sha256"]:
        return EvaluationState(pool, version, f"the report used queries table sha256 "
                               f"{reported[:12]}; {queries_manifest['sha256'][:12]} is published")
    return EvaluationState(pool, version)


def expected_evaluations(instance: dg.DagsterInstance, landing: LandingZone,
                         storage: EvaluationStorage, policy: QualityPolicy, spec: EvaluationSpec,
                         log=None, naming: Naming = DEFAULT) -> list[EvaluationState]:
    """The state of every published version x evaluable pool within the version's backfill
    window (none before queries land)."""
    queries_manifest = storage.manifest(*QUERIES_FOLDER)
    if queries_manifest is None:
        return []
    pools = evaluable_pools(instance, landing, storage, policy, log, naming)
    return [evaluation_state(instance, storage, pool, version, queries_manifest, spec, naming)
            for version, _, pool, _ in due_pairs(published_versions(instance, storage, naming),
                                                 pools, policy.backfill())]


def unpublished_inputs(landing: LandingZone, storage: EvaluationStorage,
                       hashes: FileHashes | None = None) -> list[str]:
    """What the landing holds that the storage has not published: each judgment version and
    ready pool without a manifest there, and the queries table; in landing order. ``hashes``:
    the stamps of files hashed already (``sensors.landing_stamps``), not read again."""
    missing = [f"judgments {item.name} ({landing.judgment_file(item.name)})"
               for item in landing.judgment_files(hashes)[0]
               if storage.manifest(*judgments_folder(item.name)) is None]
    missing += [f"pool {item.name} ({landing.pool_folder(item.name)})"
                for item in landing.pool_folders(hashes)[0]
                if storage.manifest(*pool_folder(item.name)) is None]
    if landing.queries_file().is_file() and storage.manifest(*QUERIES_FOLDER) is None:
        missing.append(f"queries table ({landing.queries_file()})")
    return missing


def attempt_run_key(instance: dg.DagsterInstance, content_key: str,
                    content_tag: str = EVALUATION_TAG) -> str:
    """The run key of the next run for ``content_key``: the content key itself until a run of
    it succeeded, then one more per success (outputs that vanished after a success, e.g.
    deleted reports or a deleted manifest, get a new run: Dagster never launches a run key
    twice). ``content_tag``: the tag the runs carry their content key under."""
    successes = max(
        instance.get_runs_count(filters=dg.RunsFilter(
            tags={tag: content_key}, statuses=[dg.DagsterRunStatus.SUCCESS]))
        # Runs of earlier releases carry the run key alone.
        for tag in (content_tag, RUN_KEY_TAG))
    return content_key if successes == 0 else f"{content_key}:redo-{successes}"
