"""The processes below a pid, read from /proc, and whether any of them is still running: for
the tests that hold a command to leaving nothing behind."""

from __future__ import annotations

from pathlib import Path


def _table() -> dict[int, tuple[int, str, str]]:
    """pid: (parent pid, state, start time) of every process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            found[int(entry.name)] = (int(fields[1]), fields[0], fields[19])
    return found


def tree(root: int) -> dict[int, str]:
    """Every live process below ``root`` and ``root`` itself: pid -> start time (a pid used
    again later is another process)."""
    table = _table()
    found, frontier = {}, [root]
    while frontier:
        pid = frontier.pop()
        if pid in table and table[pid][1] != "Z":
            found[pid] = table[pid][2]
        frontier += [child for child, (parent, _, _) in table.items() if parent == pid]
    return found


def running(processes: dict[int, str]) -> list[int]:
    """The processes of ``tree()`` still running (not zombies, not a later reuse of the pid)."""
    table = _table()
    return [pid for pid, start in processes.items()
            if pid in table and table[pid][2] == start and table[pid][1] != "Z"]
