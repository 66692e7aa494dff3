"""A kill -9 and an outage during alert delivery, then recovery: exactly one delivery per alert.

The real main job (`python -m evaluation_pipeline.main_job`) in a subprocess, on a landing of two
nights of the example week (the night before the regression, and the regression night: the
newest night regressed, so its evaluation alerts) and a webhook on 127.0.0.1 in this process.
The first run is killed while the receiver holds its POST; the receiver then answers 500 (an
outage) and at last 200. Every POST carries the alert's id as its Idempotency-Key, and exactly
one is accepted.

Slow (four main jobs, and the waits the alert's backoff asks for between runs, about 5 min):
``pytest tests/pipeline/slow/test_alert_outage.py``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from evaluation_pipeline import settings
from evaluation_pipeline.nightly.alerts import (
    DELIVERED,
    FAILED,
    SENDING,
    AlertSettings,
    read_alerts,
)
from evaluation_pipeline.nightly.history import in_flight_seconds
from evaluation_pipeline.orchestration.example_week import QUERIES_NAME, generator
from tests.support.paths import REPO
from tests.support.webhook import WebhookServer

MAIN_TIMEOUT = 900


class Receiver(WebhookServer):
    """A webhook that answers as ``mode`` says: "hold" (keep the request open until the test
    ends), "500", or "ok"; it keeps every request's Idempotency-Key, body id and answer."""

    def __init__(self):
        self.mode, self.requests = "hold", []
        self.held, self.released = threading.Event(), threading.Event()
        super().__init__(self._respond)

    def _respond(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        mode = self.mode
        self.requests.append({"key": handler.headers["Idempotency-Key"],
                              "alert_id": body["alert_id"], "answer": mode})
        if mode == "hold":
            self.held.set()
            self.released.wait(MAIN_TIMEOUT)
            handler.close_connection = True
            return
        handler.send_response(500 if mode == "500" else 200)
        handler.end_headers()

    def close(self) -> None:
        self.released.set()
        super().close()


def _root(base: Path) -> Path:
    """The night before the regression and the regression night, under the newer version."""
    gen = generator()
    gen.generate_nightly(base / "week")
    week, landing = base / "week" / gen.NIGHTLY_DIR, base / "landing"
    version = f"{gen.JUDGMENT_VERSION_2}.csv"
    (landing / "judgments").mkdir(parents=True)
    shutil.copyfile(week / "judgments" / version, landing / "judgments" / version)
    night = gen.NIGHTLY_POOLS.index(gen.REGRESSION_NIGHT)
    for pool in gen.NIGHTLY_POOLS[night - 1:night + 1]:  # in night order: the markers' times
        shutil.copytree(week / "pools" / pool, landing / "pools" / pool)
        (landing / "pools" / pool / gen.READY_MARKER).write_bytes(b"")
    shutil.copyfile(week / QUERIES_NAME, base / "queries.csv")
    return base


def _start(root: Path, log: str, webhook: str) -> subprocess.Popen:
    env = {key: value for key, value in os.environ.items() if key != settings.FAIL_WRITE.name}
    env |= {settings.LANDING.name: str(root / "landing"),
            settings.STORAGE.name: str(root / "storage"),
            settings.QUERIES.name: str(root / "queries.csv"),
            settings.ALERT_WEBHOOK.name: webhook,
            "DAGSTER_HOME": str(root / "home"), "PYTHONPATH": str(REPO)}
    with open(root / log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "evaluation_pipeline.main_job"],
                                cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _main(root: Path, log: str, webhook: str) -> tuple[int, str]:
    code = _start(root, log, webhook).wait(timeout=MAIN_TIMEOUT)
    return code, (root / log).read_text(encoding="utf-8", errors="replace")


def _alert(root: Path) -> dict:
    (alert,) = read_alerts(root / "storage" / "history" / "alerts.jsonl")
    return alert


def _check_metadata(root: Path, key: str) -> dict:
    """The metadata of the latest nightly_regression check of the evaluation ``key`` alerted
    for (pool/version/spec), from the main job's Dagster instance."""
    import dagster as dg

    pool, version, _ = key.split("/")
    with dg.DagsterInstance.from_config(str(root / "home")) as instance:
        runs = instance.get_runs(dg.RunsFilter(tags={"dagster/partition": f"{pool}|{version}"}))
        checks = [event for run in runs for event in instance.all_logs(
            run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
            if event.dagster_event.event_specific_data.check_name == "nightly_regression"]
        latest = max(checks, key=lambda event: event.timestamp)
        metadata = latest.dagster_event.event_specific_data.metadata
        return {name: value.value for name, value in metadata.items()}


def _sleep_until(moment: datetime) -> None:
    time.sleep(max(0.0, (moment - datetime.now(UTC)).total_seconds()) + 1)


def test_a_kill_and_an_outage_during_delivery_then_recovery_give_one_delivery(tmp_path):
    root = _root(tmp_path)
    receiver = Receiver()
    try:
        # 1. Killed while the receiver holds the alert's POST.
        job = _start(root, "killed.log", receiver.url)
        assert receiver.held.wait(MAIN_TIMEOUT), (root / "killed.log").read_text()
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
        cut = _alert(root)
        assert cut["state"] == SENDING

        # 2. The receiver is down (500). Once no delivery can still be under way, the next
        # run sends the alert again, fails, and says so: exit 1, the alert named.
        receiver.mode = "500"
        _sleep_until(datetime.fromisoformat(cut["attempted_at"]).astimezone(UTC)
                     + timedelta(seconds=in_flight_seconds(AlertSettings())))
        code, output = _main(root, "outage.log", receiver.url)
        failed = _alert(root)
        assert code == 1, output
        assert failed["state"] == FAILED and failed["delivery"]["status"] == 500
        assert failed["alert_id"] in output and failed["key"] in output
        assert failed["next_retry_at"] in output
        # The evaluation's check says so too, by named fields.
        metadata = _check_metadata(root, failed["key"])
        assert metadata["alert_delivery"]["state"] == FAILED
        assert metadata["alert_delivery"]["alert_id"] == failed["alert_id"]
        assert metadata["alert_delivery"]["last_error"].startswith("HTTP 500")
        assert [a["alert_id"] for a in metadata["undelivered_alerts"]] == [failed["alert_id"]]
        tried = len(receiver.requests)

        # 3. A run before the backoff has passed sends nothing, and still exits 1.
        receiver.mode = "ok"
        code, output = _main(root, "early.log", receiver.url)
        assert datetime.now(UTC) < datetime.fromisoformat(failed["next_retry_at"])
        assert code == 1 and len(receiver.requests) == tried, output

        # 4. Recovered, after the backoff: delivered once; the run exits 0.
        _sleep_until(datetime.fromisoformat(failed["next_retry_at"]))
        code, output = _main(root, "recovered.log", receiver.url)
        assert code == 0, output
        assert _alert(root)["state"] == DELIVERED

        # 5. Nothing more is sent.
        code, output = _main(root, "again.log", receiver.url)
        assert code == 0 and "nothing new in the landing folder" in output, output
    finally:
        receiver.close()

    alert_id = cut["alert_id"]
    assert {(r["key"], r["alert_id"]) for r in receiver.requests} == {(alert_id, alert_id)}
    assert [r["answer"] for r in receiver.requests].count("ok") == 1
    assert receiver.requests[0]["answer"] == "hold" and receiver.requests[-1]["answer"] == "ok"
    assert _alert(root)["alert_id"] == alert_id
