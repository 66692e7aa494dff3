"""Regression alerts: one JSON POST per alerted evaluation, recorded in ``history/alerts.jsonl``.

An evaluation (pool x judgment version x spec) is alerted at most once: the record of every
alert, delivered or not, is the list of alerted evaluations, so a rerun finds its key and stays
quiet. Only evaluations of the newest pool under its headline version alert; backfills (older
pools re-evaluated after a new judgment version lands) and cross evaluations of the newest pool
under an older version repeat news already told, or tell old news, so they never alert.

Delivery is retried with exponential backoff on network errors, 5xx and 429 (bounded by
``attempts``), logged, and recorded beside the payload. Nothing here raises into scoring: a
failure becomes a log line and a record. The body is Slack-compatible: Slack incoming webhooks
read ``text`` and ignore the structured fields beside it.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from evaluation_pipeline.settings import ALERT_WEBHOOK
from schemas.columns import REGRESSED

REGRESSION_FIELDS = ("ranker", "cutoff", "mean_diff", "ci_low", "ci_high", "p_adjusted")
LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class AlertSettings:
    """Where alerts go and how hard delivery tries; ``webhook`` None records them only."""

    webhook: str | None = None
    attempts: int = 4
    backoff_seconds: float = 1.0  # before the second attempt; doubled before each further one
    timeout_seconds: float = 10.0

    @classmethod
    def from_env(cls, webhook: str | None = None, **fields) -> AlertSettings:
        """A configured webhook (resource field) wins over ``NDCG_EVAL_ALERT_WEBHOOK``."""
        return cls(webhook=webhook or ALERT_WEBHOOK.get() or None, **fields)


@dataclass(frozen=True)
class Delivery:
    delivered: bool
    attempts: int
    status: int | None = None
    error: str | None = None


def evaluation_key(candidate_pool: str, judgment_version: str, spec_id: str) -> str:
    return f"{candidate_pool}/{judgment_version}/{spec_id}"


# --- the body ---------------------------------------------------------------------------------


def alert_payload(nightly: Mapping, *, candidate_pool: str, spec_id: str,
                  report: str, drill_down: str | None = None) -> dict | None:
    """The JSON body for one evaluation's regressions (report.json's ``nightly`` section),
    or None when nothing regressed. ``drill_down``: the command that prints the night's
    verdicts, movers and change by slice."""
    regressions = [{f: c[f] for f in REGRESSION_FIELDS}
                   for c in nightly["comparisons"] if c["verdict"] == REGRESSED]
    if not regressions:
        return None
    body = {
        "candidate_pool": candidate_pool,
        "previous_pool": nightly["previous_pool"],
        "judgment_version": nightly["judgment_version"],
        "spec_id": spec_id,
        "regressions": regressions,
        "report": report,
        "drill_down": drill_down,
    }
    return {"text": alert_text(body), **body}


def alert_text(body: Mapping) -> str:
    """The human line(s) a chat client shows."""
    lines = [f"NDCG regression in {body['candidate_pool']} against {body['previous_pool']} "
             f"(judgments {body['judgment_version']}, spec {body['spec_id']}):"]
    for r in body["regressions"]:
        interval = "" if r["ci_low"] is None else f" [{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]"
        lines.append(f"- {r['ranker']} NDCG@{r['cutoff']} {r['mean_diff']:+.4f}{interval}, "
                     f"Holm-adjusted p = {r['p_adjusted']:.4g}")
    lines.append(f"report: {body['report']}")
    if body.get("drill_down"):
        lines.append(f"drill down: {body['drill_down']}")
    return "\n".join(lines)


# --- delivery -----------------------------------------------------------------------------------


def post_json(url: str, body: Mapping, settings: AlertSettings, *,
              sleep: Callable[[float], None] = time.sleep, log=LOG) -> Delivery:
    """POST ``body``; retry network errors, 5xx and 429 with backoff, at most ``attempts``."""
    data = json.dumps(body, allow_nan=False).encode("utf-8")
    status, error = None, None
    attempts = max(1, settings.attempts)
    for attempt in range(1, attempts + 1):
        request = urllib.request.Request(
            url, data=data, method="POST", headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=settings.timeout_seconds) as response:
                return Delivery(True, attempt, response.status)
        except urllib.error.HTTPError as exc:
            status, error = exc.code, f"HTTP {exc.code} {exc.reason}"
            retry = exc.code >= 500 or exc.code == 429
        except (urllib.error.URLError, OSError) as exc:
            status, error = None, f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            retry = True
        if not retry or attempt == attempts:
            break
        wait = settings.backoff_seconds * 2 ** (attempt - 1)
        log.warning(f"alert delivery attempt {attempt}/{attempts} failed ({error}); "
                    f"retrying in {wait:g} s")
        sleep(wait)
    log.error(f"alert delivery failed after {attempt} attempt(s): {error}")
    return Delivery(False, attempt, status, error)


# --- the record ---------------------------------------------------------------------------------


def read_alerts(alerts_file: Path) -> list[dict]:
    """Every recorded alert, oldest first (an absent file is no alert)."""
    if not Path(alerts_file).exists():
        return []
    lines = Path(alerts_file).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def alerted_keys(alerts_file: Path) -> set[str]:
    return {record["key"] for record in read_alerts(alerts_file)}


def append_alert(alerts_file: Path, record: Mapping) -> None:
    """One line, appended and flushed to disk: concurrent runs each add whole lines."""
    alerts_file = Path(alerts_file)
    alerts_file.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, allow_nan=False, sort_keys=False) + "\n"
    with open(alerts_file, "a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


def notify(
    alerts_file: Path,
    nightly: Mapping | None,
    *,
    candidate_pool: str,
    spec_id: str,
    report: str,
    newest: bool,
    headline: bool,
    settings: AlertSettings,
    drill_down: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
    log=LOG,
) -> dict | None:
    """Alert one evaluation if it is due; returns the record written, or None.

    Due means: an evaluation of the newest pool (``newest``) under its headline version
    (``headline``), with at least one regression, not alerted before. Never raises.
    """
    try:
        if not (newest and headline and nightly and nightly["previous_pool"]):
            return None
        payload = alert_payload(nightly, candidate_pool=candidate_pool, spec_id=spec_id,
                                report=report, drill_down=drill_down)
        if payload is None:
            return None
        key = evaluation_key(candidate_pool, nightly["judgment_version"], spec_id)
        if key in alerted_keys(alerts_file):
            log.info(f"evaluation {key} was already alerted; not alerting again")
            return None
        if settings.webhook:
            delivery = post_json(settings.webhook, payload, settings, sleep=sleep, log=log)
        else:
            delivery = Delivery(False, 0, error=f"no webhook configured ({ALERT_WEBHOOK.name})")
        record = {
            "key": key,
            "alerted_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "delivery": asdict(delivery),
            "payload": payload,
        }
        append_alert(alerts_file, record)
        log.warning(payload["text"])
        return record
    except Exception as exc:  # an alert must never fail the scoring
        log.error(f"alert for {candidate_pool} not raised: {type(exc).__name__}: {exc}")
        return None
