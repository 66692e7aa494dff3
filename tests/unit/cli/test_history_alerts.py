"""``ndcg-eval history`` shows an alert that was not delivered: its id, its evaluation, its
attempts, its last error, and its next retry (or when it was given up)."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime, timedelta

from evaluation_pipeline.cli import main as cli
from evaluation_pipeline.io.storage import ALERTS_FILE, HISTORY_FILE, HISTORY_FOLDER
from evaluation_pipeline.nightly import alerts
from evaluation_pipeline.nightly.alerts import AlertSettings, notify, redeliver_due
from evaluation_pipeline.nightly.history import empty_history

NIGHTLY = {"previous_pool": "night-4", "judgment_version": "maint-v2", "attribution": None,
           "comparisons": [{"ranker": "dense-v2", "cutoff": 10, "mean_difference": -0.08,
                            "difference_low": -0.11, "difference_high": -0.05,
                            "p_value_holm": 0.002, "verdict": "regressed",
                            "difference_min": -0.15, "difference_max": -0.01,
                            "holds_for_every_grading": True}]}
START = datetime(2026, 12, 5, 2, 0, tzinfo=UTC)


def unreachable() -> str:
    with socket.socket() as probe:  # a port nobody listens on: refused at once
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/hook"


def storage_with_alerts(root, *, expire: bool) -> dict:
    """An empty history and two alerts whose delivery failed; one expired if ``expire``."""
    (root / HISTORY_FOLDER).mkdir(parents=True)
    empty_history().write_parquet(root / HISTORY_FOLDER / HISTORY_FILE)
    config = AlertSettings(webhook=unreachable(), attempts=1)
    records = [notify(root / HISTORY_FOLDER / ALERTS_FILE, NIGHTLY, candidate_pool=pool,
                      spec_id="abc123", report="report.html", newest=True, headline=True,
                      settings=config, sleep=lambda _: None, now=lambda: START)
               for pool in ("night-5", "night-6")]
    if expire:
        redeliver_due(root / HISTORY_FOLDER / ALERTS_FILE, config,
                      now=lambda: START + timedelta(days=8))
    return {record["key"]: record for record in records}


def test_the_trend_names_an_undelivered_alert_and_its_next_retry(tmp_path, capsys):
    failed = storage_with_alerts(tmp_path, expire=False)["night-5/maint-v2/abc123"]
    assert cli.main(["history", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("alert ") and "night-5/" in x]
    assert failed["alert_id"] in line
    assert "1 attempt(s)" in line and "ConnectionRefusedError" in line
    assert failed["next_retry_at"] in line and failed["expires_at"] in line


def test_the_json_lists_the_undelivered_alerts_by_named_fields(tmp_path, capsys):
    failed = storage_with_alerts(tmp_path, expire=True)
    assert cli.main(["history", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    shown = {alert["key"]: alert for alert in data["undelivered"]}
    assert shown.keys() == failed.keys()
    for key, alert in shown.items():
        assert alert["alert_id"] == failed[key]["alert_id"]
        assert alert["state"] == alerts.EXPIRED and alert["attempts"] == 1
        assert alert["last_error"].startswith("ConnectionRefusedError")
        assert alert["expired_at"] == (START + timedelta(days=8)).isoformat()
