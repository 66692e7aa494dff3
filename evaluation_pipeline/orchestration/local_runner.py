"""Drive the sensors in process, as the Dagster daemon would, until nothing new is requested.

Used by ``make run`` and the tests: each tick registers the partitions a sensor asks for, skips
run keys that already have a successful run (the daemon's deduplication), and executes the
other requests in process against the given instance. Runs carry the sensor and run-key tags
the daemon uses, so a later ``dagster dev`` on the same instance does not launch them again, and
the origin of the code location ``dagster dev -w workspace.yaml`` serves (location
``evaluation_pipeline``, the ``defs`` of ``evaluation_pipeline.definitions``). A run that
``JobDefinition.execute_in_process`` records has no job origin, and the UI lists it under no job:
the Jobs page and the Overview timeline say "No runs found". This module's ``execute_job``
creates the run with the origins, so it carries the repository label the UI filters a job's runs
by, and executes it here, step after step, as ``execute_in_process`` does.

Why from Dagster's own modules: Dagster's public API has no way to give a run executed in this
process its remote origin. ``dagster.execute_job`` (as ``execute_in_process``, ``materialize``,
``dagster job execute`` and ``dg launch``) creates the run with the job's Python origin only;
the Jobs page lists a job's runs by the repository label that the remote origin tags a run with,
and the Overview timeline skips a run whose origin is missing. Only a run launched through a
workspace (the daemon's sensors, the webserver, ``dagster job launch``) gets one, and each such
run executes in a process of its own that imports the code location again: more CPU time than
a whole run here. tests/deploy/slow/test_dagster_ui.py holds what the UI shows of these runs.

A run key counts as done only when a run of it succeeded. A failed run, or one left STARTED by
a process that was killed (see ``liveness``), is executed again: up to ``max_attempts`` times
per runner, with a doubling pause between attempts, and then reported as failed. The next
runner (the next ``make run``) tries again. A failure caused by the input itself (an
``EvaluationError``: invalid rows, a refused republish) is not retried: it would fail the same.
The retries are the runner's, not a ``dagster.RetryPolicy`` on the steps: under a policy Dagster
retries a step that a stop signal interrupted, and the run it was to stop succeeds.
"""

import os
import signal
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import dagster as dg
from dagster._core.code_pointer import ModuleCodePointer
from dagster._core.definitions.job_base import InMemoryJob
from dagster._core.execution.api import create_execution_plan, execute_run
from dagster._core.execution.execute_in_process import merge_run_tags
from dagster._core.origin import JobPythonOrigin, RepositoryPythonOrigin
from dagster._core.remote_origin import (
    ManagedGrpcPythonEnvCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

from evaluation_pipeline.io.storage import REPO
from evaluation_pipeline.orchestration.liveness import (
    IN_FLIGHT,
    fail_dead_runs,
    process_tags,
)
from evaluation_pipeline.orchestration.partitions import of_any_instance
from schemas.errors import EvaluationError

RUN_KEY_TAG = "dagster/run_key"
SENSOR_NAME_TAG = "dagster/sensor_name"

# The order in which a fresh landing folder becomes reports: inputs first, then evaluations.
# A code location with several instances has these under each instance's prefix.
DRIVEN_SENSORS = (
    "queries_changed",
    "documents_changed",
    "judgment_versions_landed",
    "candidate_pools_landed",
    "evaluations_ready",
)
MAX_ATTEMPTS = 3
BACKOFF_SECONDS = 1.0
# As workspace.yaml (and pyproject.toml's [tool.dagster]) name them.
LOCATION_NAME = "evaluation_pipeline"
DEFINITIONS_MODULE = "evaluation_pipeline.definitions"
DEFINITIONS_ATTRIBUTE = "defs"


def _loadable_target() -> LoadableTargetOrigin:
    return LoadableTargetOrigin(executable_path=sys.executable, module_name=DEFINITIONS_MODULE,
                                attribute=DEFINITIONS_ATTRIBUTE, working_directory=str(REPO))


def job_origins(defs: dg.Definitions, job_name: str) -> tuple[RemoteJobOrigin, JobPythonOrigin]:
    """(the remote origin the UI and the daemon know the job by, its Python origin)."""
    repository = RemoteRepositoryOrigin(
        code_location_origin=ManagedGrpcPythonEnvCodeLocationOrigin(
            loadable_target_origin=_loadable_target(), location_name=LOCATION_NAME),
        repository_name=defs.get_repository_def().name,
    )
    python = RepositoryPythonOrigin(
        executable_path=sys.executable,
        code_pointer=ModuleCodePointer(DEFINITIONS_MODULE, DEFINITIONS_ATTRIBUTE,
                                       working_directory=str(REPO)),
    )
    return repository.get_job_origin(job_name), python.get_job_origin(job_name)


def execute_job(defs: dg.Definitions, job_name: str, instance: dg.DagsterInstance, *,
                partition_key: str | None = None, tags: Mapping[str, str] | None = None,
                run_config: Mapping[str, object] | None = None):
    """Create a run of ``job_name`` with the code location's origins and execute it in this
    process; returns the execution result (``success``, ``run_id``, ``all_events``)."""
    job_def = defs.resolve_job_def(job_name)
    # The in-process executor, the job's own resources: what execute_in_process runs.
    ephemeral = job_def.as_ephemeral_job(resource_defs={}, input_values={})
    run_config = dict(run_config or {})
    job = InMemoryJob(ephemeral)
    plan = create_execution_plan(job, run_config=run_config, instance_ref=(
        instance.get_ref() if instance.is_persistent else None))
    remote_origin, python_origin = job_origins(defs, job_name)
    run = instance.create_run_for_job(
        job_def=ephemeral,
        execution_plan=plan,
        run_config=run_config,
        # The partition's tags, after the key is validated against the instance's partitions.
        tags=merge_run_tags(job_def=job_def, partition_key=partition_key, tags=tags,
                            asset_selection=None, instance=instance, run_config=run_config),
        remote_job_origin=remote_origin,
        job_code_origin=python_origin,
    )
    return execute_run(job, run, instance, raise_on_error=False)


@dataclass
class RunOutcome:
    sensor: str
    job: str
    partition: str | None
    run_key: str | None
    success: bool
    run_id: str
    error: str | None = None
    attempts: int = 1
    # False when the failure came from the input itself (retrying would fail the same way).
    retriable: bool = True


class StopRequested(Exception):
    """A stop was asked for (SIGTERM, SIGINT): no further run or retry is started."""


@dataclass
class LocalRunner:
    defs: dg.Definitions
    instance: dg.DagsterInstance
    cursors: dict[str, str | None] = field(default_factory=dict)
    # Run logs go to the instance (and the UI); the terminal shows warnings and errors only.
    log_level: str = "WARNING"
    max_attempts: int = MAX_ATTEMPTS
    backoff_seconds: float = BACKOFF_SECONDS
    # Sensor ticks that raised, as "sensor: message" (a refused landing name, for one).
    tick_errors: list[str] = field(default_factory=list)
    # Run keys that failed in this runner: not executed again until the next runner.
    failed_keys: set[str] = field(default_factory=set)
    # Set by a stop signal's handler: the run it interrupted is not retried, and nothing
    # more is started (``StopRequested``); a rerun resumes from what the instance records.
    stop: threading.Event = field(default_factory=threading.Event)
    # Which signal asked for it, when its handler saw it (Dagster takes it during a run).
    stop_signal: int | None = None

    # A pipe the interpreter writes each signal's number to (``main_job.stop_signals``).
    signals: int | None = None
    # The run executing now, as "job partition"; after a stop, the one the stop interrupted
    # (it is recorded as failed), or None when the stop came between runs.
    running: str | None = None

    def check_stop(self) -> None:
        if self.signals is not None:
            try:
                received = os.read(self.signals, 512)
            except BlockingIOError:
                received = b""
            if signal.SIGINT in received or signal.SIGTERM in received:
                self.stop.set()
        if self.stop.is_set():
            raise StopRequested("stopped on request")

    def tick(self, sensor_name: str) -> list[RunOutcome]:
        """One evaluation of a sensor and the execution of the runs it requests."""
        # Before any decision: a run whose process is gone is not running, it failed.
        fail_dead_runs(self.instance)
        sensor = self.defs.resolve_sensor_def(sensor_name)
        context = dg.build_sensor_context(
            instance=self.instance, cursor=self.cursors.get(sensor_name),
            definitions=self.defs, resources=self.defs.resources,
            sensor_name=sensor_name,
        )
        # Invoked directly: the daemon's resolution step would validate the partition keys of
        # a request before the partitions it registers in the same result exist.
        try:
            result = sensor(context)
        except Exception as exc:  # noqa: BLE001 - the daemon records a raising tick, goes on
            self.tick_errors.append(f"{sensor_name}: {exc}")
            return []
        requests, partition_requests, cursor = _unpack(result, context.cursor)
        self.cursors[sensor_name] = cursor
        for request in partition_requests:
            if isinstance(request, dg.AddDynamicPartitionsRequest):
                self.instance.add_dynamic_partitions(request.partitions_def_name,
                                                     list(request.partition_keys))
        outcomes = []
        for request in requests:
            if request.run_key and (request.run_key in self.failed_keys
                                    or self._done_or_running(request.run_key)):
                continue
            job_name = request.job_name or sensor.job_name
            outcome = self.execute_until_done(job_name, request, sensor_name)
            if not outcome.success and request.run_key:
                self.failed_keys.add(request.run_key)
            outcomes.append(outcome)
        return outcomes

    def execute_until_done(self, job_name: str, request: dg.RunRequest,
                           sensor_name: str | None = None) -> RunOutcome:
        """Execute ``request`` until a run succeeds, at most ``max_attempts`` times."""
        for attempt in range(1, self.max_attempts + 1):
            self.check_stop()
            outcome = self.execute(job_name, request, sensor_name)
            outcome.attempts = attempt
            self.check_stop()  # an interrupted run is the stop's doing: never retried
            if outcome.success or not outcome.retriable:
                return outcome
            if attempt < self.max_attempts:
                time.sleep(self.backoff_seconds * 2 ** (attempt - 1))
        outcome.error = f"{outcome.error} (gave up after {self.max_attempts} attempts)"
        return outcome

    def execute(self, job_name: str, request: dg.RunRequest,
                sensor_name: str | None = None) -> RunOutcome:
        tags = dict(request.tags) | process_tags()
        if sensor_name:
            tags[SENSOR_NAME_TAG] = sensor_name
        if request.run_key:
            tags[RUN_KEY_TAG] = request.run_key
        # Left set if the stop's interruption escapes the run: it is the run interrupted.
        self.running = f"{job_name} {request.partition_key or ''}".strip()
        result = execute_job(
            self.defs, job_name, self.instance, partition_key=request.partition_key, tags=tags,
            run_config={"loggers": {"console": {"config": {"log_level": self.log_level}}}},
        )
        interrupted = not result.success and _interrupted(result)
        if not interrupted:
            self.running = None
        error, retriable = None, False
        if not result.success:
            failures = [(e.step_key, e.step_failure_data.error) for e in result.all_events
                        if e.is_step_failure and e.step_failure_data.error]
            error = "; ".join(f"{step}: {_root(failure).message.strip()}"
                              for step, failure in failures) or "run failed"
            retriable = not failures or not all(_caused_by_input(failure)
                                                for _, failure in failures)
            if interrupted:
                # Dagster took the stop signal itself (it interrupts the step under way): the
                # run is the stop's doing, so nothing is retried and nothing more starts.
                self.stop.set()
        return RunOutcome(sensor_name or "", job_name, request.partition_key, request.run_key,
                          result.success, result.run_id, error, retriable=retriable)

    def run_until_quiet(self, max_rounds: int = 5) -> list[RunOutcome]:
        """Tick every driven sensor, round after round, until a round launches nothing."""
        outcomes: list[RunOutcome] = []
        for _ in range(max_rounds):
            self.check_stop()
            launched = [o for name in self.driven_sensors() for o in self.tick(name)]
            outcomes += launched
            if not launched:
                break
        return outcomes

    def driven_sensors(self) -> list[str]:
        """The sensors of DRIVEN_SENSORS, in that order, of every instance in the location."""
        names = sorted(sensor.name for sensor in self.defs.sensors or [])
        return [name for base in DRIVEN_SENSORS for name in names
                if of_any_instance(name, base)]

    def _done_or_running(self, run_key: str) -> bool:
        """True when a run of ``run_key`` succeeded, or one is in flight in a live process (a
        daemon's run, say); dead runs were failed by ``fail_dead_runs`` before."""
        runs = self.instance.get_runs(filters=dg.RunsFilter(tags={RUN_KEY_TAG: run_key}))
        return any(run.status == dg.DagsterRunStatus.SUCCESS or run.status in IN_FLIGHT
                   for run in runs)


def _unpack(result, cursor):
    """(run requests, dynamic partition requests, cursor) of a sensor's return value."""
    if isinstance(result, dg.SensorResult):
        return (list(result.run_requests or []), list(result.dynamic_partitions_requests or []),
                result.cursor if result.cursor is not None else cursor)
    if isinstance(result, dg.RunRequest):
        return [result], [], cursor
    if isinstance(result, list):
        return [r for r in result if isinstance(r, dg.RunRequest)], [], cursor
    return [], [], cursor  # a SkipReason or None


def _root(error):
    """The error that caused a step failure, not Dagster's wrappers around it: the first error
    of the project's (or a library's) in the chain. Not the deepest: "could not write
    <file>" is the message, the OSError behind it only its cause."""
    while error.cause is not None and error.cls_name.startswith("Dagster"):
        error = error.cause
    return error


INTERRUPTIONS = ("DagsterExecutionInterruptedError", "KeyboardInterrupt")


def _interrupted(result) -> bool:
    """True when a stop signal (SIGINT, or SIGTERM, which Dagster maps to it) interrupted the
    run: its failure, or a step's, is Dagster's interruption."""
    for event in result.all_events:
        error = (event.step_failure_data.error if event.is_step_failure
                 else getattr(event.event_specific_data, "error", None)
                 if event.is_run_failure else None)
        while error is not None:
            if error.cls_name in INTERRUPTIONS:
                return True
            error = error.cause
    return False


def _caused_by_input(error) -> bool:
    """True when an EvaluationError (an error a user's input causes) is in the error's chain."""
    names, pending = set(), [EvaluationError]
    while pending:
        cls = pending.pop()
        names.add(cls.__name__)
        pending += cls.__subclasses__()
    while error is not None:
        if error.cls_name in names:
            return True
        error = error.cause
    return False
