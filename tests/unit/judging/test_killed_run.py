"""A judge run killed (SIGKILL) in the middle, run again, asks the server nothing it had
already answered and stored: the cache holds each answer from the moment it arrived."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

from evaluation_pipeline.cli.main import main
from evaluation_pipeline.io.readers import read_judgments
from evaluation_pipeline.judging.cache import DATABASE
from tests.support.judge_server import JudgeServer
from tests.unit.judging.inputs import judge_argv, make_inputs

REPO = Path(__file__).resolve().parents[3]


def test_a_killed_run_run_again_pays_for_no_answer_twice(tmp_path):
    inputs = make_inputs(tmp_path / "inputs")
    out = tmp_path / "llm.csv"
    cache = tmp_path / "cache"
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    with JudgeServer(inputs.grades, always="slow", slow_seconds=0.3) as server:
        argv = judge_argv(inputs, server.base_url, out, "--concurrency", "1", "--cache",
                          str(cache))
        judge = subprocess.Popen([sys.executable, "-m", "evaluation_pipeline", *argv],
                                 env=environment, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        try:
            started = time.monotonic()
            while _stored(cache) < 3 and time.monotonic() - started < 60:
                time.sleep(0.02)
        finally:
            judge.send_signal(signal.SIGKILL)
            judge.wait(timeout=30)
        first = set(server.answered)
    assert judge.returncode == -signal.SIGKILL and not out.exists()
    stored = _stored(cache)
    assert stored >= 3 and stored < len(inputs.grades)

    with JudgeServer(inputs.grades) as server:
        assert main(judge_argv(inputs, server.base_url, out, "--cache", str(cache))) == 0
        assert server.calls == 9 - stored
        # At most the one answer in flight at the kill was sent and never stored.
        assert len(first & set(server.answered)) <= 1
    assert read_judgments(out).height == 9


def _stored(cache: Path) -> int:
    """Answers in the cache: what the killed run had stored."""
    if not (cache / DATABASE).exists():
        return 0
    try:
        with closing(sqlite3.connect(cache / DATABASE)) as database:
            return database.execute("SELECT count(*) FROM answers").fetchone()[0]
    except sqlite3.OperationalError:  # the table is not there yet
        return 0
