"""Regression alerts against a real HTTP server on 127.0.0.1 that fails, then recovers."""

from __future__ import annotations

import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from evaluation_pipeline.nightly import alerts
from evaluation_pipeline.nightly.alerts import AlertSettings, notify, read_alerts
from evaluation_pipeline.settings import ALERT_WEBHOOK
from tests.support.webhook import WebhookServer

REGRESSION = {"ranker": "dense-v2", "cutoff": 10, "n_paired": 40, "mean_difference": -0.0812,
              "difference_low": -0.11, "difference_high": -0.052, "p_value": 0.0002,
              "p_value_holm": 0.0018, "adjusted_level": 1 - 0.05 / 6,
              "difference_low_adjusted": -0.121, "difference_high_adjusted": -0.041,
              "detectable_effect": 0.035,
              "verdict": "regressed", "difference_min": -0.15, "difference_max": -0.01,
              "holds_for_every_grading": True}
NOISE = {"ranker": "bm25-v3", "cutoff": 10, "n_paired": 40, "mean_difference": -0.004,
         "difference_low": -0.02, "difference_high": 0.012, "p_value": 0.6, "p_value_holm": 1.0,
         "verdict": "no_change"}
NIGHTLY = {"previous_pool": "night-4", "judgment_version": "maint-v2",
           "comparisons": [NOISE, REGRESSION], "attribution": None}
EVALUATION = {"candidate_pool": "night-5", "spec_id": "abc123",
              "report": "reports/night-5/maint-v2/abc123/report.html"}


class Webhook:
    """A local webhook that answers ``failures`` errors (status ``code``) before 200."""

    def __init__(self, failures: int = 0, code: int = 500):
        self.failures, self.code, self.bodies = failures, code, []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.bodies.append(json.loads(body))
                failing = len(hook.bodies) <= hook.failures
                self.send_response(hook.code if failing else 200)
                self.end_headers()
                self.wfile.write(b"error" if failing else b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def settings(url: str | None, attempts: int = 4) -> AlertSettings:
    return AlertSettings(webhook=url, attempts=attempts, backoff_seconds=0.01,
                         timeout_seconds=5)


def call(tmp_path, config, **overrides):
    waits = []
    arguments = {**EVALUATION, "newest": True, "headline": True, **overrides}
    nightly = arguments.pop("nightly", NIGHTLY)
    record = notify(tmp_path / "history" / "alerts.jsonl", nightly, settings=config,
                    sleep=waits.append, **arguments)
    return record, waits


def test_a_failing_webhook_is_retried_with_backoff_and_an_alert_is_sent_once(tmp_path, caplog):
    with Webhook(failures=2) as hook, caplog.at_level(logging.WARNING):
        record, waits = call(tmp_path, settings(hook.url))
        assert record["delivery"] == {"delivered": True, "attempts": 3, "status": 200,
                                      "error": None}
        assert waits == [0.01, 0.02]  # doubled before each further attempt
        assert len(hook.bodies) == 3 and hook.bodies[0] == hook.bodies[2]
        assert "attempt 1/4 failed (HTTP 500" in caplog.text
        # A rerun of the same evaluation finds it alerted and sends nothing.
        again, _ = call(tmp_path, settings(hook.url))
        assert again is None
        assert len(hook.bodies) == 3
    body = hook.bodies[-1]
    assert {k: body[k] for k in ("candidate_pool", "previous_pool", "judgment_version",
                                 "spec_id", "report")} == {
        "candidate_pool": "night-5", "previous_pool": "night-4", "judgment_version": "maint-v2",
        "spec_id": "abc123", "report": EVALUATION["report"]}
    # Each regression names its measure (a section written before the measures: the spec's
    # nDCG@K) and its Holm family and resamples (none recorded there).
    assert body["regressions"] == [{k: REGRESSION.get(k) for k in alerts.REGRESSION_FIELDS}
                                   | {"measure": "nDCG@10", "holm_family": None}]
    # Slack incoming webhooks read "text".
    assert body["text"].startswith("NDCG regression in night-5 against night-4")
    assert ("dense-v2 NDCG@10 -0.0812 [-0.1210, -0.0410] (adjusted, 99.17%), Holm-adjusted "
            "p = 0.0018") in body["text"]
    assert "bm25-v3" not in body["text"]
    recorded = read_alerts(tmp_path / "history" / "alerts.jsonl")
    assert [r["key"] for r in recorded] == ["night-5/maint-v2/abc123"]
    assert recorded[0]["payload"] == body


def test_a_delivery_that_keeps_failing_is_recorded_and_never_raises(tmp_path, caplog):
    with Webhook(failures=99) as hook, caplog.at_level(logging.ERROR):
        record, waits = call(tmp_path, settings(hook.url, attempts=3))
        assert len(hook.bodies) == 3
        assert waits == [0.01, 0.02]
    assert record["delivery"]["delivered"] is False
    assert record["delivery"]["attempts"] == 3
    assert record["delivery"]["status"] == 500
    assert "alert delivery failed after 3 attempt(s): HTTP 500" in caplog.text
    assert alerts.alerted_keys(tmp_path / "history" / "alerts.jsonl") == {
        "night-5/maint-v2/abc123"}


def test_a_client_error_is_not_retried(tmp_path):
    with Webhook(failures=99, code=404) as hook:
        record, waits = call(tmp_path, settings(hook.url))
        assert len(hook.bodies) == 1 and waits == []
    assert record["delivery"]["status"] == 404


def test_an_unreachable_webhook_is_retried_then_recorded(tmp_path):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    record, waits = call(tmp_path, settings(f"http://127.0.0.1:{port}/hook", attempts=2))
    assert record["delivery"]["delivered"] is False
    assert record["delivery"]["attempts"] == 2 and waits == [0.01]
    assert "Connection" in record["delivery"]["error"] or "refused" in record["delivery"]["error"]


def test_without_a_webhook_the_alert_is_only_recorded(tmp_path, monkeypatch):
    monkeypatch.delenv(ALERT_WEBHOOK.name, raising=False)
    record, _ = call(tmp_path, AlertSettings.from_env())
    assert record["delivery"]["delivered"] is False
    assert ALERT_WEBHOOK.name in record["delivery"]["error"]
    assert len(read_alerts(tmp_path / "history" / "alerts.jsonl")) == 1


def test_the_environment_names_the_webhook_unless_configured(monkeypatch):
    monkeypatch.setenv(ALERT_WEBHOOK.name, "http://127.0.0.1:9/env")
    assert AlertSettings.from_env().webhook == "http://127.0.0.1:9/env"
    assert AlertSettings.from_env("http://127.0.0.1:9/field").webhook == (
        "http://127.0.0.1:9/field")


@pytest.mark.parametrize("overrides", [
    {"newest": False},  # a backfill of an older pool
    {"headline": False},  # the newest pool under an older judgment version
    {"nightly": {**NIGHTLY, "comparisons": [NOISE]}},  # nothing regressed
    {"nightly": {**NIGHTLY, "previous_pool": None}},  # the first night
    {"nightly": None},
])
def test_evaluations_that_never_alert(tmp_path, overrides):
    with Webhook() as hook:
        record, _ = call(tmp_path, settings(hook.url), **overrides)
        assert record is None and hook.bodies == []
    assert not (tmp_path / "history" / "alerts.jsonl").exists()


def test_a_torn_last_line_and_a_foreign_line_never_stop_alerting(tmp_path, caplog):
    """A full disk tears the last line; an edit leaves a line that is not a record. Both are
    skipped (the foreign one named by number), and the alert after them is raised."""
    alerts_file = tmp_path / "history" / "alerts.jsonl"
    alerts_file.parent.mkdir(parents=True)
    alerts_file.write_text('{not json\n["a list"]\n{"key": "x/y/z", "payl', encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        record, _ = call(tmp_path, settings(None))
    assert record is not None and record["state"] == alerts.RECORDED
    assert f"{alerts_file}: line 1 skipped: not JSON" in caplog.text
    assert f"{alerts_file}: line 2 skipped: not a JSON object" in caplog.text
    assert "line 3 skipped: a last line cut short" in caplog.text
    assert [r["key"] for r in read_alerts(alerts_file)] == ["night-5/maint-v2/abc123"]
    # The torn line was closed before the new ones: they parse, and the rerun stays quiet.
    assert call(tmp_path, settings(None))[0] is None


class Receiver(WebhookServer):
    """A webhook that answers as ``answer(handler)`` says; it records every request."""

    def __init__(self, answer):
        self.requests = []
        super().__init__(lambda handler, body: (
            self.requests.append((dict(handler.headers), body)), answer(handler)))


def test_a_server_that_answers_a_byte_at_a_time_is_cut_off_at_the_deadline(tmp_path):
    """The timeout of a socket read restarts with every byte; the deadline does not."""
    import time

    def drip(handler):
        handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
        for _ in range(40):
            handler.wfile.write(b"X")
            handler.wfile.flush()
            time.sleep(0.1)

    receiver = Receiver(drip)
    try:
        config = AlertSettings(webhook=receiver.url, attempts=2, backoff_seconds=0.01,
                               timeout_seconds=0.5, deadline_seconds=1.5)
        started = time.monotonic()
        record, _ = call(tmp_path, config)
        elapsed = time.monotonic() - started
    finally:
        receiver.close()
    assert elapsed < 4, elapsed  # the drip alone would take 4 s per attempt, 8 s for two
    assert record["state"] == alerts.FAILED
    assert "within 0.5 s" in record["delivery"]["error"]
    assert len(receiver.requests) == 2


def test_the_alert_id_is_in_the_body_and_the_idempotency_key_and_survives_a_cut_delivery(
        tmp_path):
    """The attempt is recorded before the POST: a run killed during delivery leaves a
    ``sending`` record, and the rerun sends the same alert under the same id."""
    def hang(handler):  # reads the body, never answers
        import time
        time.sleep(3)

    hanging = Receiver(hang)
    alerts_file = tmp_path / "history" / "alerts.jsonl"
    seen = []

    def killed_after_the_claim(records):  # what a kill -9 during the POST leaves
        seen.extend(read_alerts(alerts_file))
        raise KeyboardInterrupt

    try:
        config = AlertSettings(webhook=hanging.url, attempts=1, timeout_seconds=0.3)
        original = alerts.post_json
        alerts.post_json = lambda *a, **k: killed_after_the_claim(())
        with pytest.raises(KeyboardInterrupt):
            call(tmp_path, config)
    finally:
        alerts.post_json = original
        hanging.close()
    (pending,) = read_alerts(alerts_file)
    assert seen == [pending] and pending["state"] == alerts.SENDING
    with Webhook() as hook:
        record, _ = call(tmp_path, settings(hook.url))
        assert record["state"] == alerts.DELIVERED
        assert record["alert_id"] == pending["alert_id"]
        assert hook.bodies[-1]["alert_id"] == pending["alert_id"]
        assert call(tmp_path, settings(hook.url))[0] is None  # delivered: quiet
        assert len(hook.bodies) == 1
    receiver = Receiver(lambda h: (h.send_response(200), h.end_headers()))
    try:
        call(tmp_path / "other", settings(receiver.url))
    finally:
        receiver.close()
    ((headers, body),) = receiver.requests
    assert headers["Idempotency-Key"] == body["alert_id"]


@pytest.mark.parametrize("url, problem", [
    ("hooks.example.com/T000/B000", "does not start with http"),
    ("http//127.0.0.1:18500/hook", "does not start with http"),
    ("http://127.0.0.1:18500/my hook", "whitespace"),
    ("http:///hook", "names no host"),
    ("http://127.0.0.1:port/hook", "port is not a number"),
])
def test_a_malformed_webhook_is_refused_before_anything_runs(url, problem, tmp_path):
    from evaluation_pipeline.definitions import build_definitions
    from evaluation_pipeline.orchestration.resources import NightlyWatch
    from schemas.errors import EvaluationError

    with pytest.raises(EvaluationError, match=problem):
        AlertSettings(webhook=url).check()
    with pytest.raises(EvaluationError, match=ALERT_WEBHOOK.name):
        build_definitions(storage_base=str(tmp_path), watch=NightlyWatch(alert_webhook=url))
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(("holds", "low", "high", "clause"), [
    (True, -0.15, -0.01, "holds for every grading of the unjudged documents (range "
                         "[-0.1500, -0.0100])"),
    (False, -0.15, 0.02, "does not hold for every grading of the unjudged documents (range "
                         "[-0.1500, +0.0200])"),
    (None, None, None, "has no bounds over the unjudged documents"),
])
def test_the_alert_says_whether_the_regression_holds_for_every_grading(
        tmp_path, holds, low, high, clause):
    regression = REGRESSION | {"holds_for_every_grading": holds, "difference_min": low,
                               "difference_max": high}
    record, _ = call(tmp_path, settings(None), nightly=NIGHTLY | {"comparisons": [regression]})
    line = next(x for x in record["payload"]["text"].splitlines() if "dense-v2" in x)
    assert line.endswith(f"; {clause}")
    assert record["payload"]["regressions"][0]["holds_for_every_grading"] is holds


def _asking(status: int, retry_after: str, failures: int = 1):
    """A receiver that answers ``status`` with ``Retry-After: retry_after`` ``failures`` times,
    then 200; it records every request."""
    def answer(handler):
        if len(receiver.requests) <= failures:
            handler.send_response(status)
            handler.send_header("Retry-After", retry_after)
        else:
            handler.send_response(200)
        handler.end_headers()

    receiver = Receiver(answer)
    return receiver


@pytest.mark.parametrize("status", [429, 503])
def test_a_receiver_that_asks_for_a_wait_is_given_it_under_the_same_key(
        tmp_path, caplog, status):
    receiver = _asking(status, "7", failures=2)
    try:
        with caplog.at_level(logging.WARNING):
            record, waits = call(tmp_path, settings(receiver.url))
    finally:
        receiver.close()
    assert record["delivery"] == {"delivered": True, "attempts": 3, "status": 200,
                                  "error": None}
    assert waits == [7.0, 7.0]  # not the 0.01 and 0.02 of the backoff
    assert "retrying in 7 s as the receiver asks (Retry-After)" in caplog.text
    keys = {headers["Idempotency-Key"] for headers, _ in receiver.requests}
    assert keys == {record["alert_id"]} and len(receiver.requests) == 3
    assert all(body == receiver.requests[0][1] for _, body in receiver.requests)


def test_a_backoff_longer_than_the_wait_asked_for_is_kept(tmp_path):
    receiver = _asking(503, "1")
    try:
        config = AlertSettings(webhook=receiver.url, backoff_seconds=2.5, timeout_seconds=5)
        record, waits = call(tmp_path, config)
    finally:
        receiver.close()
    assert record["state"] == alerts.DELIVERED and waits == [2.5]


def test_a_wait_asked_for_past_the_deadline_ends_the_runs_delivery(tmp_path):
    """The alert stays due: a later run sends it (its retry between runs is the record's)."""
    receiver = _asking(429, "3600", failures=99)
    try:
        record, waits = call(tmp_path, settings(receiver.url))
    finally:
        receiver.close()
    assert waits == [] and len(receiver.requests) == 1
    assert record["state"] == alerts.FAILED
    assert record["delivery"]["error"] == (
        "HTTP 429 Too Many Requests; the delivery deadline of 60 s passed")


def test_a_wait_asked_for_with_another_status_is_not_taken(tmp_path):
    receiver = _asking(500, "3600")
    try:
        record, waits = call(tmp_path, settings(receiver.url))
    finally:
        receiver.close()
    assert record["state"] == alerts.DELIVERED and waits == [0.01]


@pytest.mark.parametrize(("value", "seconds"), [
    ("120", 120.0),
    (" 0 ", 0.0),
    ("Wed, 21 Oct 2026 07:28:30 GMT", 30.0),
    ("Wed, 21 Oct 2026 07:27:00 GMT", 0.0),  # already past: at once
    ("-5", None),
    ("1.5", None),
    ("soon", None),
    ("", None),
    (None, None),
])
def test_retry_after_is_seconds_or_an_http_date(value, seconds):
    from datetime import UTC, datetime

    now = datetime(2026, 10, 21, 7, 28, tzinfo=UTC)
    assert alerts.retry_after_seconds(value, now=lambda: now) == seconds
