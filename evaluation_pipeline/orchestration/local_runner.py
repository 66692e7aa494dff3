"""Drive the sensors in process, as the Dagster daemon would, until nothing new is requested.

Used by ``make run`` and the tests: each tick registers the partitions a sensor asks for, skips
run keys that already have a run (the daemon's deduplication), and executes the other requests
in process against the given instance. Runs carry the sensor and run-key tags the daemon uses,
so a later ``dagster dev`` on the same instance does not launch them again.
"""

from dataclasses import dataclass, field

import dagster as dg

RUN_KEY_TAG = "dagster/run_key"
SENSOR_NAME_TAG = "dagster/sensor_name"

# The order in which a fresh landing folder becomes reports: inputs first, then evaluations.
DRIVEN_SENSORS = (
    "queries_changed",
    "judgment_versions_landed",
    "candidate_pools_landed",
    "evaluations_ready",
)


@dataclass
class RunOutcome:
    sensor: str
    job: str
    partition: str | None
    run_key: str | None
    success: bool
    run_id: str
    error: str | None = None


@dataclass
class LocalRunner:
    defs: dg.Definitions
    instance: dg.DagsterInstance
    cursors: dict[str, str | None] = field(default_factory=dict)
    # Run logs go to the instance (and the UI); the terminal shows warnings and errors only.
    log_level: str = "WARNING"

    def tick(self, sensor_name: str) -> list[RunOutcome]:
        """One evaluation of a sensor and the execution of the runs it requests."""
        sensor = self.defs.resolve_sensor_def(sensor_name)
        context = dg.build_sensor_context(
            instance=self.instance, cursor=self.cursors.get(sensor_name),
            definitions=self.defs, resources=self.defs.resources,
            sensor_name=sensor_name,
        )
        # Invoked directly: the daemon's resolution step would validate the partition keys of
        # a request before the partitions it registers in the same result exist.
        result = sensor(context)
        requests, partition_requests, cursor = _unpack(result, context.cursor)
        self.cursors[sensor_name] = cursor
        for request in partition_requests:
            if isinstance(request, dg.AddDynamicPartitionsRequest):
                self.instance.add_dynamic_partitions(request.partitions_def_name,
                                                     list(request.partition_keys))
        outcomes = []
        for request in requests:
            if request.run_key and self._launched(sensor_name, request.run_key):
                continue
            job_name = request.job_name or sensor.job_name
            outcomes.append(self.execute(job_name, request, sensor_name))
        return outcomes

    def execute(self, job_name: str, request: dg.RunRequest,
                sensor_name: str | None = None) -> RunOutcome:
        tags = dict(request.tags)
        if sensor_name:
            tags[SENSOR_NAME_TAG] = sensor_name
        if request.run_key:
            tags[RUN_KEY_TAG] = request.run_key
        result = self.defs.resolve_job_def(job_name).execute_in_process(
            instance=self.instance, partition_key=request.partition_key, tags=tags,
            raise_on_error=False,
            run_config={"loggers": {"console": {"config": {"log_level": self.log_level}}}},
        )
        error = None
        if not result.success:
            error = "; ".join(
                f"{e.step_key}: {_root_message(e.step_failure_data.error)}"
                for e in result.all_events if e.is_step_failure and e.step_failure_data.error
            ) or "run failed"
        return RunOutcome(sensor_name or "", job_name, request.partition_key, request.run_key,
                          result.success, result.run_id, error)

    def run_until_quiet(self, max_rounds: int = 5) -> list[RunOutcome]:
        """Tick every driven sensor, round after round, until a round launches nothing."""
        outcomes: list[RunOutcome] = []
        for _ in range(max_rounds):
            launched = [o for name in DRIVEN_SENSORS for o in self.tick(name)]
            outcomes += launched
            if not launched:
                break
        return outcomes

    def _launched(self, sensor_name: str, run_key: str) -> bool:
        runs = self.instance.get_runs(filters=dg.RunsFilter(tags={RUN_KEY_TAG: run_key}))
        return any(run.tags.get(SENSOR_NAME_TAG) == sensor_name for run in runs)


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


def _root_message(error) -> str:
    """The message of the error that caused a step failure, not Dagster's wrapper around it."""
    while error.cause is not None:
        error = error.cause
    return error.message.strip()
