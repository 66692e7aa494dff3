"""The nightly schedule: the latest judgment version against every active pool."""

import dagster as dg

from evaluation_pipeline import settings
from evaluation_pipeline.io.storage import QUERIES_FOLDER
from evaluation_pipeline.orchestration.gate_record import headline_candidates
from evaluation_pipeline.orchestration.jobs import build_jobs
from evaluation_pipeline.orchestration.partitions import DEFAULT, Naming, evaluation_key
from evaluation_pipeline.orchestration.selection import (
    due_pairs,
    evaluable_pools,
    evaluation_run_key,
    published_versions,
    storage_key,
)
from evaluation_pipeline.spec import EvaluationSpec

# The schedule's defaults are its settings' (NDCG_EVAL_NIGHTLY_CRON, NDCG_EVAL_NIGHTLY_TIMEZONE).
DEFAULT_CRON = settings.NIGHTLY_CRON.value_default
DEFAULT_TIMEZONE = settings.NIGHTLY_TIMEZONE.value_default


def build_nightly_schedule(spec: EvaluationSpec, cron: str = DEFAULT_CRON,
                           timezone: str = DEFAULT_TIMEZONE,
                           naming: Naming = DEFAULT) -> dg.ScheduleDefinition:
    """The nightly schedule of the instance ``naming`` names, requesting its evaluation job."""

    # A schedule called directly is also handed its resources by key (``_by_key``); it reads
    # them from the context, as the daemon's ticks do.
    @dg.schedule(
        name=naming.name("nightly_evaluation"),
        job=build_jobs(naming).evaluation,
        required_resource_keys=naming.resource_keys("landing", "storage", "policy"),
        cron_schedule=cron,
        execution_timezone=timezone,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Evaluate the latest judgment version (the last to land that the judge's "
        "gate did not refuse) against every active candidate pool within its backfill window.",
    )
    def nightly_evaluation(context: dg.ScheduleEvaluationContext, **_by_key):
        landing, storage, policy = naming.resources(context, "landing", "storage", "policy")
        # The last promoted version: one the judge's gate refused is not the headline.
        versions = headline_candidates(storage, published_versions(context.instance, storage,
                                                                   naming))
        queries_manifest = storage.manifest(*QUERIES_FOLDER)
        if not versions or queries_manifest is None:
            return dg.SkipReason("no published judgment version or queries table yet")
        latest, latest_manifest = list(versions.items())[-1]
        pools = evaluable_pools(context.instance, landing, storage, policy, context.log, naming)
        pools = {pool: manifest for _, _, pool, manifest in due_pairs(
            {latest: latest_manifest}, pools, policy.backfill())}
        if not pools:
            return dg.SkipReason("no active published candidate pool")
        # One run per pool and night: the key repeats only if the same night is evaluated twice.
        night = context.scheduled_execution_time.date().isoformat()
        return [
            dg.RunRequest(
                run_key=evaluation_run_key(naming.name(f"nightly-{night}"), pool, latest,
                                           manifest, latest_manifest, queries_manifest, spec,
                                           storage_key(storage)),
                partition_key=evaluation_key(pool, latest),
            )
            for pool, manifest in pools.items()
        ]

    return nightly_evaluation
