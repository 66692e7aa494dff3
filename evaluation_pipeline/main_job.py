"""`make run`: a week of nightly example pools lands night by night; each landing is ingested
and evaluated (under the TREC DL measures of examples/trec_dl_spec.yaml unless $NDCG_EVAL_SPEC
names a spec), and the run ends with the week's trend, night by night, then its regressions.

The runs go through the pipeline's own sensors and jobs against a persistent Dagster instance
in ``.dagster_home/`` (so ``dagster dev -w workspace.yaml`` shows them afterwards), and results
land in ``.storage/`` (the week's landing folder too). A second run finds nothing new and
prints the same trend. With ``NDCG_EVAL_LANDING`` set, the main job runs on that landing folder
instead, and ends with the headline table of every report.

One main job works on an instance at a time: it holds an exclusive lock on the instance folder
from before the instance is opened (and its storage created or migrated) until it exits. A
second one started meanwhile says that it waits, and gives up after $NDCG_EVAL_LOCK_TIMEOUT
seconds. The exit status is 0 only when every expected output is whole: every input the
landing holds is published in this storage, and every published judgment version x evaluable
pool has its scores and report, made from the inputs published now. Otherwise each missing
input and evaluation is listed with the reason.
"""

import errno
import logging
import os
import shlex
import signal
import sys
from contextlib import contextmanager
from pathlib import Path

from evaluation_pipeline import settings
from evaluation_pipeline.io.lock import LockTimeout, folder_lock
from evaluation_pipeline.io.storage import REPO
from schemas.errors import EvaluationError

DAGSTER_HOME = REPO / ".dagster_home"
MAX_CONCURRENT_RUNS = 2

_HEADER = ("# The local Dagster instance of the evaluation pipeline "
           "(written by evaluation_pipeline.main_job).")
# A backslash at a line's end joins it to the next: the file holds the comment as one line.
INSTANCE_YAML = f"""\
{_HEADER}
# At most {MAX_CONCURRENT_RUNS} runs at a time, and at most {MAX_CONCURRENT_RUNS} \
evaluations scoring at once
# across them (the scoring asset's concurrency pool): evaluations queue instead of competing
# for memory.
concurrency:
  runs:
    max_concurrent_runs: {MAX_CONCURRENT_RUNS}
  pools:
    default_limit: {MAX_CONCURRENT_RUNS}
# Under the daemon (dagster dev): a run whose worker never starts is failed, and a failed run is
# retried; `make run` retries in process (evaluation_pipeline.orchestration.local_runner).
run_monitoring:
  enabled: true
  start_timeout_seconds: 300
run_retries:
  enabled: true
  max_retries: 2
# No usage statistics are sent, and no banner asking about them opens make run's output.
telemetry:
  enabled: false
"""
# `make ui`'s port (the Makefile's UI_PORT, which make passes on to `make run`'s environment).
UI_PORT = "UI_PORT"
DEFAULT_UI_PORT = "3000"


def prepare_instance_home(home: Path) -> Path:
    """Create the instance folder and its dagster.yaml, unless the folder has an instance file
    of its own: a dagster.yaml this module did not write (a PostgreSQL-backed instance, say,
    deploy/dagster.yaml) is the operator's and is kept as it is."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    ours = not config.exists() or config.read_text(encoding="utf-8").startswith(_HEADER)
    if ours and (not config.exists() or config.read_text(encoding="utf-8") != INSTANCE_YAML):
        config.write_text(INSTANCE_YAML, encoding="utf-8")
    return home


def _waiting(home: Path, timeout: float):
    def say(holder: str) -> None:
        print(f"another main job ({holder}) is working on the Dagster instance {home}; "
              f"waiting for it to finish (at most {timeout:g} s, ${settings.LOCK_TIMEOUT.name})",
              file=sys.stderr, flush=True)
    return say


def _is_the_stop(exc: BaseException | None) -> bool:
    """``exc`` is the stop's own interruption (ours, or Dagster's during a run)."""
    # Imported here: local_runner imports Dagster, which the job loads after DAGSTER_HOME is set.
    from evaluation_pipeline.orchestration.local_runner import INTERRUPTIONS

    return type(exc).__name__ in INTERRUPTIONS


def _not_an_interruption(record: logging.LogRecord) -> bool:
    return not (record.exc_info and _is_the_stop(record.exc_info[1]))


@contextmanager
def stop_signals(runner):
    """SIGTERM and SIGINT stop the job: the first one interrupts the run under way (as Ctrl-C
    does) and tells the runner to start nothing more, retries included; later ones wait for
    the interrupted run to be recorded."""
    def stop(signum, frame) -> None:
        if runner.stop.is_set():
            return
        runner.stop_signal = signum
        runner.stop.set()
        raise KeyboardInterrupt

    previous = {number: signal.signal(number, stop) for number in (signal.SIGTERM, signal.SIGINT)}
    # During a run Dagster's handler raises its interruption wherever the main thread is; one
    # that lands in a finalizer or a weakref callback is swallowed by the interpreter, and the
    # run goes on. The interpreter also writes each signal's number to this pipe, whichever
    # handler runs, so the runner still sees the stop before it starts anything more.
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    wakeup = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    runner.signals = read
    unraisable = sys.unraisablehook

    def quiet_interruptions(failure) -> None:
        # The swallowed interruption is the stop itself, seen through the pipe: no traceback.
        if not _is_the_stop(failure.exc_value):
            unraisable(failure)

    sys.unraisablehook = quiet_interruptions
    # A library that logs the exception it caught while closing (SQLAlchemy's pool, when the
    # interruption lands in a connection's close) would print it with its traceback: the
    # handlers that print the job's log records drop those whose exception is the stop.
    handlers = [logging.lastResort, *logging.getLogger().handlers]
    for handler in handlers:
        handler.addFilter(_not_an_interruption)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(_not_an_interruption)
        sys.unraisablehook = unraisable
        signal.set_wakeup_fd(wakeup)
        runner.signals = None
        os.close(read)
        os.close(write)
        for number, handler in previous.items():
            signal.signal(number, handler)


def main() -> int:
    # `make run` is the development entry point: without a configured landing, queries table
    # and storage it uses the checkout's (definitions.setting).
    os.environ.setdefault(settings.DEV.name, "1")
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(DAGSTER_HOME)))
    try:
        timeout = settings.lock_timeout()
        with folder_lock(home, timeout, _waiting(home, timeout)):
            return _watched(prepare_instance_home(home))
    except LockTimeout as exc:
        print(f"ndcg-eval: {exc}: another main job still works on it; nothing was run. Run "
              f"again when it has finished, or raise ${settings.LOCK_TIMEOUT.name}.",
              file=sys.stderr)
        return 2
    except EvaluationError as exc:  # configuration a user can fix: a missing variable or extra
        print(f"ndcg-eval: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if not exc.filename or home not in (Path(exc.filename), *Path(exc.filename).parents):
            raise
        if exc.errno == errno.ENOSPC:  # its disk is full: no owner or permission will help
            print(f"ndcg-eval: error: cannot write in the Dagster instance folder {home}: "
                  f"{exc.strerror}: {exc.filename}. Free space on its disk (df -h {home}), "
                  "or point DAGSTER_HOME at a folder on another disk.", file=sys.stderr)
            return 1
        # The instance folder itself: read-only, or a lock file of another user's.
        print(f"ndcg-eval: error: cannot use the Dagster instance folder {home}: "
              f"{exc.strerror}: {exc.filename}. DAGSTER_HOME must be a folder this user can "
              "write (its lock file and dagster.yaml, and with SQLite the run history, are "
              "there): fix its owner or permissions, or point DAGSTER_HOME at another folder.",
              file=sys.stderr)
        return 2


def stop_outcome(interrupted: str | None) -> str:
    """What a stop did to the runs: the one it interrupted, or none (it came between runs)."""
    if interrupted:
        return f"the run it interrupted ({interrupted}) is recorded as failed"
    return "it came between runs, and every run it started completed"


def _watched(home: Path) -> int:
    """The run, with every wait on the instance's database bounded, and a database that fails
    named with what to do instead of a traceback (orchestration.liveness)."""
    from evaluation_pipeline.orchestration.liveness import (
        DatabaseWatch,
        database_failure,
        failure_message,
    )

    with DatabaseWatch(settings.database_timeout()) as watch:
        try:
            return _run(home)
        except Exception as exc:
            words = database_failure(exc)
            if words is None:
                raise
            print(failure_message(words, watch.url, home), file=sys.stderr)
            return 1


def _run(home: Path) -> int:
    # Imported after DAGSTER_HOME is set: the instance is read from it.
    import warnings

    import dagster as dg

    # Partitioned checks and multi-to-single partition mappings are marked preview/beta.
    warnings.filterwarnings("ignore", category=dg.PreviewWarning)
    warnings.filterwarnings("ignore", category=dg.BetaWarning)

    from evaluation_pipeline.cli import main as cli
    from evaluation_pipeline.cli.history_command import render_regressions, trend_rows
    from evaluation_pipeline.definitions import build_definitions, pipeline_spec
    from evaluation_pipeline.orchestration.example_week import run_week, week_folders, week_spec
    from evaluation_pipeline.orchestration.local_runner import (
        LocalRunner,
        StopRequested,
    )
    from evaluation_pipeline.orchestration.selection import (
        describe_outside_window,
        describe_reports,
        expected_evaluations,
        unpublished_inputs,
    )
    from evaluation_pipeline.orchestration.sensors import (
        landing_stamps,
        stamped_cursors,
        store_stamps,
    )

    # make run lands the example week night by night, under the week's spec unless one is
    # named; a configured landing folder is run as it is.
    week = not settings.LANDING.get()
    if week:
        spec_path = week_spec()
        storage = build_definitions(spec_path=spec_path).resources["storage"]
        landing, queries = week_folders(storage, home)
        defs = build_definitions(spec_path=spec_path, landing_folder=str(landing),
                                 queries_path=str(queries))
    else:
        spec_path = None
        defs = build_definitions()
    spec = pipeline_spec(spec_path)
    resources = defs.resources
    # Under the lock, before any run: what a killed run left in the storage is put back (a
    # result folder caught between its two renames) or removed (temporary files, staging and
    # scratch folders); a live writer's are held and kept.
    storage = resources["storage"]
    storage.clean_leftovers(resources["memory"].budget(storage).spill_dir)
    # Opened under the lock: a fresh home gets its storage tables here, once.
    with dg.DagsterInstance.get() as instance:
        runner = LocalRunner(defs, instance)
        # The landing's unchanged files are not hashed again (the stamps of the last job).
        runner.cursors.update(stamped_cursors(instance, runner.driven_sensors()))
        try:
            with stop_signals(runner):
                outcomes = run_week(runner, landing) if week else runner.run_until_quiet()
        except (StopRequested, KeyboardInterrupt):
            # During a run Dagster takes the signal (SIGTERM as SIGINT): which one is unknown.
            name = (signal.Signals(runner.stop_signal).name if runner.stop_signal
                    else "SIGINT or SIGTERM")
            print(f"ndcg-eval: stopped on request ({name}); {stop_outcome(runner.running)}. "
                  "Run again to resume: what is done stays done.", file=sys.stderr, flush=True)
            return 128 + (runner.stop_signal or signal.SIGINT)
        for outcome in outcomes:
            state = "ok" if outcome.success else "FAILED"
            print(f"run {outcome.job:<22} {outcome.partition or '-':<36} {state}")
            if outcome.error:
                print(f"    {outcome.error}")
        for error in runner.tick_errors:
            print(f"sensor tick FAILED: {error}")
        missing = [state for state in expected_evaluations(
            instance, resources["landing"], resources["storage"], resources["policy"], spec)
            if not state.whole]
        # What the landing holds but this storage never published (nothing may claim done).
        stamps = landing_stamps(runner.cursors)
        unpublished = unpublished_inputs(resources["landing"], resources["storage"], stamps)
        store_stamps(instance, stamps)
        alerts = redeliver_alerts(resources)
        if not outcomes and not runner.tick_errors and not missing and not unpublished:
            print("nothing new in the landing folder; the results below are current")
        root = resources["storage"].root()
        if week:
            print(f"\n{week_hint(home, root, landing, queries, spec_path)}")
            # The week's table, then its regressions: the last lines on the screen.
            # The week's spec only: a storage may hold the week under another spec too (an
            # earlier make run, or NDCG_EVAL_SPEC), whose rows would repeat every night.
            print(f"\nThe week night by night (ndcg-eval history {root} --spec-id "
                  f"{spec.spec_id}):")
            cli.main(["history", str(root), "--spec-id", spec.spec_id])
            trend = trend_rows(root, spec_id=spec.spec_id)
            print(f"\n{render_regressions(trend, root, spec.spec_id)}")
        else:
            print(f"\nDagster instance: {home}; browse it with\n  DAGSTER_HOME={home} "
                  f"dagster dev -w workspace.yaml -h 127.0.0.1 -p {ui_port()}, with this run's "
                  "NDCG_EVAL_* settings")
            print(describe_reports(resources["storage"], spec, instance))
        if missing:
            print(f"\n{len(missing)} expected evaluation(s) are not whole:")
            for state in missing:
                print(f"  {state.pool} x {state.version}: {state.missing}")
        if unpublished:
            print(f"\n{len(unpublished)} landed input(s) are not published in "
                  f"{resources['storage'].base}:")
            for entry in unpublished:
                print(f"  {entry}")
        print(describe_outside_window(instance, resources["landing"], resources["storage"],
                                      resources["policy"]), end="")
        print(describe_undelivered(alerts), end="")
    ok = (all(o.success for o in outcomes) and not runner.tick_errors and not missing
          and not unpublished and not pending(alerts))
    return 0 if ok else 1


def ui_port() -> str:
    """The port `make ui` serves on: $UI_PORT (as make was given it), else 3000."""
    return os.environ.get(UI_PORT) or DEFAULT_UI_PORT


def week_hint(home: Path, root: str, landing: Path, queries: Path, spec: str) -> str:
    """How to browse the week's instance: `make ui`, or `dagster dev` from any folder with the
    whole environment the week ran with (its spec too: the sensors evaluate under it)."""
    port = shlex.quote(ui_port())
    ui = " ".join(f"{setting.name}={shlex.quote(str(value))}" for setting, value in (
        (settings.STORAGE, root), (settings.LANDING, landing), (settings.QUERIES, queries),
        (settings.SPEC, Path(spec).resolve())))
    return (f"Dagster instance: {home}; browse it with `make ui` (http://127.0.0.1:{port}), "
            f"or from any folder with\n  DAGSTER_HOME={shlex.quote(str(home))} {ui} dagster dev "
            f"-w {shlex.quote(str(REPO / 'workspace.yaml'))} -h 127.0.0.1 -p {port}")


def redeliver_alerts(resources) -> list[dict]:
    """Send again every alert whose retry is due (a failed delivery is retried by every later
    run, not only by the evaluation that raised it); returns the alerts still not delivered."""
    from evaluation_pipeline.io.storage import alerts_file
    from evaluation_pipeline.nightly.alerts import redeliver_due
    from evaluation_pipeline.nightly.history import read_alerts, undelivered

    where = resources["storage"].path(*alerts_file())
    redeliver_due(where, resources["watch"].alert_settings())
    return undelivered(read_alerts(where))


def pending(alerts: list[dict]) -> list[dict]:
    """The undelivered alerts a later run still sends: they keep the exit status from 0 (an
    expired one is given up: it is listed, but no run can mend it)."""
    from evaluation_pipeline.nightly.history import EXPIRED

    return [alert for alert in alerts if alert["state"] != EXPIRED]


def describe_undelivered(alerts: list[dict]) -> str:
    from evaluation_pipeline.nightly.history import describe_delivery

    if not alerts:
        return ""
    lines = [f"\n{len(alerts)} alert(s) not delivered:"]
    lines += [f"  alert {alert['alert_id']} for {alert['key']}: {describe_delivery(alert)}"
              for alert in alerts]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
