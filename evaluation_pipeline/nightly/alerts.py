"""Regression alerts: one JSON POST per alerted evaluation, recorded in ``history/alerts.jsonl``.

An evaluation (pool x judgment version x spec) is alerted at most once: the record of every
alert, delivered or not, is the list of alerted evaluations, so a rerun finds its key and stays
quiet. Only evaluations of the newest pool under its headline version alert; backfills (older
pools re-evaluated after a new judgment version lands) and cross evaluations of the newest pool
under an older version repeat news already told, or tell old news, so they never alert.

Delivery is at least once, with a stable id. The alert is recorded (``sending``, with its
``alert_id``) before the first POST, and its outcome after the last, so a run killed in between
leaves a record, and its rerun sends the same alert again under the same id. The id is in the
body and in the ``Idempotency-Key`` header: a receiver drops a repeat by it. Each attempt has a
deadline for the whole exchange (not per socket read: a server that answers a byte at a time
is cut off), and all attempts together have one too. Delivery is retried (``tenacity``) with
exponential backoff on network errors, 5xx and 429, waiting longer when a 429 or 503 asks for it
(``Retry-After``); a wait that would end past the deadline leaves the alert to the next run.
Nothing here raises into scoring: a failure becomes a
log line and a record. The body is Slack-compatible: Slack incoming webhooks read ``text`` and
ignore the structured fields beside it.

A delivery that failed is retried by every later run (``redeliver_due``: the main job at its
end, and every report step through ``notify``) under the same id, not before its
``next_retry_at`` (the wait doubles with each failed run), until it is delivered or
``AlertSettings.give_up_after_seconds`` have passed since it was raised: then it is recorded
``expired``. The record is a log of JSON lines (``io.append_log``): appended under a lock
locally, by conditional writes on a bucket, so two evaluations that alert together both keep
their line; ``nightly.history`` reads it (an alert's state is the fold of its lines), says
what is due, and shows what was not delivered.
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from urllib.parse import SplitResult, urlsplit

import tenacity

from evaluation_pipeline.io import append_log
from evaluation_pipeline.io.locations import Location
from evaluation_pipeline.nightly.history import (  # the record's reading, importable here too
    DELIVERED,
    EXPIRED,
    FAILED,
    RECORDED,
    SENDING,
    attempts_of,
    due,
    expires_at,
    latest_by_key,
    read_alerts,
    retry_wait,
    runs_of,
    state_of,
)
from evaluation_pipeline.nightly.verdicts import grading_clause, interval_clause, p_clause
from evaluation_pipeline.nightly.verdicts import regressions as headline_regressions
from evaluation_pipeline.settings import ALERT_WEBHOOK
from schemas.columns import label_of, measure_of
from schemas.errors import EvaluationError

REGRESSION_FIELDS = ("ranker", "cutoff", "mean_difference", "difference_low", "difference_high",
                     "p_value", "p_value_holm", "test_resamples", "adjusted_level",
                     "difference_low_adjusted", "difference_high_adjusted",
                     "detectable_effect", "difference_min", "difference_max",
                     "holds_for_every_grading")
LOG = logging.getLogger(__name__)


def regression_record(comparison: Mapping) -> dict:
    """A regression as the alert's payload and the Dagster check's metadata name it: its
    fields, its measure and the Holm family its adjusted p is over."""
    # .get: a section written before p_value and test_resamples were recorded has neither.
    return ({f: comparison.get(f) for f in REGRESSION_FIELDS}
            | {"measure": measure_of(comparison),
               "holm_family": comparison.get("holm_family")})


@dataclass(frozen=True)
class AlertSettings:
    """Where alerts go and how hard delivery tries; ``webhook`` None records them only."""

    webhook: str | None = None
    attempts: int = 4
    backoff_seconds: float = 1.0  # before the second attempt; doubled before each further one
    timeout_seconds: float = 10.0  # one attempt, the whole exchange
    deadline_seconds: float = 60.0  # every attempt and pause together
    # Between runs: a failed delivery is due again this long after the run that failed, the
    # wait doubled for each further run that failed, up to the maximum (a receiver that is
    # down for a day is not hammered by every run, and hears within hours once it is back).
    retry_after_seconds: float = 60.0
    retry_after_max_seconds: float = 6 * 3600.0
    # Since the alert was raised: past this, an undelivered alert is recorded expired and no
    # run sends it again (news of a regression a week old is no alert any more).
    give_up_after_seconds: float = 7 * 24 * 3600.0

    def check(self) -> AlertSettings:
        """Refuse a webhook that is not an http(s) URL with a host, before anything runs:
        a malformed one would lose every alert."""
        if self.webhook is not None:
            check_webhook(self.webhook)
        return self

    @classmethod
    def from_env(cls, webhook: str | None = None, **fields) -> AlertSettings:
        """A configured webhook (resource field) wins over ``NDCG_EVAL_ALERT_WEBHOOK``."""
        return cls(webhook=webhook or ALERT_WEBHOOK.get() or None, **fields)


def check_webhook(url: str) -> None:
    problem = webhook_problem(url)
    if problem:
        raise EvaluationError(f"alert webhook {url!r} ({ALERT_WEBHOOK.name} or the watch's "
                              f"alert_webhook) is not a URL to POST to: {problem}")


def webhook_problem(url: str) -> str | None:
    """Why ``url`` is no webhook to POST to, or None."""
    if any(c.isspace() for c in url):
        return "it has whitespace in it"
    try:
        # urlsplit raises on a bracketed host cut short ("http://[::1/"), .hostname on a
        # bracketed host that is no IPv6 address: both are the URL's fault, not a crash.
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        return f"it cannot be parsed ({exc})"
    if parts.scheme not in ("http", "https"):
        return "it does not start with http:// or https://"
    if not host:
        return "it names no host"
    return _port_problem(parts)


def _port_problem(parts: SplitResult) -> str | None:
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number, or out of range
    except ValueError:
        return "its port is not a number from 0 to 65535"
    return None


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
    # The headline measures' regressions (``verdicts.regressions``): another measure's verdict
    # is recorded in the report and the history, never alerted.
    regressions = [regression_record(c) for c in headline_regressions(nightly)]
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
        lines.append(f"- {r['ranker']} {label_of(r)} {r['mean_difference']:+.4f}"
                     f"{interval_clause(r)}, "
                     f"Holm-adjusted p {p_clause(r)}; "
                     f"{grading_clause(r)}")
    lines.append(f"report: {body['report']}")
    if body.get("drill_down"):
        lines.append(f"drill down: {body['drill_down']}")
    return "\n".join(lines)


# --- delivery -----------------------------------------------------------------------------------


class DeadlineExceeded(OSError):
    """The watchdog cut the exchange off at its deadline."""


@dataclass(frozen=True)
class _Answer:
    """One attempt: the status (None: no answer), what went wrong, and the wait the receiver
    asked for (``Retry-After``); ``made`` False when the deadline passed before it started."""

    status: int | None = None
    error: str | None = None
    retry_after: float | None = None
    made: bool = True

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def retryable(self) -> bool:
        return self.made and not self.delivered and (
            self.status is None or self.status >= 500 or self.status == 429)


def _post_once(url: str, data: bytes, headers: Mapping[str, str], seconds: float) -> _Answer:
    """One POST, cut off ``seconds`` after it starts, whatever the server does: a watchdog
    shuts the socket down at the deadline."""
    parts = urlsplit(url)
    connection_class = (http.client.HTTPSConnection if parts.scheme == "https"
                        else http.client.HTTPConnection)
    connection = connection_class(parts.hostname, parts.port, timeout=seconds)
    expired = threading.Event()

    def cut_off() -> None:
        expired.set()
        sock = connection.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    watchdog = threading.Timer(seconds, cut_off)
    watchdog.daemon = True
    watchdog.start()
    try:
        target = parts.path or "/"
        if parts.query:
            target += f"?{parts.query}"
        connection.request("POST", target, body=data, headers=dict(headers))
        response = connection.getresponse()
        response.read()
        if expired.is_set():  # the shut socket reads as the end of the answer: it is not one
            raise DeadlineExceeded
        status = response.status
        if 200 <= status < 300:
            return _Answer(status)
        # Only a receiver that is overloaded (429) or down for a while (503) asks for a wait.
        retry_after = (retry_after_seconds(response.getheader("Retry-After"))
                       if status in (429, 503) else None)
        return _Answer(status, f"HTTP {status} {response.reason}", retry_after)
    except (OSError, http.client.HTTPException) as exc:
        if expired.is_set():  # whatever broke, it broke because the watchdog cut it off
            return _Answer(error=f"DeadlineExceeded: no whole answer within {seconds:g} s")
        if isinstance(exc, OSError):
            return _Answer(error=f"{type(exc).__name__}: {exc}")
        return _Answer(error=f"OSError: {type(exc).__name__}: {exc}")
    finally:
        watchdog.cancel()
        connection.close()


def retry_after_seconds(value: str | None, now: Clock | None = None) -> float | None:
    """The wait a ``Retry-After`` header asks for, in seconds (0 for a moment already past),
    or None when there is none or it is neither a number of seconds nor an HTTP date."""
    if value is None:
        return None
    value = value.strip()
    if re.fullmatch(r"[0-9]+", value):
        return float(value)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:  # an HTTP date is GMT; a receiver that leaves it out means it
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - (now or utc_now)()).total_seconds())


def post_json(url: str, body: Mapping, settings: AlertSettings, *, alert_id: str | None = None,
              sleep: Callable[[float], None] = time.sleep, log=LOG) -> Delivery:
    """POST ``body``; retry network errors, 5xx and 429 with backoff (longer when the receiver
    asks for it with ``Retry-After``), at most ``attempts``, within ``deadline_seconds`` in all.
    Every attempt sends the same bytes under the same ``Idempotency-Key``."""
    data = json.dumps(body, allow_nan=False).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    if alert_id:
        headers["Idempotency-Key"] = alert_id
    attempts = max(1, settings.attempts)
    deadline = time.monotonic() + settings.deadline_seconds
    late = f"the delivery deadline of {settings.deadline_seconds:g} s passed"
    made, last = 0, _Answer()  # the attempts made, and the last one's answer

    def attempt() -> _Answer:
        nonlocal made, last
        seconds = min(settings.timeout_seconds, deadline - time.monotonic())
        if seconds <= 0:
            return _Answer(made=False)
        made += 1
        last = _post_once(url, data, headers, seconds)
        return last

    def wait(state: tenacity.RetryCallState) -> float:
        backoff = settings.backoff_seconds * 2 ** (state.attempt_number - 1)
        return max(backoff, state.outcome.result().retry_after or 0.0)

    def announce(state: tenacity.RetryCallState) -> None:
        pause = wait(state)
        asked = " as the receiver asks (Retry-After)" if pause == last.retry_after else ""
        log.warning(f"alert delivery attempt {made}/{attempts} failed ({last.error}); "
                    f"retrying in {pause:g} s{asked}")

    # tenacity spends 0.2 to 0.5 ms of Python on a delivery (a loop of our own took 0.05 ms):
    # nothing beside a POST over the network, sent once for an evaluation that regressed.
    answer = tenacity.Retrying(
        retry=tenacity.retry_if_result(lambda answer: answer.retryable),
        # The wait is known before it starts: one that would end past the deadline is not begun.
        stop=(tenacity.stop_after_attempt(attempts)
              | (lambda state: time.monotonic() + wait(state) >= deadline)),
        wait=wait, sleep=sleep, before_sleep=announce,
        retry_error_callback=lambda state: state.outcome.result(),
    )(attempt)
    if answer.delivered:
        return Delivery(True, made, answer.status)
    error = last.error
    if not answer.made or (answer.retryable and made < attempts):
        error = f"{error}; {late}"
    log.error(f"alert delivery failed after {max(made, 1)} attempt(s): {error}")
    return Delivery(False, max(made, 1), last.status, error)


# --- the record (read and shown by nightly.history) ---------------------------------------------

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def _ceil(moment: datetime) -> datetime:
    """To the second, rounded up: a retry stamped so is never early."""
    return (moment + timedelta(microseconds=999_999)).replace(microsecond=0)


def alerted_keys(alerts_file: Location) -> set[str]:
    return {record["key"] for record in read_alerts(alerts_file)}


def _outcome(delivery: Delivery) -> str:
    if delivery.delivered:
        return DELIVERED
    return FAILED if delivery.attempts else RECORDED


def _outcome_line(claimed: Mapping, delivery: Delivery, earlier: Mapping,
                  settings: AlertSettings, now: datetime) -> dict:
    """The line that closes a run's delivery: its outcome, the counts over every run so far
    (``earlier`` is the alert's state before it), and when a failed one is due again."""
    runs = runs_of(earlier) + (1 if delivery.attempts else 0)
    line = {**claimed, "state": _outcome(delivery), "delivery": asdict(delivery),
            "attempts": attempts_of(earlier) + delivery.attempts, "runs": runs,
            "finished_at": _stamp(now), "next_retry_at": None}
    if delivery.error and delivery.attempts:
        line["last_error"] = delivery.error
    if line["state"] == FAILED:
        line["next_retry_at"] = _stamp(_ceil(now + timedelta(seconds=retry_wait(runs, settings))))
        line["expires_at"] = _stamp(expires_at(line, settings))
    return line


def _deliver(alerts_file: Location, claimed: dict, settings: AlertSettings, *, now: Clock,
             sleep: Callable[[float], None], log) -> dict:
    """POST a claimed alert (its ``sending`` line is written) and append its outcome."""
    body = claimed["payload"]
    if settings.webhook:
        delivery = post_json(settings.webhook, body, settings, alert_id=claimed["alert_id"],
                             sleep=sleep, log=log)
    else:
        delivery = Delivery(False, 0, error=f"no webhook configured ({ALERT_WEBHOOK.name})")

    def outcome(records: Sequence[dict]) -> dict:
        earlier = latest_by_key(records).get(claimed["key"], {})
        return _outcome_line(claimed, delivery, earlier, settings, now())

    return append_log.append(alerts_file, outcome)


def _sending_line(earlier: Mapping | None, key: str, payload: dict, moment: datetime) -> dict:
    """The line written before a run's first POST of an alert; a resend keeps the id and
    the time the alert was first raised (the give-up deadline counts from it)."""
    alert_id = earlier["alert_id"] if earlier else uuid.uuid4().hex
    return {"key": key, "alert_id": alert_id, "state": SENDING,
            "alerted_at": earlier["alerted_at"] if earlier else _stamp(moment),
            "attempted_at": _stamp(moment), "payload": {**payload, "alert_id": alert_id}}


def notify(
    alerts_file: Location,
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
    now: Clock = utc_now,
) -> dict | None:
    """Alert one evaluation if it is due; returns the outcome recorded, or None. Then send
    again every earlier alert whose retry is due (``redeliver_due``): a report step is a run
    that delivers alerts.

    Due means: an evaluation of the newest pool (``newest``) under its headline version
    (``headline``), with at least one regression, whose alert has no outcome recorded yet (a
    ``sending`` record alone is a delivery that was cut short: it is sent again under its id).
    Never raises.
    """
    record = _notify(alerts_file, nightly, candidate_pool=candidate_pool, spec_id=spec_id,
                     report=report, newest=newest, headline=headline, settings=settings,
                     drill_down=drill_down, sleep=sleep, log=log, now=now)
    redeliver_due(alerts_file, settings, sleep=sleep, log=log, now=now)
    return record


def _notify(alerts_file: Location, nightly: Mapping | None, *, candidate_pool: str,
            spec_id: str, report: str, newest: bool, headline: bool, settings: AlertSettings,
            drill_down: str | None, sleep: Callable[[float], None], log, now: Clock
            ) -> dict | None:
    try:
        if not (newest and headline and nightly and nightly["previous_pool"]):
            return None
        payload = alert_payload(nightly, candidate_pool=candidate_pool, spec_id=spec_id,
                                report=report, drill_down=drill_down)
        if payload is None:
            return None
        key = evaluation_key(candidate_pool, nightly["judgment_version"], spec_id)

        def claim(records: Sequence[dict]) -> dict | None:
            earlier = latest_by_key(records).get(key)
            if earlier is not None and state_of(earlier) != SENDING:
                return None
            return _sending_line(earlier, key, payload, now())

        claimed = append_log.append(alerts_file, claim)
        if claimed is None:
            log.info(f"evaluation {key} was already alerted; not alerting again")
            return None
        record = _deliver(alerts_file, claimed, settings, now=now, sleep=sleep, log=log)
        # Info, not a warning: the alert is the report's, its history's and the main job's to
        # show; at warning level the run's console printed it a second time, mid-run.
        log.info(claimed["payload"]["text"])
        return record
    except Exception as exc:  # an alert must never fail the scoring
        log.error(f"alert for {candidate_pool} not raised: {type(exc).__name__}: {exc}")
        return None


def redeliver_due(alerts_file: Location, settings: AlertSettings, *,
                  sleep: Callable[[float], None] = time.sleep, log=LOG,
                  now: Clock = utc_now) -> list[dict]:
    """Send again every alert whose retry is due, under its id, and expire those past their
    deadline; returns the lines written. Without a webhook nothing is sent (an alert waits for
    one), but alerts still expire. Never raises: a failure is logged, the alert stays due."""
    written = []
    try:
        for alert in read_alerts(alerts_file):
            action = due(alert, settings, now())
            if action == "expire" or (action == "retry" and settings.webhook):
                line = _act(alerts_file, alert["key"], action, settings, sleep=sleep, log=log,
                            now=now)
                written += [line] if line else []
    except Exception as exc:  # a redelivery must never fail the run that carries it
        log.error(f"alerts not redelivered: {type(exc).__name__}: {exc}")
    return written


def _act(alerts_file: Location, key: str, action: str, settings: AlertSettings, *,
         sleep: Callable[[float], None], log, now: Clock) -> dict | None:
    """Expire or resend one alert, if it is still due when its line is written (another run
    may have sent it meanwhile: the decision is taken again on the log as it is then)."""
    def decide(records: Sequence[dict]) -> dict | None:
        alert = latest_by_key(records).get(key)
        moment = now()
        if alert is None or due(alert, settings, moment) != action:
            return None
        if action == "expire":
            return {**alert, "state": EXPIRED, "expired_at": _stamp(moment),
                    "next_retry_at": None, "expires_at": _stamp(expires_at(alert, settings))}
        return _sending_line(alert, key, alert["payload"], moment)

    line = append_log.append(alerts_file, decide)
    if line is None or action == "expire":
        if line is not None:
            log.error(f"alert {line['alert_id']} for {key} expired undelivered after "
                      f"{attempts_of(line)} attempt(s): {line.get('last_error')}")
        return line
    log.warning(f"alert {line['alert_id']} for {key}: sending it again")
    return _deliver(alerts_file, line, settings, now=now, sleep=sleep, log=log)
