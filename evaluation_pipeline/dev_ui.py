"""`make ui`: ``dagster dev`` (its arguments are this module's) stopped with the make that
started it, children included.

``dagster dev`` runs in a session of its own, so that nothing but this process signals it.
On Ctrl-C (SIGINT), SIGTERM or SIGHUP, or once the parent is gone (make was killed: this
process is re-parented), every process below this one gets SIGINT (dagster dev's orderly
shutdown), then SIGTERM, then SIGKILL, each after a grace period; then this process exits. On
Linux it is the subreaper of its tree, so a webserver or code server whose parent died first is
still found (below it) and stopped.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

# Each of SIGINT and SIGTERM gets this long before the next; dagster dev took 3 to 8 s to stop
# its webserver, daemon and code server after SIGINT here.
GRACE_SECONDS = 15.0
POLL_SECONDS = 0.25
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
PR_SET_CHILD_SUBREAPER = 36


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    parent = os.getppid()
    _become_subreaper()
    received: list[int] = []
    for number in STOP_SIGNALS:
        signal.signal(number, lambda signum, frame: received.append(signum))
    dagster = Path(sys.executable).parent / "dagster"
    server = subprocess.Popen([str(dagster), "dev", *arguments], start_new_session=True)
    while server.poll() is None and not received and os.getppid() == parent:
        time.sleep(POLL_SECONDS)
    if server.poll() is None:
        why = signal.Signals(received[0]).name if received else "make is gone"
        print(f"ndcg-eval: stopping dagster dev and its children ({why})", file=sys.stderr,
              flush=True)
    stop_tree(server)
    if received:
        return 128 + received[0]
    return server.returncode or 0


def stop_tree(server: subprocess.Popen) -> None:
    """Signal every process below this one, SIGINT then SIGTERM then SIGKILL, until none is
    left (each grace period cut short when they are all gone)."""
    for number, grace in ((signal.SIGINT, GRACE_SECONDS), (signal.SIGTERM, GRACE_SECONDS),
                          (signal.SIGKILL, GRACE_SECONDS)):
        if not _running(server):
            return
        _signal_all(server, number)
        deadline = time.monotonic() + grace
        while _running(server) and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)


def _signal_all(server: subprocess.Popen, number: int) -> None:
    if server.poll() is None:
        try:
            os.killpg(server.pid, number)
        except (ProcessLookupError, PermissionError):
            pass
    for pid in _descendants():
        try:
            os.kill(pid, number)
        except (ProcessLookupError, PermissionError):
            pass


def _running(server: subprocess.Popen) -> bool:
    """Whether dagster dev or anything below this process still runs (zombies reaped)."""
    server.poll()
    for pid in _zombie_children():
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    return server.returncode is None or bool(_descendants())


def _processes() -> dict[int, tuple[int, str]]:
    """pid: (parent pid, state) of every process /proc lists (empty without /proc)."""
    found = {}
    for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else ():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue  # gone meanwhile
        found[int(entry.name)] = (int(fields[1]), fields[0])
    return found


def _descendants() -> list[int]:
    """The live processes below this one."""
    table = _processes()
    below, frontier = [], [os.getpid()]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, (ppid, _) in table.items() if ppid == parent]
        frontier += children
        below += [pid for pid in children if table[pid][1] != "Z"]
    return below


def _zombie_children() -> list[int]:
    me = os.getpid()
    return [pid for pid, (ppid, state) in _processes().items() if ppid == me and state == "Z"]


def _become_subreaper() -> None:
    """Orphans below this process are re-parented to it, not to init (Linux only)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main())
