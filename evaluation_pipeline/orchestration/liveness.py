"""Whether what a run depends on still lives: the process that executes it, and the Dagster
instance's database.

**The process.** A run executed in process (``LocalRunner``, ``make run``) carries the pid, host
and start time of its process as tags. When that process is killed, Dagster never hears of it: the
run stays STARTED for ever, and anything that waits for it (the evaluation sensor's "in flight"
test, the runner's "already launched" test) waits for ever. ``fail_dead_runs`` reports such runs as
failed on the instance, so they are retried like any other failure.

The start time tells a pid reused by a later process from the original one. Runs launched by
the Dagster daemon carry no such tags; the instance's run monitoring watches those.

The tags are bookkeeping, not something to read in a runs list: their names start with Dagster's
hidden prefix ``.dagster/``, which the UI leaves out of the tags it shows. Runs recorded before
they were hidden carry ``ndcg_eval/pid``, ``ndcg_eval/host`` and ``ndcg_eval/process_start``;
those are read too.

**The database.** Every wait of `make run` on it is bounded, and named (``DatabaseWatch``). A
database that stops answering without closing its connections (a PostgreSQL server frozen by
SIGSTOP, a stalled network file system under SQLite) leaves a statement waiting for ever: the
operating system still acknowledges the packets, so no socket timeout fires, and the main job
would hold the instance lock while it waits. The watch times every statement and connection
of every SQLAlchemy engine in the process (Dagster's run, event-log and schedule storages are
engines), and when one has waited longer than the timeout it says which database did not
answer and ends the process at once. That is a kill, which the pipeline recovers from: the
lock goes with the process, and the next run fails the run left in flight and redoes it.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

import dagster as dg
from sqlalchemy import event
from sqlalchemy.engine import Engine

from evaluation_pipeline.io.lock import process_start

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


# -- the database --------------------------------------------------------------------------

EXIT_NO_ANSWER = 1
_CHECK_SECONDS = 0.5


class DatabaseWatch:
    """A context in which any one wait on a database longer than ``timeout`` seconds ends the
    process with EXIT_NO_ANSWER, after a message naming the database (its URL, no password)."""

    def __init__(self, timeout: float, exit: Callable[[int], None] = os._exit) -> None:
        self.timeout = timeout
        self.url: str | None = None  # the last database asked: named in errors too
        self._exit = exit
        self._waits: dict[int, tuple[float, str, str]] = {}  # thread: (since, what, database)
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._listeners = [
            ("before_cursor_execute", self._before_statement),
            ("after_cursor_execute", self._after),
            ("handle_error", self._after),
            ("do_connect", self._connect),
        ]

    def __enter__(self) -> DatabaseWatch:
        for name, listener in self._listeners:
            event.listen(Engine, name, listener)
        threading.Thread(target=self._watch, name="database-watch", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        for name, listener in self._listeners:
            event.remove(Engine, name, listener)

    # -- the listeners ---------------------------------------------------------------------
    def _before_statement(self, conn, cursor, statement, parameters, context, executemany):
        self._start("a statement", _named(conn.engine.url))

    def _after(self, *args, **kwargs) -> None:
        with self._lock:
            self._waits.pop(threading.get_ident(), None)

    def _connect(self, dialect, connection_record, cargs, cparams):
        # Connected here, so that a connection that fails ends its wait as one that succeeds.
        self._start("a connection", _named_params(dialect.name, cparams, cargs))
        try:
            return dialect.connect(*cargs, **cparams)
        finally:
            self._after()

    def _start(self, what: str, database: str) -> None:
        with self._lock:
            self.url = database
            self._waits[threading.get_ident()] = (time.monotonic(), what, database)

    # -- the watch -------------------------------------------------------------------------
    def _watch(self) -> None:
        while not self._done.wait(_CHECK_SECONDS):
            with self._lock:
                oldest = min(self._waits.values(), default=None)
            if oldest is None:
                continue
            since, what, database = oldest
            waited = time.monotonic() - since
            if waited > self.timeout and not self._done.is_set():
                print(f"ndcg-eval: error: the Dagster instance's database {database} has not "
                      f"answered {what} for {waited:.0f} s (NDCG_EVAL_DATABASE_TIMEOUT="
                      f"{self.timeout:g}); stopping. Check that the server runs and answers, "
                      "then run again: what is done stays done, and the run in flight is "
                      "failed and redone.", file=sys.stderr, flush=True)
                self._exit(EXIT_NO_ANSWER)
                return


def _named(url) -> str:
    """A statement's database as a connection names it: host, port and name, or the file."""
    if url.get_backend_name() == "sqlite":
        return f"sqlite:///{url.database or ''}"
    return (f"{url.get_backend_name()}://{url.host or 'localhost'}"
            f"{f':{url.port}' if url.port else ''}/{url.database or ''}")


def _named_params(dialect: str, cparams: dict, cargs) -> str:
    """A connection's database from its arguments: host, port and name, or the file."""
    if dialect == "sqlite":
        return f"sqlite:///{cargs[0] if cargs else cparams.get('database', '')}"
    host, port = cparams.get("host", "localhost"), cparams.get("port")
    name = cparams.get("dbname") or cparams.get("database") or ""
    return f"{dialect}://{host}{f':{port}' if port else ''}/{name}"


# What a database that fails says, through SQLAlchemy, sqlite3 or dagster-postgres (which
# gives up after its retries with "too many retries").
_DATABASE_ERRORS = ("DagsterPostgresException", "OperationalError", "DatabaseError",
                    "InterfaceError")


def database_failure(exc: BaseException) -> str | None:
    """The first line of the database's own words when ``exc`` comes from the instance's
    database (a server down, a damaged file), else None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc).__name__ in _DATABASE_ERRORS:
            return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        exc = exc.__cause__ or exc.__context__
    return None


def failure_message(words: str, database: str | None, home) -> str:
    """What `make run` says when the instance's database fails, and what to do: the advice
    depends on the kind of database (a SQLite file in the instance folder, or a server) and on
    what failed (a damaged file, a full disk, or a database that does not answer)."""
    named = database or f"of the instance in {home}"
    file = _sqlite_file(database)
    if database is not None and file is None:  # a server's
        advice = _server_full(named) if _disk_full(words) else (
            "Check that the server runs and that dagster.yaml (DAGSTER_PG_*) names it, then "
            "run again: what is done stays done.")
    else:  # a file of the instance folder (or none asked yet: the folder itself)
        advice = _sqlite_advice(words, file, Path(home))
    return f"ndcg-eval: error: the Dagster instance's database {named} failed: {words}. {advice}"


# -- the advice ----------------------------------------------------------------------------

# sqlite3's words for a full disk ("database or disk is full", SQLITE_FULL), the system's
# (ENOSPC), and PostgreSQL's when it cannot grow a table's file.
_FULL = ("database or disk is full", "no space left on device", "could not extend file",
         "disk full")
_DAMAGED = ("not a database", "malformed")


def _disk_full(words: str) -> bool:
    return any(marker in words.lower() for marker in _FULL)


def _sqlite_file(database: str | None) -> Path | None:
    """The file of a SQLite database as ``DatabaseWatch`` names it (``sqlite:///<path>``)."""
    if not database or not database.startswith("sqlite:///"):
        return None
    return Path(database.removeprefix("sqlite:///"))


def _sqlite_full(home) -> str:
    return (f"The disk that holds the instance folder {home} is full: free space there (df -h "
            f"{home}), or point DAGSTER_HOME at a folder on a disk with room, then run again: "
            "what is done stays done.")


def _server_full(named: str) -> str:
    return (f"The disk of the database server of {named} is full: free space on the server "
            "(or grow its volume), then run again: what is done stays done.")


def _sqlite_advice(words: str, file: Path | None, home: Path) -> str:
    if file is not None and any(marker in words for marker in _DAMAGED):
        aside, holds = damaged_part(file, home)
        how = ("with its -wal and -shm files, if any" if aside == file
               else f"with its folder: mv {aside} {aside}.damaged")
        return (f"The file is damaged: move it aside {how}, and run again. That loses only "
                f"{holds}; the results in the storage stay where they are.")
    # SQLite names a full disk "database or disk is full" only when a write of its own is
    # refused; when the WAL index or a journal cannot grow it says "disk I/O error". The disk's
    # own free space tells the two apart from a folder that cannot be written.
    if _disk_full(words) or _nearly_full(file.parent if file else home):
        return _sqlite_full(home)
    if "database is locked" in words:
        return (f"Another process holds {file}: a `dagster dev` or daemon on the instance "
                f"folder {home}. Stop it or let it finish, then run again: what is done stays "
                "done.")
    return (f"Check that this user can write {file.parent if file else home} and that its disk "
            "answers, then run again: what is done stays done.")


# Below this much free space a SQLite instance is out of room: a night's runs write some MB
# into it (their event logs), and SQLite grows its files a page at a time.
NEARLY_FULL_BYTES = 8 * 1024 * 1024


def _nearly_full(folder: Path) -> bool:
    """True when the disk that holds ``folder`` (or its nearest existing parent) has less than
    NEARLY_FULL_BYTES free for this user; False when that cannot be told."""
    for candidate in (folder, *folder.parents):
        try:
            stat = os.statvfs(candidate)
        except OSError:
            continue
        return stat.f_bavail * stat.f_frsize < NEARLY_FULL_BYTES
    return False


def damaged_part(file: Path, home: Path) -> tuple[Path, str]:
    """What to move aside for a damaged SQLite file of the instance in ``home``, and what that
    loses, by the layout of Dagster's default SQLite storage (history/runs.db, an event log per
    run and their index under history/runs/, schedules/schedules.db).

    Each database runs in WAL mode, with ``-wal`` and ``-shm`` files beside it: a file moved
    alone would leave those for a new database to replay, so the file's folder is moved, and
    with it only what that folder holds. A run's own event log is the exception: its folder
    holds every run's, so it is moved alone (with its companions)."""
    try:  # resolved both: DAGSTER_HOME may be given through a link or relative
        part = file.resolve().relative_to(home.resolve()).as_posix()
    except ValueError:
        return file.parent, f"what {file.parent} holds"
    if part == "history/runs.db":
        return file.parent, ("the run history (every run, its event log and the asset records): "
                             "a new run history is started")
    if part == "history/runs/index.db":
        return file.parent, ("the runs' event logs and the asset records (the runs stay in "
                             "history/runs.db): the next run redoes the evaluations they recorded")
    if part.startswith("history/runs/") and part.endswith(".db"):
        return file, f"the event log of run {file.stem}"
    if part == "schedules/schedules.db":
        return file.parent, ("the schedules' and sensors' state (their ticks, cursors, and "
                             "whether each was turned on or off): Dagster starts them again as "
                             "declared, and the runs stay")
    return file.parent, f"what {file.parent} holds"
