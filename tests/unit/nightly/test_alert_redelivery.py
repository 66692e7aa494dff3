"""A failed alert is sent again by later runs, with backoff between runs, under its id, until it
is delivered or given up.

The receiver is a real HTTP server on 127.0.0.1 that answers as a script says (500, a hang past
the timeout, a close after accepting, then 200); the runs' clock is injected, so the waits
between runs cost no time.
"""

from __future__ import annotations

import json
import socket
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler

import pytest

from evaluation_pipeline.nightly import alerts, history
from evaluation_pipeline.nightly.alerts import (
    AlertSettings,
    notify,
    read_alerts,
    redeliver_due,
)
from evaluation_pipeline.nightly.history import undelivered
from tests.support.webhook import WebhookServer

REGRESSION = {"ranker": "dense-v2", "cutoff": 10, "mean_difference": -0.0812,
              "difference_low": -0.11, "difference_high": -0.052, "p_value_holm": 0.0018,
              "verdict": "regressed", "difference_min": -0.15, "difference_max": -0.01,
              "holds_for_every_grading": True}
NIGHTLY = {"previous_pool": "night-4", "judgment_version": "maint-v2",
           "comparisons": [REGRESSION], "attribution": None}
KEY = "night-5/maint-v2/abc123"
START = datetime(2026, 12, 5, 2, 0, tzinfo=UTC)
HANG_SECONDS = 2.0  # the receiver's hang: well past the attempt's timeout below
TIMEOUT = 0.3


class Clock:
    """The runs' clock: moved by the test, never slept on."""

    def __init__(self, start: datetime = START):
        self.moment = start

    def __call__(self) -> datetime:
        return self.moment

    def at(self, stamp: str, plus: float = 0.0) -> Clock:
        self.moment = datetime.fromisoformat(stamp) + timedelta(seconds=plus)
        return self


class Receiver(WebhookServer):
    """A webhook that answers each POST as the next word of ``script`` says ("500", "hang",
    "close": accept the request and close without an answer; "ok" once the script is used up),
    and keeps every request's Idempotency-Key, body id and the answer it got."""

    def __init__(self, script: list[str]):
        self.script, self.requests = list(script), []
        super().__init__(self._respond)

    def _respond(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        answer = self.script.pop(0) if self.script else "ok"
        self.requests.append({"key": handler.headers["Idempotency-Key"],
                              "alert_id": body["alert_id"], "answer": answer})
        self.answer(handler, answer)

    @staticmethod
    def answer(handler: BaseHTTPRequestHandler, answer: str) -> None:
        if answer == "hang":
            time.sleep(HANG_SECONDS)
        if answer in ("hang", "close"):
            handler.close_connection = True
            handler.request.shutdown(socket.SHUT_RDWR)
            return
        handler.send_response(500 if answer == "500" else 200)
        handler.end_headers()

    def delivered(self) -> list[dict]:
        return [r for r in self.requests if r["answer"] == "ok"]



def settings(url: str | None, **fields) -> AlertSettings:
    """One attempt per run (a run's own retries are test_alerts'), 60 s before the first
    retry between runs."""
    return AlertSettings(webhook=url, attempts=1, timeout_seconds=TIMEOUT,
                         **{"retry_after_seconds": 60.0, **fields})


def raise_alert(alerts_file, config: AlertSettings, clock: Clock, **overrides) -> dict | None:
    arguments = {"candidate_pool": "night-5", "spec_id": "abc123", "report": "report.html",
                 "newest": True, "headline": True, **overrides}
    return notify(alerts_file, NIGHTLY, settings=config, sleep=lambda _: None, now=clock,
                  **arguments)


def run(alerts_file, config: AlertSettings, clock: Clock) -> list[dict]:
    """What a later run does (the main job at its end): resend what is due."""
    return redeliver_due(alerts_file, config, sleep=lambda _: None, now=clock)


def state(alerts_file) -> dict:
    (alert,) = read_alerts(alerts_file)
    return alert


def error_type(alert: dict) -> str:
    return alert["last_error"].split(":")[0]


def test_a_failed_alert_is_retried_by_later_runs_with_backoff_and_delivered_once(tmp_path):
    alerts_file = tmp_path / "history" / "alerts.jsonl"
    clock = Clock()
    with Receiver(["500", "hang", "close"]) as receiver:
        config = settings(receiver.url)
        first = raise_alert(alerts_file, config, clock)
        assert first["state"] == alerts.FAILED and first["delivery"]["status"] == 500
        assert first["next_retry_at"] == (START + timedelta(seconds=60)).isoformat()
        assert first["expires_at"] == (START + timedelta(days=7)).isoformat()

        # Before the backoff has passed, a run sends nothing.
        assert run(alerts_file, config, clock.at(first["next_retry_at"], -1)) == []
        assert len(receiver.requests) == 1

        (hung,) = run(alerts_file, config, clock.at(first["next_retry_at"]))
        assert hung["state"] == alerts.FAILED
        assert error_type(hung) in ("DeadlineExceeded", "TimeoutError")  # whichever fires first
        # The wait doubles: 120 s after the second failed run.
        assert hung["next_retry_at"] == (clock() + timedelta(seconds=120)).isoformat()
        assert run(alerts_file, config, clock.at(hung["next_retry_at"], -1)) == []

        # A report step of another evaluation (not one that alerts) is a run as well.
        assert raise_alert(alerts_file, config, clock.at(hung["next_retry_at"]),
                           newest=False) is None
        closed = state(alerts_file)
        assert closed["state"] == alerts.FAILED
        assert error_type(closed) in ("RemoteDisconnected", "ConnectionResetError")
        assert closed["next_retry_at"] == (clock() + timedelta(seconds=240)).isoformat()

        (delivered,) = run(alerts_file, config, clock.at(closed["next_retry_at"]))
        assert delivered["state"] == alerts.DELIVERED
        assert (delivered["attempts"], delivered["runs"]) == (4, 4)
        # Delivered: no later run sends it again, however late.
        assert run(alerts_file, config, clock.at(delivered["finished_at"], 8 * 86400)) == []
        assert raise_alert(alerts_file, config, clock) is None

    assert [r["answer"] for r in receiver.requests] == ["500", "hang", "close", "ok"]
    assert len(receiver.delivered()) == 1
    alert_id = first["alert_id"]
    assert {(r["key"], r["alert_id"]) for r in receiver.requests} == {(alert_id, alert_id)}
    assert state(alerts_file)["alert_id"] == alert_id
    assert undelivered(read_alerts(alerts_file)) == []


def test_the_record_only_grows_and_its_fold_is_the_alerts_state(tmp_path):
    """Every run adds lines (a ``sending`` before its POST, an outcome after), never rewrites
    one: each file is the one before it with lines added."""
    alerts_file = tmp_path / "history" / "alerts.jsonl"
    clock = Clock()
    with Receiver(["500", "500"]) as receiver:
        config = settings(receiver.url)
        raise_alert(alerts_file, config, clock)
        texts = [alerts_file.read_bytes()]
        for _ in range(2):
            run(alerts_file, config, clock.at(state(alerts_file)["next_retry_at"]))
            texts.append(alerts_file.read_bytes())
    assert all(later.startswith(earlier) for earlier, later in zip(texts, texts[1:]))
    states = [json.loads(line)["state"] for line in texts[-1].splitlines()]
    assert states == ["sending", "failed", "sending", "failed", "sending", "delivered"]
    assert state(alerts_file)["attempts"] == 3


def test_an_alert_not_delivered_by_its_deadline_expires_and_stays_visible(tmp_path):
    alerts_file = tmp_path / "history" / "alerts.jsonl"
    clock = Clock()
    with Receiver(["500"] * 50) as receiver:
        config = settings(receiver.url, retry_after_max_seconds=86400.0)
        raise_alert(alerts_file, config, clock)
        deadline = START + timedelta(days=7)
        while datetime.fromisoformat(state(alerts_file)["next_retry_at"]) < deadline:
            run(alerts_file, config, clock.at(state(alerts_file)["next_retry_at"]))
        tried = len(receiver.requests)
        # 60 s doubling up to a day: 12 runs within 1.5 days, then one a day until the 7th.
        assert tried == 17
        (expired,) = run(alerts_file, config, clock.at(deadline.isoformat()))
        # Given up: the next runs send nothing, even to a receiver that answers again.
        receiver.script.clear()
        assert run(alerts_file, config, clock.at(START.isoformat(), 30 * 86400)) == []
        assert len(receiver.requests) == tried

    assert expired["state"] == alerts.EXPIRED
    (shown,) = undelivered(read_alerts(alerts_file))
    assert shown["state"] == alerts.EXPIRED and shown["key"] == KEY
    assert shown["attempts"] == tried and shown["last_error"].startswith("HTTP 500")
    assert shown["expired_at"] == (START + timedelta(days=7)).isoformat()


def test_the_give_up_deadline_is_a_declared_setting():
    assert AlertSettings().give_up_after_seconds == 7 * 86400
    assert "give_up_after_seconds" in AlertSettings.__dataclass_fields__


def test_a_failed_record_of_the_earlier_code_is_retried_under_its_id(tmp_path):
    """A ``failed`` line written before retries (no next_retry_at, no counts) is due."""
    alerts_file = tmp_path / "history" / "alerts.jsonl"
    alerts_file.parent.mkdir(parents=True)
    payload = {"text": "NDCG regression in night-5", "alert_id": "a1b2"}
    earlier = {"key": KEY, "alert_id": "a1b2", "state": "failed",
               "alerted_at": START.isoformat(), "payload": payload,
               "delivery": {"delivered": False, "attempts": 4, "status": 500,
                            "error": "HTTP 500 Internal Server Error"}}
    alerts_file.write_text(json.dumps(earlier) + "\n", encoding="utf-8")
    (shown,) = undelivered(read_alerts(alerts_file))
    assert (shown["attempts"], shown["runs"], shown["next_retry_at"]) == (4, 1, None)
    with Receiver([]) as receiver:
        (delivered,) = run(alerts_file, settings(receiver.url), Clock().at(START.isoformat(), 1))
    assert delivered["state"] == alerts.DELIVERED and delivered["attempts"] == 5
    assert receiver.requests == [{"key": "a1b2", "alert_id": "a1b2", "answer": "ok"}]


def test_a_sending_record_is_resent_only_once_no_delivery_can_still_be_under_way(
        tmp_path, monkeypatch):
    """A ``sending`` line without an outcome: a run that was killed, or one still sending in
    another process. A later run resends it only once a whole delivery would have ended."""
    alerts_file = tmp_path / "history" / "alerts.jsonl"
    clock = Clock()

    def killed(*args, **kwargs):  # what a kill during the POST leaves: no outcome line
        raise KeyboardInterrupt

    with Receiver([]) as receiver:
        config = settings(receiver.url)
        with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
            patched.setattr(alerts, "post_json", killed)
            raise_alert(alerts_file, config, clock)
        cut = state(alerts_file)
        assert cut["state"] == alerts.SENDING
        in_flight = history.in_flight_seconds(config)
        assert run(alerts_file, config, clock.at(cut["attempted_at"], in_flight)) == []
        (delivered,) = run(alerts_file, config, clock.at(cut["attempted_at"], in_flight + 1))
    assert delivered["state"] == alerts.DELIVERED
    assert receiver.requests == [{"key": cut["alert_id"], "alert_id": cut["alert_id"],
                                  "answer": "ok"}]


def test_without_a_webhook_nothing_is_resent_and_a_recorded_alert_never_is(tmp_path):
    alerts_file = tmp_path / "history" / "alerts.jsonl"
    clock = Clock()
    recorded = raise_alert(alerts_file, settings(None), clock)
    assert recorded["state"] == alerts.RECORDED
    with Receiver([]) as receiver:
        assert run(alerts_file, settings(receiver.url), clock.at(START.isoformat(), 3600)) == []
        assert receiver.requests == []
    assert undelivered(read_alerts(alerts_file)) == []


def test_the_undelivered_alert_shows_its_id_key_attempts_error_and_next_retry(tmp_path):
    alerts_file = tmp_path / "history" / "alerts.jsonl"
    with Receiver(["500"]) as receiver:
        failed = raise_alert(alerts_file, settings(receiver.url), Clock())
    (shown,) = undelivered(read_alerts(alerts_file))
    assert {k: shown[k] for k in ("alert_id", "key", "state", "attempts", "next_retry_at",
                                  "expires_at")} == {
        "alert_id": failed["alert_id"], "key": KEY, "state": alerts.FAILED, "attempts": 1,
        "next_retry_at": failed["next_retry_at"], "expires_at": failed["expires_at"]}
    assert shown["last_error"].startswith("HTTP 500")
    line = history.describe_delivery(shown)
    assert failed["next_retry_at"] in line and "HTTP 500" in line
