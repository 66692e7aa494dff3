"""The nightly schedule: the latest judgment version against every active pool."""

import dagster as dg

from evaluation_pipeline.io.storage import QUERIES_FOLDER
from evaluation_pipeline.orchestration.jobs import evaluation_job
from evaluation_pipeline.orchestration.partitions import evaluation_key
from evaluation_pipeline.orchestration.resources import (
    EvaluationStorage,
    LandingZone,
    QualityPolicy,
)
from evaluation_pipeline.orchestration.selection import (
    due_pairs,
    evaluable_pools,
    evaluation_run_key,
    published_versions,
    storage_key,
)
from evaluation_pipeline.spec import EvaluationSpec

DEFAULT_CRON = "0 2 * * *"
DEFAULT_TIMEZONE = "UTC"


def build_nightly_schedule(spec: EvaluationSpec, cron: str = DEFAULT_CRON,
                           timezone: str = DEFAULT_TIMEZONE) -> dg.ScheduleDefinition:
    @dg.schedule(
        name="nightly_evaluation",
        job=evaluation_job,
        cron_schedule=cron,
        execution_timezone=timezone,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Evaluate the latest judgment version (the last to land) against every "
        "active candidate pool within its backfill window.",
    )
    def nightly_evaluation(context: dg.ScheduleEvaluationContext, landing: LandingZone,
                           storage: EvaluationStorage, policy: QualityPolicy):
        versions = published_versions(context.instance, storage)
        queries_manifest = storage.manifest(*QUERIES_FOLDER)
        if not versions or queries_manifest is None:
            return dg.SkipReason("no published judgment version or queries table yet")
        latest, latest_manifest = list(versions.items())[-1]
        pools = evaluable_pools(context.instance, landing, storage, policy, context.log)
        pools = {pool: manifest for _, _, pool, manifest in due_pairs(
            {latest: latest_manifest}, pools, policy.backfill())}
        if not pools:
            return dg.SkipReason("no active published candidate pool")
        # One run per pool and night: the key repeats only if the same night is evaluated twice.
        night = context.scheduled_execution_time.date().isoformat()
        return [
            dg.RunRequest(
                run_key=evaluation_run_key(f"nightly-{night}", pool, latest, manifest,
                                           latest_manifest, queries_manifest, spec,
                                           storage_key(storage)),
                partition_key=evaluation_key(pool, latest),
            )
            for pool, manifest in pools.items()
        ]

    return nightly_evaluation
