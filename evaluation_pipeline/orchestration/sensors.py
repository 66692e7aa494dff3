"""Sensors: a judgment version or pool that lands becomes a partition and gets ingested; pairs
whose inputs are published get evaluated.

Run keys are built from content hashes: Dagster never launches a run key twice, so the same
content is ingested once, and changed content (or a changed spec) gets a new key.
"""

import json

import dagster as dg

from evaluation_pipeline.io.landing import file_sha256
from evaluation_pipeline.io.storage import QUERIES_FOLDER, report_file
from evaluation_pipeline.orchestration.jobs import (
    evaluation_job,
    ingest_judgments_job,
    ingest_pool_job,
    ingest_queries_job,
)
from evaluation_pipeline.orchestration.partitions import (
    PARTITION_TAG,
    candidate_pool_partitions,
    evaluation_key,
    judgment_version_partitions,
)
from evaluation_pipeline.orchestration.resources import (
    EvaluationStorage,
    LandingZone,
    QualityPolicy,
)
from evaluation_pipeline.orchestration.selection import (
    evaluable_pools,
    evaluation_run_key,
    published_versions,
)
from evaluation_pipeline.spec import EvaluationSpec

INTERVAL_SECONDS = 30
SOURCE_TAG = "ndcg_eval/source_sha256"
_IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


def _landed_sensor_result(context, items, skipped, partitions_def, job, kind):
    """Register new names as partitions and request an ingest run for new or changed content."""
    for reason in skipped:
        context.log.warning(f"skipped: {reason}")
    seen = json.loads(context.cursor) if context.cursor else {}
    registered = set(context.instance.get_dynamic_partitions(partitions_def.name))
    new_names = [item.name for item in items if item.name not in registered]
    requests = [
        dg.RunRequest(
            run_key=f"{kind}:{item.name}:{item.files_sha256}",
            job_name=job.name,
            partition_key=item.name,
            tags={SOURCE_TAG: item.files_sha256},
        )
        for item in items
        if seen.get(item.name) != item.files_sha256
    ]
    if not requests and not new_names:
        return dg.SkipReason(f"no new or changed {kind} in the landing folder")
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[partitions_def.build_add_request(new_names)]
        if new_names else [],
        cursor=json.dumps(seen | {item.name: item.files_sha256 for item in items},
                          sort_keys=True),
    )


@dg.sensor(
    name="judgment_versions_landed",
    jobs=[ingest_judgments_job],
    minimum_interval_seconds=INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="A file in <landing>/judgments/ becomes a judgment version partition and is "
    "ingested.",
)
def judgment_versions_sensor(context: dg.SensorEvaluationContext, landing: LandingZone):
    items, skipped = landing.judgment_files()
    return _landed_sensor_result(context, items, skipped, judgment_version_partitions,
                                 ingest_judgments_job, "judgments")


@dg.sensor(
    name="candidate_pools_landed",
    jobs=[ingest_pool_job],
    minimum_interval_seconds=INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="A folder in <landing>/pools/ with a _READY marker becomes a candidate pool "
    "partition and is ingested.",
)
def candidate_pools_sensor(context: dg.SensorEvaluationContext, landing: LandingZone):
    items, skipped = landing.pool_folders()
    return _landed_sensor_result(context, items, skipped, candidate_pool_partitions,
                                 ingest_pool_job, "pool")


@dg.sensor(
    name="queries_changed",
    job=ingest_queries_job,
    minimum_interval_seconds=INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="The queries table (weights, slices) is ingested when its content changes.",
)
def queries_sensor(context: dg.SensorEvaluationContext, landing: LandingZone):
    source = landing.queries_file()
    if not source.is_file():
        return dg.SkipReason(f"no queries table at {source}")
    sha = file_sha256(source)
    if context.cursor == sha:
        return dg.SkipReason("queries table unchanged")
    context.update_cursor(sha)
    return dg.RunRequest(run_key=f"queries:{sha}", tags={SOURCE_TAG: sha})


def build_evaluation_sensor(spec: EvaluationSpec) -> dg.SensorDefinition:
    @dg.sensor(
        name="evaluations_ready",
        job=evaluation_job,
        minimum_interval_seconds=INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Every published judgment version x active pool without a report under "
        "the current spec is evaluated.",
    )
    def evaluation_sensor(context: dg.SensorEvaluationContext, landing: LandingZone,
                          storage: EvaluationStorage, policy: QualityPolicy):
        queries_manifest = storage.manifest(*QUERIES_FOLDER)
        if queries_manifest is None:
            return dg.SkipReason("the queries table is not published yet")
        versions = published_versions(context.instance, storage)
        pools = evaluable_pools(context.instance, landing, storage, policy, context.log)
        # Runs already queued or running (from this sensor, a schedule or automation).
        in_flight = {
            run.tags.get(PARTITION_TAG)
            for run in context.instance.get_runs(filters=dg.RunsFilter(statuses=_IN_FLIGHT))
        }
        requests = []
        for version, version_manifest in versions.items():
            for pool, pool_manifest in pools.items():
                key = evaluation_key(pool, version)
                if key in in_flight or storage.exists(*report_file(pool, version, spec.spec_id)):
                    continue
                requests.append(dg.RunRequest(
                    run_key=evaluation_run_key("evaluate", pool, version, pool_manifest,
                                               version_manifest, queries_manifest, spec),
                    partition_key=key,
                ))
        return requests or dg.SkipReason("every published pair has a report under spec "
                                         f"{spec.spec_id}")

    return evaluation_sensor


ingest_sensors = [judgment_versions_sensor, candidate_pools_sensor, queries_sensor]
