"""A stop signal is seen by the runner even when the exception its handler raised is lost.

During a run Dagster's handler raises its interruption wherever the main thread is; one that
lands in a weakref callback or a finalizer is swallowed by the interpreter and the run goes
on. The runner reads the signals from the interpreter's wakeup pipe as well, so it starts
nothing more and the main job still exits as stopped."""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import SimpleNamespace

import pytest

from evaluation_pipeline.main_job import stop_signals
from evaluation_pipeline.orchestration.local_runner import LocalRunner, StopRequested


def _runner() -> SimpleNamespace:
    return SimpleNamespace(stop=threading.Event(), stop_signal=None, signals=None)


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_whose_handler_raised_nothing_still_stops_the_runner(number):
    runner = _runner()
    with stop_signals(runner):
        # As under a run: another handler holds the signal, and what it raises is lost.
        held = signal.signal(number, lambda *_: None)
        try:
            os.kill(os.getpid(), number)
            LocalRunner.check_stop(runner)  # the project's own handler never ran
        except StopRequested:
            pass
        else:
            pytest.fail("the signal was not seen")
        finally:
            signal.signal(number, held)
    assert runner.stop.is_set() and runner.signals is None


def test_without_a_signal_the_runner_goes_on():
    runner = _runner()
    with stop_signals(runner):
        LocalRunner.check_stop(runner)
    assert not runner.stop.is_set()


def test_the_wakeup_pipe_is_given_back():
    before = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(before)
    with stop_signals(_runner()):
        pass
    assert signal.set_wakeup_fd(before) == before


def test_an_interruption_the_interpreter_swallows_prints_no_traceback():
    """What Dagster's handler raised inside a finalizer is the stop, already seen: the
    interpreter's "Exception ignored" report is kept for every other exception."""
    seen = []
    previous = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        with stop_signals(_runner()):
            for failure in (KeyboardInterrupt(), ValueError("a real one")):
                sys.unraisablehook(SimpleNamespace(exc_value=failure))
    finally:
        sys.unraisablehook = previous
    assert [type(f.exc_value) for f in seen] == [ValueError]


def test_the_stop_message_names_the_interrupted_run_or_says_none_was():
    from evaluation_pipeline.main_job import stop_outcome

    assert stop_outcome("evaluate_job pool-2026-12-05|maint-v2") == (
        "the run it interrupted (evaluate_job pool-2026-12-05|maint-v2) is recorded as failed")
    assert stop_outcome(None) == "it came between runs, and every run it started completed"


def test_an_interruption_escaping_a_run_leaves_that_run_named(monkeypatch):
    """Dagster's interruption, raised out of the run, leaves ``running`` naming it; a run that
    returns (successful or not, not interrupted) clears it."""
    import dagster as dg

    from evaluation_pipeline.orchestration import local_runner

    runner = LocalRunner(defs=None, instance=None)
    request = dg.RunRequest(partition_key="pool-1|v1")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(local_runner, "execute_job", interrupted)
    with pytest.raises(KeyboardInterrupt):
        runner.execute("evaluate_job", request)
    assert runner.running == "evaluate_job pool-1|v1"

    finished = SimpleNamespace(success=True, run_id="r1", all_events=[])
    monkeypatch.setattr(local_runner, "execute_job", lambda *args, **kwargs: finished)
    assert runner.execute("evaluate_job", request).success
    assert runner.running is None


def test_a_close_interrupted_by_the_stop_prints_no_traceback(capfd, monkeypatch):
    """SQLAlchemy's pool logs, with its traceback, what a connection's close raised: when the
    stop's interruption lands there, that record is the stop and is not printed; any other
    exception a close raises still is."""
    import logging

    import sqlalchemy
    from dagster._core.errors import DagsterExecutionInterruptedError

    engine = sqlalchemy.create_engine("sqlite://", poolclass=sqlalchemy.pool.NullPool)

    def close_raising(failure):
        def close(connection):
            raise failure
        return close

    # As in the main job's process: no handler configured, Python's last resort prints.
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    with stop_signals(_runner()):
        for failure in (DagsterExecutionInterruptedError(), KeyboardInterrupt(),
                        ValueError("a real one")):
            with engine.connect():
                pass  # opened; closed on leaving, by the dialect's do_close
            engine.dialect.do_close = close_raising(failure)
            try:
                with engine.connect():
                    pass
            except BaseException as raised:  # the pool logs it, then raises what is no Exception
                assert raised is failure
            del engine.dialect.do_close
    printed = capfd.readouterr().err
    assert printed.count("Exception closing connection") == 1, printed
    assert "ValueError: a real one" in printed
    assert "Interrupt" not in printed
