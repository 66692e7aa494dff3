"""Which process executes a run, and whether it still lives.

A run executed in process (``LocalRunner``, ``make run``) carries the pid, host and start time
of its process as tags. When that process is killed, Dagster never hears of it: the run stays
STARTED for ever, and anything that waits for it (the evaluation sensor's "in flight" test, the
runner's "already launched" test) waits for ever. ``fail_dead_runs`` reports such runs as failed
on the instance, so they are retried like any other failure.

The start time tells a pid reused by a later process from the original one. Runs launched by
the Dagster daemon carry no such tags; the instance's run monitoring watches those.

The tags are bookkeeping, not something to read in a runs list: their names start with Dagster's
hidden prefix ``.dagster/``, which the UI leaves out of the tags it shows. Runs recorded before
they were hidden carry ``ndcg_eval/pid``, ``ndcg_eval/host`` and ``ndcg_eval/process_start``;
those are read too.
"""

from __future__ import annotations

import os
import socket
from functools import cache

import dagster as dg

HIDDEN_PREFIX = ".dagster/"  # Dagster's prefix of the tags its UI does not show
PID_TAG = f"{HIDDEN_PREFIX}ndcg_eval/pid"
HOST_TAG = f"{HIDDEN_PREFIX}ndcg_eval/host"
PROCESS_START_TAG = f"{HIDDEN_PREFIX}ndcg_eval/process_start"
EXECUTOR_TAGS = (PID_TAG, HOST_TAG, PROCESS_START_TAG)

IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux ``/proc``), or None
    when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            stat = handle.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError:
        return ""  # alive, but not readable here
    # The command name (field 2) is in parentheses and may hold spaces: count after it.
    return stat.rsplit(")", 1)[1].split()[19]


@cache
def _this_process() -> dict[str, str]:
    pid = os.getpid()
    return {PID_TAG: str(pid), HOST_TAG: socket.gethostname(),
            PROCESS_START_TAG: process_start(pid) or ""}


def process_tags() -> dict[str, str]:
    """The tags that name this process as the executor of a run."""
    return dict(_this_process())


def executor(run: dg.DagsterRun) -> dict[str, str]:
    """The executor tags of ``run`` under their current names (empty without them); a run
    recorded before the tags were hidden has them without the prefix."""
    tags = run.tags
    if PID_TAG not in tags:
        tags = {f"{HIDDEN_PREFIX}{key}": value for key, value in tags.items()}
    return {key: tags[key] for key in EXECUTOR_TAGS if key in tags}


def executor_is_gone(run: dg.DagsterRun) -> bool:
    """True when ``run`` was executed in a process of this host that no longer exists.

    A run of another host, or without executor tags, is not judged: False."""
    tags = executor(run)
    if PID_TAG not in tags or tags.get(HOST_TAG) != socket.gethostname():
        return False
    started = process_start(int(tags[PID_TAG]))
    if started is None:
        return True
    recorded = tags.get(PROCESS_START_TAG, "")
    # A live process under the same pid but with another start time is a later process.
    return bool(recorded and started and started != recorded)


def fail_dead_runs(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    """Report every in-flight run whose executing process is gone as failed; returns them."""
    dead = [run for run in instance.get_runs(filters=dg.RunsFilter(statuses=IN_FLIGHT))
            if executor_is_gone(run)]
    for run in dead:
        tags = executor(run)
        instance.report_run_failed(
            run, f"the process that executed this run (pid {tags[PID_TAG]} on "
                 f"{tags[HOST_TAG]}) is gone: it was killed or crashed mid-run")
    return dead
