"""`make ui` leaves no process behind: dagster dev, its webserver, daemon and code server all
stop on Ctrl-C (SIGINT to the terminal's process group), on SIGTERM to make, and when make
itself is killed (SIGKILL).

make runs the checkout's Makefile in a temporary folder (its instance, landing and storage
there; `-o run` skips the main job), with this interpreter's environment for .venv/bin."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluation_pipeline.main_job import INSTANCE_YAML
from tests.support.dagster_dev import location_entry
from tests.support.example_run import example_week
from tests.support.make import MAKE_VARIABLES
from tests.support.paths import REPO
from tests.support.ports import free_port
from tests.support.processes import running, tree

STARTUP_SECONDS = 240
STOP_SECONDS = 60  # the supervisor's SIGINT and SIGTERM grace periods and then some


def _start(folder: Path, port: int) -> subprocess.Popen:
    (folder / ".dagster_home").mkdir(exist_ok=True)
    (folder / ".dagster_home" / "dagster.yaml").write_text(INSTANCE_YAML)
    (folder / ".storage" / "example-landing").mkdir(parents=True, exist_ok=True)
    (folder / "examples").symlink_to(REPO / "examples")
    (folder / "workspace.yaml").write_text((REPO / "workspace.yaml").read_text())
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NDCG_EVAL_") and k not in MAKE_VARIABLES}
    env |= {"PYTHONPATH": str(REPO), "NDCG_EVAL_STORAGE": str(folder / "storage")}
    # Its own session, as a terminal's job is: Ctrl-C is SIGINT to this process group. Its
    # log goes to a file: dagster dev writes more than a pipe holds, and an unread pipe would
    # stop it mid-write.
    with (folder / "ui.log").open("wb") as log:
        return subprocess.Popen(
            # The install stamp is taken as made (the tests' environment is the checkout's);
            # the week is there already, so make ui starts the server at once.
            ["make", "-f", str(REPO / "Makefile"), "-o", ".venv/.installed", "ui",
             f"BIN={Path(sys.executable).parent}", f"UI_PORT={port}"],
            cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=log,
            start_new_session=True)


def _log(folder: Path) -> str:
    return (folder / "ui.log").read_text(errors="replace")[-3000:]


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "make killed"])
def test_make_ui_leaves_no_process_behind(tmp_path, how):
    port = free_port()
    make = _start(tmp_path, port)
    processes: dict[int, str] = {}
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while location_entry(f"http://127.0.0.1:{port}") is None:
            assert make.poll() is None, _log(tmp_path)
            assert time.monotonic() < deadline, f"the UI did not load in time:\n{_log(tmp_path)}"
            time.sleep(1)
        processes = tree(make.pid)
        assert len(processes) >= 5, processes  # make, the supervisor, dagster dev and its own
        if how == "ctrl-c":
            os.killpg(make.pid, signal.SIGINT)
        elif how == "sigterm":
            make.send_signal(signal.SIGTERM)
        else:
            make.kill()
        make.wait(timeout=STOP_SECONDS)
        deadline = time.monotonic() + STOP_SECONDS
        while running(processes) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not running(processes), f"left running after {how}: {running(processes)}"
    finally:
        for pid in running(processes) if processes else []:
            os.kill(pid, signal.SIGKILL)
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
        make.wait()


def test_the_hint_make_run_prints_is_a_command_that_works(tmp_path, tmp_path_factory):
    """The main job's week prints how to browse its instance: `make ui`, or a command with its
    whole environment, which loads the code location from any folder (validated here by
    `dagster definitions validate` in place of `dagster dev`, on the same arguments)."""
    week = example_week(tmp_path_factory)
    assert f"DAGSTER_HOME={week.home}" in week.stdout  # the hint names this run's instance
    lines = week.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Dagster instance:"))
    # Then the week's table, and its regressions last: what the screen shows when it ends.
    table = lines.index(next(line for line in lines if line.startswith("The week night by")))
    regressions = lines.index("REGRESSIONS (against the previous night):")
    assert start < table < regressions
    assert lines[-1].startswith("drill down: ndcg-eval history ") and "--night" in lines[-1]
    assert "`make ui`" in lines[start]
    words = shlex.split(lines[start + 1])
    assignments = dict(word.split("=", 1) for word in words if "=" in word.split("/")[0])
    command = [word for word in words if word.split("=", 1)[0] not in assignments]
    assert command[:2] == ["dagster", "dev"], command
    user = {k: v for k, v in os.environ.items() if not k.startswith("NDCG_EVAL_")}
    user |= {"PYTHONPATH": str(REPO), **assignments}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    workspace = command[command.index("-w") + 1]
    validated = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-w",
         workspace], cwd=elsewhere, env=user, capture_output=True, text=True, timeout=300)
    assert validated.returncode == 0, validated.stdout[-3000:] + validated.stderr[-3000:]
