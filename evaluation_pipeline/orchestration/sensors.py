"""Sensors: a judgment version or pool that lands becomes a partition and gets ingested; pairs
whose inputs are published get evaluated.

Run keys are built from content hashes and the storage written to: Dagster never launches a
run key twice, so the same content is ingested once into a storage, changed content (or a
changed spec) gets a new key, and the same instance pointed at another storage publishes
everything there again. The landing sensors' cursors name their storage too: a cursor of
another storage counts nothing as seen.

The landing sensors keep each file's size, mtime and hash in their cursor: a tick hashes only
the files that changed since the last one, not every landed byte every 30 seconds. What is
expected comes from the landing, not the cursor alone: a landed input whose manifest is missing
from the storage (deleted after it was published) is ingested again under a new run key.
"""

import json
from collections.abc import Mapping
from dataclasses import astuple

import dagster as dg

from evaluation_pipeline import settings
from evaluation_pipeline.io.landing import FileHashes, FileStamp, LandingError
from evaluation_pipeline.io.storage import (
    DOCUMENTS_FOLDER,
    QUERIES_FOLDER,
    judgments_folder,
    pool_folder,
)
from evaluation_pipeline.orchestration.jobs import build_jobs
from evaluation_pipeline.orchestration.liveness import IN_FLIGHT, fail_dead_runs
from evaluation_pipeline.orchestration.partitions import (
    DEFAULT,
    PARTITION_TAG,
    Naming,
    evaluation_key,
    of_any_instance,
)
from evaluation_pipeline.orchestration.resources import EvaluationStorage
from evaluation_pipeline.orchestration.selection import (
    EVALUATION_TAG,
    INGEST_TAG,
    attempt_run_key,
    due_pairs,
    evaluable_pools,
    evaluation_run_key,
    evaluation_state,
    published_versions,
    storage_key,
)
from evaluation_pipeline.spec import EvaluationSpec

INTERVAL_SECONDS = 30
SOURCE_TAG = "ndcg_eval/source_sha256"


def _stamps(data: dict[str, list]) -> dict[str, FileStamp]:
    return {path: FileStamp(*values) for path, values in data.items()}


def _stamps_json(stamps: Mapping[str, FileStamp]) -> dict[str, list]:
    return {path: list(astuple(stamp)) for path, stamp in sorted(stamps.items())}


def landing_stamps(cursors: Mapping[str, str | None]) -> FileHashes:
    """The file stamps every landing sensor kept in ``cursors`` (sensor name -> cursor), as
    one ``FileHashes``: a listing of the landing through it reads again only the files that
    changed since the sensors hashed them (a 100M-row landing is 1 GB to hash)."""
    known: dict[str, FileStamp] = {}
    for cursor in cursors.values():
        data = json.loads(cursor) if cursor and cursor.startswith("{") else {}
        if isinstance(data.get("files"), dict):
            known.update(_stamps(data["files"]))
    return FileHashes(known)


# The landing's file stamps between runs of the main job, in the instance's key-value store
# (SQLite or PostgreSQL alike). The daemon keeps each sensor's whole cursor; the main job's
# runner starts its sensors without one (so that what a failed run left is requested again),
# and without the stamps it would hash every file ever landed, each night.
STAMPS_KEY = "ndcg_eval/landing_file_stamps"
LANDING_SENSORS = ("queries_changed", "documents_changed", "judgment_versions_landed",
                   "candidate_pools_landed")


def stamped_cursors(instance: dg.DagsterInstance, sensor_names: list[str]) -> dict[str, str]:
    """For each landing sensor of ``sensor_names``, a cursor holding only the file stamps the
    instance stored (``store_stamps``): nothing counts as seen, no unchanged file is read."""
    stored = instance.daemon_cursor_storage.get_cursor_values({STAMPS_KEY}).get(STAMPS_KEY)
    if not stored:
        return {}
    cursor = json.dumps({"landed": {}, "sha256": None, "files": json.loads(stored)})
    return {name: cursor for name in sensor_names
            if any(of_any_instance(name, base) for base in LANDING_SENSORS)}


def store_stamps(instance: dg.DagsterInstance, hashes: FileHashes) -> None:
    """Keep the file stamps of ``hashes`` (``landing_stamps``', with any taken since) for
    the next main job."""
    stamps = _stamps_json(hashes.known | hashes.settled)
    instance.daemon_cursor_storage.set_cursor_values({STAMPS_KEY: json.dumps(stamps)})


def _landed_cursor(cursor: str | None, storage: str
                   ) -> tuple[dict[str, str], dict[str, FileStamp]]:
    """The content hash per landed name and the file stamps that a landing sensor keeps.

    A cursor written before file stamps were kept is the name -> hash mapping alone: read that
    way, every file is hashed once more, and content already seen is not requested again.
    """
    data = json.loads(cursor) if cursor else {}
    if not isinstance(data.get("files"), dict):
        return data, {}
    # The file stamps hold for any storage (they are the landing's); what was seen does not.
    seen = data["landed"] if data.get("storage", storage) == storage else {}
    return seen, _stamps(data["files"])


def _queries_cursor(cursor: str | None, storage: str
                    ) -> tuple[str | None, dict[str, FileStamp]]:
    """The content hash of the queries (or documents) table last seen in ``storage`` and its
    file stamp.

    A cursor written before file stamps were kept is the bare hash."""
    if not cursor or not cursor.startswith("{"):
        return cursor or None, {}
    data = json.loads(cursor)
    seen = data["sha256"] if data.get("storage", storage) == storage else None
    return seen, _stamps(data["files"])


def _run_key(instance: dg.DagsterInstance, content_key: str, storage: EvaluationStorage,
             folder: tuple[str, ...]) -> str:
    """The content key while the storage holds the publication in ``folder``, or no run of it
    succeeded yet (one requested and not run yet keeps its key); the next attempt's key once
    a publication that a run made vanished."""
    if storage.manifest(*folder) is not None:
        return content_key
    return attempt_run_key(instance, content_key, INGEST_TAG)


def _table_sensor_result(context, source, kind: str, what: str, folder: tuple[str, ...],
                         storage: EvaluationStorage, naming: Naming = DEFAULT):
    """Request an ingest of the one table at ``source`` (the queries or the documents table)
    when its file's hash is new to ``storage``, or its publication in ``folder`` vanished after
    a run published it. ``kind``: the asset's name, in the content key."""
    where = storage_key(storage)
    previous, known = _queries_cursor(context.cursor, where)
    hashes = FileHashes(known)
    sha = hashes.sha256(source)
    context.update_cursor(json.dumps({"sha256": sha, "files": _stamps_json(hashes.settled),
                                      "storage": where}, sort_keys=True))
    content_key = f"{naming.name(kind)}:{sha}@{where}"
    run_key = _run_key(context.instance, content_key, storage, folder)
    if previous == sha and run_key == content_key:
        return dg.SkipReason(f"{what} unchanged")
    return dg.RunRequest(run_key=run_key, tags={SOURCE_TAG: sha, INGEST_TAG: content_key})


def _landed_sensor_result(context, list_landed, partitions_def, job, kind, storage, place,
                          naming=DEFAULT):
    """Register new names as partitions and request an ingest run for new or changed content
    (new to ``storage``).

    ``list_landed(hashes)`` lists the landing folder, hashing through ``hashes``."""
    where = storage_key(storage)
    seen, known = _landed_cursor(context.cursor, where)
    hashes = FileHashes(known)
    items, skipped = list_landed(hashes)
    refused = [str(entry) for entry in skipped if entry.refused]
    for entry in skipped:
        context.log.warning(f"skipped: {entry}")
    registered = set(context.instance.get_dynamic_partitions(partitions_def.name))
    new_names = [item.name for item in items if item.name not in registered]
    # New or changed content, and content seen before whose publication vanished from the
    # storage after a run published it.
    requests = []
    for item in items:
        # Another instance's content keys are its own, even for the same file.
        content_key = f"{naming.name(kind)}:{item.name}:{item.files_sha256}@{where}"
        new = seen.get(item.name) != item.files_sha256
        run_key = _run_key(context.instance, content_key, storage, place(item.name))
        if new or run_key != content_key:
            requests.append(dg.RunRequest(
                run_key=run_key, job_name=job.name, partition_key=item.name,
                tags={SOURCE_TAG: item.files_sha256, INGEST_TAG: content_key}))
    cursor = json.dumps({"landed": seen | {item.name: item.files_sha256 for item in items},
                         "files": _stamps_json(hashes.settled), "storage": where}, sort_keys=True)
    if not requests and not new_names:
        if refused:
            # A failed tick is what Dagster shows as a problem. It fails only once the valid
            # entries are requested (on this tick or an earlier one), so one bad name never
            # holds the others back.
            raise LandingError(f"{len(refused)} {kind} landing entr"
                               f"{'y is' if len(refused) == 1 else 'ies are'} refused: "
                               + "; ".join(refused))
        # Kept even when nothing is requested: a file touched without a change is then not
        # hashed again on the next tick.
        context.update_cursor(cursor)
        return dg.SkipReason(f"no new or changed {kind} in the landing folder")
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[partitions_def.build_add_request(new_names)]
        if new_names else [],
        cursor=cursor,
    )


def build_ingest_sensors(naming: Naming = DEFAULT) -> list[dg.SensorDefinition]:
    """The landing sensors of the instance ``naming`` names, requesting its ingest jobs."""
    jobs = build_jobs(naming)
    # The resources are the instance's keys, read from the context. A sensor called directly
    # (the local runner, the tests) is also handed them as keyword arguments (``_by_key``);
    # the daemon hands none.

    @dg.sensor(
        name=naming.name("judgment_versions_landed"),
        jobs=[jobs.ingest_judgments],
        required_resource_keys=naming.resource_keys("landing", "storage"),
        minimum_interval_seconds=INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="A file in <landing>/judgments/ becomes a judgment version partition and is "
        "ingested.",
    )
    def judgment_versions_sensor(context: dg.SensorEvaluationContext, **_by_key):
        landing, storage = naming.resources(context, "landing", "storage")
        return _landed_sensor_result(context, landing.judgment_files, naming.judgment_versions,
                                     jobs.ingest_judgments, "judgments", storage,
                                     judgments_folder, naming)

    @dg.sensor(
        name=naming.name("candidate_pools_landed"),
        jobs=[jobs.ingest_pool],
        required_resource_keys=naming.resource_keys("landing", "storage"),
        minimum_interval_seconds=INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="A folder in <landing>/pools/ with a _READY marker becomes a candidate pool "
        "partition and is ingested.",
    )
    def candidate_pools_sensor(context: dg.SensorEvaluationContext, **_by_key):
        landing, storage = naming.resources(context, "landing", "storage")
        return _landed_sensor_result(context, landing.pool_folders, naming.candidate_pools,
                                     jobs.ingest_pool, "pool", storage, pool_folder,
                                     naming)

    @dg.sensor(
        name=naming.name("queries_changed"),
        job=jobs.ingest_queries,
        required_resource_keys=naming.resource_keys("landing", "storage"),
        minimum_interval_seconds=INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="The queries table (weights, slices) is ingested when its content changes.",
    )
    def queries_sensor(context: dg.SensorEvaluationContext, **_by_key):
        landing, storage = naming.resources(context, "landing", "storage")
        source = landing.queries_file()
        if not source.is_file():
            return dg.SkipReason(f"no queries table at {source}")
        return _table_sensor_result(context, source, "queries", "queries table", QUERIES_FOLDER,
                                    storage, naming)

    @dg.sensor(
        name=naming.name("documents_changed"),
        job=jobs.ingest_documents,
        required_resource_keys=naming.resource_keys("landing", "storage"),
        minimum_interval_seconds=INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="The documents table the judge reads is ingested when its content changes.",
    )
    def documents_sensor(context: dg.SensorEvaluationContext, **_by_key):
        landing, storage = naming.resources(context, "landing", "storage")
        source = landing.documents_file()
        if source is None:
            return dg.SkipReason(f"no documents table named ({settings.DOCUMENTS.name} unset)")
        if not source.is_file():
            return dg.SkipReason(f"no documents table at {source}")
        return _table_sensor_result(context, source, "documents", "documents table",
                                    DOCUMENTS_FOLDER, storage, naming)

    return [judgment_versions_sensor, candidate_pools_sensor, queries_sensor, documents_sensor]


def build_evaluation_sensor(spec: EvaluationSpec,
                            naming: Naming = DEFAULT) -> dg.SensorDefinition:
    """The sensor of the instance ``naming`` names that requests its evaluation job."""

    @dg.sensor(
        name=naming.name("evaluations_ready"),
        job=build_jobs(naming).evaluation,
        required_resource_keys=naming.resource_keys("landing", "storage", "policy"),
        minimum_interval_seconds=INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Every published judgment version x active pool within the version's "
        "backfill window without a whole, current report under the current spec is evaluated "
        "(again, after a failed or killed run).",
    )
    def evaluation_sensor(context: dg.SensorEvaluationContext, **_by_key):
        landing, storage, policy = naming.resources(context, "landing", "storage", "policy")
        queries_manifest = storage.manifest(*QUERIES_FOLDER)
        if queries_manifest is None:
            return dg.SkipReason("the queries table is not published yet")
        versions = published_versions(context.instance, storage, naming)
        pools = evaluable_pools(context.instance, landing, storage, policy, context.log, naming)
        # A run whose process was killed is not in flight: it failed, and is retried below.
        fail_dead_runs(context.instance)
        # Runs already queued or running (from this sensor, a schedule or automation).
        in_flight = {
            run.tags.get(PARTITION_TAG)
            for run in context.instance.get_runs(filters=dg.RunsFilter(statuses=IN_FLIGHT))
        }
        requests = []
        for version, version_manifest, pool, pool_manifest in due_pairs(versions, pools,
                                                                         policy.backfill()):
            key = evaluation_key(pool, version)
            if key in in_flight:
                continue
            state = evaluation_state(context.instance, storage, pool, version,
                                     queries_manifest, spec, naming)
            if state.whole:
                continue
            if state.altered:
                # Scoring would refuse the altered input anyway: say so, do not retry.
                context.log.error(f"{pool} x {version} not evaluated: {state.missing}")
                continue
            content_key = evaluation_run_key(naming.name("evaluate"), pool, version,
                                             pool_manifest, version_manifest, queries_manifest,
                                             spec, storage_key(storage))
            requests.append(dg.RunRequest(
                run_key=attempt_run_key(context.instance, content_key),
                partition_key=key,
                tags={EVALUATION_TAG: content_key},
            ))
        return requests or dg.SkipReason("every published pair has a whole report under spec "
                                         f"{spec.spec_id}")

    return evaluation_sensor


# The project's own code location's (no prefix).
ingest_sensors = build_ingest_sensors(DEFAULT)
