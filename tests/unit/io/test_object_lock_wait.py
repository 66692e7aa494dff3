"""The history's lock on a bucket (a lease object, io.object_lock) against an S3-API server:
a wait on a lease is said, naming the lock, its holder and when the lease is taken over, once
and then every SAY_SECONDS (not a line per poll); a lease whose holder was killed on this very
machine is taken over at once; one of another machine is waited out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.io import conditional, object_lock
from evaluation_pipeline.io.locations import location
from evaluation_pipeline.io.lock import LockTimeout, process_start, this_process
from evaluation_pipeline.orchestration.resources import EvaluationStorage
from tests.support.refusals import assert_names
from tests.support.s3_server import BUCKET

pytest.importorskip("moto.server")
pytest.importorskip("s3fs")


@pytest.fixture
def target(endpoint):
    """A shared file of its own for each test, on the bucket."""
    return _target()


def _target():
    return location(f"s3://{BUCKET}/lock-wait-{uuid.uuid4().hex[:8]}/history/history.parquet")


def _lease(target, *, owner: str, since: datetime, process: dict | None = None) -> None:
    """A lease as a holder writes it, left behind as by a holder that was killed."""
    record = {"owner": owner, "since": since.isoformat()}
    if process is not None:
        record["process"] = process
    conditional.put_if(object_lock.lock_object(target), json.dumps(record).encode(), None)


def _killed_process() -> dict:
    """This machine's record of a process that was killed: its pid is free now."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    record = {**this_process(), "pid": child.pid, "start": process_start(child.pid)}
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    return record


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def test_a_wait_is_said_naming_the_lock_the_holder_and_the_takeover(target, monkeypatch):
    monkeypatch.setattr(object_lock, "SAY_SECONDS", 0.5)
    since = datetime.now(UTC).replace(microsecond=0)
    _lease(target, owner="other-host|4242|x", since=since)
    said: list[str] = []
    started = time.monotonic()
    with pytest.raises(LockTimeout):
        with object_lock.object_lock(target, timeout=1.6, say=said.append):
            pass
    waited = time.monotonic() - started
    lock = str(object_lock.lock_object(target))
    assert said and all(lock in line for line in said), said
    assert all("pid 4242 on other-host" in line for line in said), said
    assert all(_when(since + timedelta(seconds=object_lock.LEASE_SECONDS)) in line
               for line in said), said
    polls = waited / object_lock.POLL_SECONDS
    assert 2 <= len(said) <= 1 + waited / 0.5 < polls, said  # again and again, not each poll


def test_a_killed_holders_lease_is_said_then_taken_over_when_it_expires(target):
    """A holder whose process cannot be looked at from here (a lease without its machine, as
    by another host) is waited out: said, then taken over at the end of its lease."""
    _lease(target, owner="gone-host|1|x", since=datetime.now(UTC))
    said: list[str] = []
    started = datetime.now(UTC)
    with object_lock.object_lock(target, timeout=10, lease_seconds=1.0, say=said.append):
        taken = datetime.now(UTC)
        held = json.loads(object_lock.lock_object(target).read_bytes())
    assert taken - started >= timedelta(seconds=0.5)
    assert held["process"]["pid"] == os.getpid()
    # Its own lease is dated when it was taken, not when the wait began: else already expired.
    assert datetime.fromisoformat(held["since"]) >= taken - timedelta(seconds=0.5)
    lock = str(object_lock.lock_object(target))
    assert "waiting" in said[0] and lock in said[0] and "pid 1 on gone-host" in said[0], said
    assert "took over" in said[-1] and lock in said[-1] and "expired" in said[-1], said
    assert not object_lock.lock_object(target).exists()  # released


def test_only_a_holder_provably_dead_on_this_machine_is_taken_over_at_once(endpoint):
    killed = _killed_process()
    target = _target()
    _lease(target, owner="here|x|y", since=datetime.now(UTC), process=killed)
    said: list[str] = []
    started = time.monotonic()
    with object_lock.object_lock(target, timeout=5, say=said.append):
        pass
    assert time.monotonic() - started < 3, "the dead holder's lease was waited out"
    assert len(said) == 1 and "took over" in said[0] and "no longer runs" in said[0], said
    # A holder that may live is waited for: this very process (a run of another thread), and
    # a free pid of another boot or another pid namespace (a container's), which may be alive
    # there.
    for process in (this_process(), {**killed, "boot": "elsewhere"},
                    {**killed, "pid_namespace": "elsewhere"}):
        target = _target()
        _lease(target, owner="here|x|y", since=datetime.now(UTC), process=process)
        with pytest.raises(LockTimeout):
            with object_lock.object_lock(target, timeout=0.6):
                pass


def test_the_history_lock_of_a_storage_says_its_wait_on_stderr_outside_a_run(
        target, monkeypatch, capsys):
    monkeypatch.setenv(settings.LOCK_TIMEOUT.name, "0.5")
    storage = EvaluationStorage(base=str(target.parent.parent))
    _lease(target, owner="other-host|4242|x", since=datetime.now(UTC))
    with pytest.raises(LockTimeout):
        with storage.locked("history", target.name):
            pass
    err = capsys.readouterr().err
    assert_names(err, str(object_lock.lock_object(target)), "4242", "other-host")  # the holder


def test_the_history_lock_of_a_storage_says_a_takeover_in_the_runs_log(target, monkeypatch):
    monkeypatch.setenv(settings.LOCK_TIMEOUT.name, "5")  # a lease waited out fails the run
    @dg.asset
    def shared(storage: EvaluationStorage) -> None:
        with storage.locked("history", target.name):
            pass

    storage = EvaluationStorage(base=str(target.parent.parent))
    _lease(target, owner="here|x|y", since=datetime.now(UTC), process=_killed_process())
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize([shared], resources={"storage": storage}, instance=instance)
        logged = [entry for entry in instance.all_logs(result.run_id)
                  if not entry.is_dagster_event and "took over" in entry.user_message]
    assert result.success
    assert [entry.level for entry in logged] == [30], logged  # a warning: make run shows it
    assert str(object_lock.lock_object(target)) in logged[0].user_message
