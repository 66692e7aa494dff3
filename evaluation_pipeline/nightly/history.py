"""The evaluation history: every evaluation's aggregate rows side by side, night after night.

One row per (candidate_pool, judgment_version, spec_id, ranker, cutoff, measure, slice,
slice_value);
``slice`` is null on the overall row. Rows come from an evaluation's aggregates frame (the one
written to aggregates.parquet) with the night's ready time, when it was evaluated, whether its
version is the night's headline, and, on overall rows, the comparison with the previous night
and the attribution. Upserting an evaluation replaces its rows, so a rerun never duplicates.

Beside it, the record of alerts (``history/alerts.jsonl``, written by ``nightly.alerts``) is
read here: a log of JSON lines that only grows, an alert's state the fold of its lines (the
last one's fields over the earlier ones'; each delivery's outcome line carries the counts so
far, ``attempts`` and ``runs``), what a run does with each alert now (``due``: resend it,
expire it, or wait), and how an alert not delivered is shown.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Protocol

import polars as pl

from evaluation_pipeline.io import append_log
from evaluation_pipeline.io.datasets import read_dataset
from evaluation_pipeline.io.locations import Location
from evaluation_pipeline.nightly.verdicts import FORMER_NAMES, parse_time
from schemas.columns import (
    AGGREGATE_DTYPES,
    EVALUATION_KEY,
    HISTORY_COLUMNS,
    HISTORY_DTYPES,
    HISTORY_KEY,
    HISTORY_NIGHTLY,
    HISTORY_VALUES,
    NDCG_AGGREGATE_COLUMNS,
    STATUS_COUNT_COLUMNS,
    is_spec_ndcg_row,
    measure_of,
    ndcg_name,
    spec_ndcg_rows,
)
from schemas.errors import EvaluationError

LOG = logging.getLogger(__name__)
OVERALL = "all"  # the aggregates' slice_column of the pooled rows

# aggregates.parquet column -> history column, where the names differ: the macro means keep
# their names without "macro_" (macro_ndcg -> ndcg, macro_value_low -> value_low).
FROM_AGGREGATES = {column: column.removeprefix("macro_")
                   for column in (*AGGREGATE_DTYPES, *NDCG_AGGREGATE_COLUMNS)
                   if column.startswith("macro_")}
SHARED = (
    "ranker", "cutoff", "measure", "weighted_ndcg", "weighted_ndcg_low", "weighted_ndcg_high",
    "weighted_value", "weighted_value_low", "weighted_value_high",
    "n_queries", "n_with_number", *STATUS_COUNT_COLUMNS, "mean_judged_at_k",
    "mean_candidate_recall", "n_bounded",
)
# Nightly comparison field -> history column (the comparisons of report.json's ``nightly``).
FROM_COMPARISON = ("verdict", "mean_difference", "difference_low", "difference_high",
                   "p_value", "p_value_holm", "holm_family", "test_resamples",
                   "adjusted_level", "difference_low_adjusted", "difference_high_adjusted",
                   "detectable_effect", "difference_min", "difference_max",
                   "holds_for_every_grading")
FROM_ATTRIBUTION = ("previous_judgment_version", "from_judgments", "from_pool")


def empty_history() -> pl.DataFrame:
    return pl.DataFrame(schema=HISTORY_DTYPES).select(HISTORY_COLUMNS)


def history_rows(
    aggregates: pl.DataFrame,
    *,
    ready_at: str,
    evaluated_at: str,
    headline: bool,
    nightly: Mapping | None = None,
    headline_measures: Sequence[str] | None = None,
) -> pl.DataFrame:
    """The history rows of one evaluation from its aggregates frame (with lineage columns).

    ``nightly`` is report.json's nightly section of this evaluation (or None): its verdicts and
    attribution go onto the overall rows of their ranker and measure. ``headline_measures``:
    the spec's (``EvaluationSpec.headline_measures``; None: its nDCG@K), marked on the rows.
    """
    overall = pl.col("slice_column") == OVERALL
    rows = aggregates.select(
        *EVALUATION_KEY,
        *SHARED,
        *(pl.col(source).alias(target) for source, target in FROM_AGGREGATES.items()),
        pl.when(overall).then(None).otherwise(pl.col("slice_column")).alias("slice"),
        pl.when(overall).then(None).otherwise(pl.col("slice_value")).alias("slice_value"),
        *(c for c in HISTORY_COLUMNS if c in aggregates.columns and c not in EVALUATION_KEY
          and c not in SHARED and c != "slice_value"),
    ).with_columns(
        pl.lit(headline).alias("headline"),
        (is_spec_ndcg_row().fill_null(False) if headline_measures is None
         else pl.col("measure").is_in(list(headline_measures))).alias("headline_measure"),
        pl.lit(parse_time(ready_at)).alias("ready_at"),
        pl.lit(parse_time(evaluated_at)).alias("first_evaluated_at"),
        pl.lit(parse_time(evaluated_at)).alias("evaluated_at"),
    )
    # Joined on a flag, not on the null slice: nulls never match in a join.
    flag = pl.col("slice").is_null().alias("__overall")
    rows = rows.with_columns(flag).join(
        _nightly_frame(nightly).with_columns(flag).drop("slice"),
        on=["ranker", "measure", "__overall"], how="left",
    )
    return _conform(rows)


def _nightly_frame(nightly: Mapping | None) -> pl.DataFrame:
    """The nightly columns per (ranker, measure) for the overall rows (slice null); the
    attribution is of the spec's nDCG@K."""
    schema = {"ranker": pl.String, "measure": pl.String, "slice": pl.String,
              **{c: HISTORY_DTYPES[c] for c in HISTORY_NIGHTLY}}
    if not nightly:
        return pl.DataFrame(schema=schema)
    attribution = {(a["ranker"], ndcg_name(a["cutoff"])): a
                   for a in nightly.get("attribution") or []}
    records = []
    for c in nightly["comparisons"]:
        measure = measure_of(c)
        parts = attribution.get((c["ranker"], measure), {})
        records.append({
            "ranker": c["ranker"], "measure": measure, "slice": None,
            "previous_pool": nightly["previous_pool"],
            **{f: c.get(f) for f in FROM_COMPARISON},
            **{f: parts.get(f) for f in FROM_ATTRIBUTION},
        })
    return pl.DataFrame(records, schema=schema)


def current_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """A history written under the nightly columns' former names (``FORMER_NAMES``) under
    today's; one written before the measures with ``measure`` and the value columns (its
    rows are the spec's nDCG@K); one written under today's as is."""
    frame = frame.rename({old: new for old, new in FORMER_NAMES.items()
                          if old in frame.columns and new not in frame.columns})
    if "measure" in frame.columns or "cutoff" not in frame.columns:
        return frame
    return frame.with_columns(
        pl.format("nDCG@{}", pl.col("cutoff")).alias("measure"),
        pl.lit(True).alias("headline_measure"),
        *(pl.col(ndcg).alias(value) for value, ndcg in HISTORY_VALUES.items()
          if ndcg in frame.columns))


def _conform(frame: pl.DataFrame) -> pl.DataFrame:
    """Every history column in its declared order and dtype (missing ones null)."""
    frame = current_columns(frame)
    return frame.select(
        (pl.col(c) if c in frame.columns else pl.lit(None)).cast(HISTORY_DTYPES[c]).alias(c)
        for c in HISTORY_COLUMNS
    )


def upsert(history: pl.DataFrame | None, rows: pl.DataFrame) -> pl.DataFrame:
    """``history`` with the evaluations of ``rows`` replaced by ``rows``.

    A rerun keeps the evaluation's ``first_evaluated_at``: a night's headline version is
    decided by when its pool was first evaluated, not by the latest rerun.
    """
    history = empty_history() if history is None else _conform(history)
    rows = _conform(rows)
    earlier = (
        history.join(rows.select(EVALUATION_KEY).unique(), on=EVALUATION_KEY, how="semi")
        .group_by(EVALUATION_KEY)
        .agg(pl.col("first_evaluated_at").min().alias("__first"))
    )
    rows = (
        rows.join(earlier, on=EVALUATION_KEY, how="left")
        .with_columns(pl.coalesce("__first", "first_evaluated_at").alias("first_evaluated_at"))
        .drop("__first")
    )
    kept = history.join(rows.select(EVALUATION_KEY).unique(), on=EVALUATION_KEY, how="anti")
    return sort_history(pl.concat([kept, rows.select(HISTORY_COLUMNS)]))


def sort_history(history: pl.DataFrame) -> pl.DataFrame:
    """Nights in order (ready time, then pool), then the key; overall rows first."""
    return history.sort(["ready_at", *HISTORY_KEY], nulls_last=False)


def check_unique(history: pl.DataFrame) -> None:
    """Refuse a history with two rows for one key (the table's invariant)."""
    repeated = history.group_by(HISTORY_KEY).len().filter(pl.col("len") > 1)
    if repeated.height:
        raise ValueError(f"history holds {repeated.height} repeated keys, e.g. "
                         f"{repeated.drop('len').row(0, named=True)}")


# --- reading the history back --------------------------------------------------------------------


def overall(history: pl.DataFrame) -> pl.DataFrame:
    return history.filter(pl.col("slice").is_null())


def overall_means(history: pl.DataFrame, pool: str, version: str,
                  spec_id: str) -> dict[tuple[str, int], float | None]:
    """(ranker, cutoff) -> macro NDCG of one evaluation's overall rows of the spec's nDCG@K
    (empty if absent)."""
    rows = spec_ndcg_rows(overall(history)).filter(
        (pl.col("candidate_pool") == pool) & (pl.col("judgment_version") == version)
        & (pl.col("spec_id") == spec_id)
    )
    return {(r, k): v for r, k, v in rows.select("ranker", "cutoff", "ndcg").iter_rows()}


def aggregate_means(aggregates: pl.DataFrame) -> dict[tuple[str, int], float | None]:
    """(ranker, cutoff) -> macro NDCG of an aggregates frame's overall rows of the spec's
    nDCG@K."""
    rows = spec_ndcg_rows(aggregates).filter(pl.col("slice_column") == OVERALL)
    return {(r, k): v for r, k, v in rows.select("ranker", "cutoff", "macro_ndcg").iter_rows()}


def ready_times(history: pl.DataFrame) -> dict[str, str]:
    """pool -> its ready time (ISO), as recorded in the history."""
    rows = history.group_by("candidate_pool").agg(pl.col("ready_at").min())
    return {p: t.isoformat() for p, t in rows.iter_rows()}


def first_evaluated(history: pl.DataFrame, pool: str) -> str | None:
    """When ``pool`` was first evaluated (any version or spec), or None if never."""
    rows = history.filter(pl.col("candidate_pool") == pool)
    return rows["first_evaluated_at"].min().isoformat() if rows.height else None


def headline_of(history: pl.DataFrame, pool: str, spec_id: str) -> str | None:
    """The headline judgment version recorded for ``pool`` under ``spec_id``."""
    rows = history.filter(
        (pl.col("candidate_pool") == pool) & (pl.col("spec_id") == spec_id) & pl.col("headline")
    )
    versions = rows["judgment_version"].unique().to_list()
    return versions[0] if len(versions) == 1 else None


def headline_trend(history: pl.DataFrame, spec_id: str | None = None,
                   measures: Sequence[str] | None = None) -> pl.DataFrame:
    """Overall rows of each night's headline evaluation, of the spec's headline measures (or
    of ``measures``, headline or not), nights in order."""
    chosen = (pl.col("headline_measure") if not measures
              else pl.col("measure").is_in(list(measures)))
    rows = overall(history).filter(pl.col("headline") & chosen)
    if spec_id is not None:
        rows = rows.filter(pl.col("spec_id") == spec_id)
    return sort_history(rows)


def numeric_metadata(aggregates: pl.DataFrame,
                     headline_measures: Sequence[str] | None = None) -> dict[str, float]:
    """``<measure>/<ranker>`` -> its macro mean (overall rows) of each headline measure
    (None: the spec's nDCG@K), numeric metadata Dagster plots; the spec's nDCG@K keeps the
    name it had, ``ndcg@K/<ranker>``."""
    rows = aggregates.filter(pl.col("slice_column") == OVERALL)
    chosen = (rows.filter(is_spec_ndcg_row().fill_null(False)) if headline_measures is None
              else rows.filter(pl.col("measure").is_in(list(headline_measures))))
    out = {}
    for ranker, cutoff, measure, value in chosen.select(
            "ranker", "cutoff", "measure", "macro_value").iter_rows():
        if value is None:
            continue
        name = f"ndcg@{cutoff}" if cutoff is not None and measure == ndcg_name(cutoff) else measure
        out[f"{name}/{ranker}"] = float(value)
    return dict(sorted(out.items()))


def read_history(where: Location) -> pl.DataFrame | None:
    """The history at ``where`` (None: none yet), its columns under today's names (the next
    evaluation writes them so); a file that is not readable Parquet (cut short by a full disk,
    changed by hand) is named with what to do, never read as empty."""
    if not where.exists():
        return None
    try:
        history = read_dataset(where)
    except Exception as exc:  # polars' and pyarrow's errors of a damaged file alike
        raise EvaluationError(
            f"{where}: the evaluation history is not a readable Parquet file ({exc}). Restore it "
            "from a backup, or move it aside: the next evaluation starts a new history (every "
            "evaluation's numbers stay in its report.json)") from None
    return current_columns(history)


# --- the record of alerts ------------------------------------------------------------------------

SENDING, DELIVERED, FAILED, RECORDED = "sending", "delivered", "failed", "recorded"
EXPIRED = "expired"  # given up: not delivered within AlertSettings.give_up_after_seconds
# Not delivered (yet, or ever); a ``recorded`` alert was never meant to be sent (no webhook).
UNDELIVERED = (SENDING, FAILED, EXPIRED)


def state_of(record: Mapping) -> str:
    """A record's state; a record written before states were recorded holds its outcome."""
    if "state" in record:
        return record["state"]
    return DELIVERED if record.get("delivery", {}).get("delivered") else FAILED


def attempts_of(record: Mapping) -> int:
    """POSTs made for an alert over every run; a record from before the count was kept has
    its one delivery's."""
    if "attempts" in record:
        return record["attempts"]
    return (record.get("delivery") or {}).get("attempts", 0)


def runs_of(record: Mapping) -> int:
    """Runs whose delivery of the alert came to an outcome."""
    if "runs" in record:
        return record["runs"]
    return 1 if record.get("delivery") else 0


def latest_by_key(records: Sequence[Mapping]) -> dict[str, dict]:
    """The state of every alert, the fold of its lines (a later line's fields over the earlier
    ones'), in the order the alerts were first recorded (lines that are JSON but not an alert
    record are skipped)."""
    latest: dict[str, dict] = {}
    for record in filter(is_alert_record, records):
        latest[record["key"]] = {**latest.get(record["key"], {}), **record}
    return latest


def is_alert_record(record: Mapping) -> bool:
    return isinstance(record.get("key"), str) and isinstance(record.get("payload"), dict)


def read_alerts(alerts_file: Location) -> list[dict]:
    """Every recorded alert, its latest state, oldest first (an absent file is no alert). Lines
    that are not JSON objects are named by the log's reader; JSON objects that are no alert
    record (another program's line) are counted here: both are skipped, never fatal."""
    records = append_log.read(alerts_file).records
    foreign = sum(not is_alert_record(r) for r in records)
    if foreign:
        LOG.warning(f"{alerts_file}: {foreign} JSON line(s) without a string 'key' and an "
                    "object 'payload' are no alert record: skipped")
    return list(latest_by_key(records).values())


# --- what is due ---------------------------------------------------------------------------------


class Waits(Protocol):
    """What says when an alert is due: the fields of ``nightly.alerts.AlertSettings`` (which
    imports this module, so the class is not named here)."""

    timeout_seconds: float
    deadline_seconds: float
    retry_after_seconds: float
    retry_after_max_seconds: float
    give_up_after_seconds: float


def _time(stamp: str) -> datetime:
    moment = datetime.fromisoformat(stamp)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def expires_at(record: Mapping, settings: Waits) -> datetime:
    """When an undelivered alert is given up: ``give_up_after_seconds`` after it was raised."""
    return _time(record["alerted_at"]) + timedelta(seconds=settings.give_up_after_seconds)


def retry_wait(runs: int, settings: Waits) -> float:
    """Seconds from a failed run to the next retry, after ``runs`` runs failed."""
    doubled = settings.retry_after_seconds * 2 ** max(0, min(runs - 1, 40))
    return min(doubled, settings.retry_after_max_seconds)


def in_flight_seconds(settings: Waits) -> float:
    """The longest one run's delivery takes: a ``sending`` record older than this was cut
    short (its run was killed), a younger one may still be under way in another process."""
    return settings.deadline_seconds + settings.timeout_seconds


def due(record: Mapping, settings: Waits, now: datetime) -> str | None:
    """What a run does with an alert now: ``"expire"`` it, ``"retry"`` it, or None (delivered,
    only recorded, waiting for its next retry, or being sent by another run)."""
    state = state_of(record)
    started = _time(record.get("attempted_at") or record["alerted_at"])
    if state == SENDING and (now - started).total_seconds() <= in_flight_seconds(settings):
        return None
    if state not in (SENDING, FAILED):
        return None
    if now >= expires_at(record, settings):
        return "expire"
    # A record from before retries has no next_retry_at: its run is long over, it is due.
    retry = record.get("next_retry_at") if state == FAILED else None
    return "retry" if retry is None or now >= _time(retry) else None


# --- what shows ----------------------------------------------------------------------------------


def undelivered(alerts: Sequence[Mapping]) -> list[dict]:
    """The alerts not delivered (being sent, failed, or given up), each as its delivery's
    named fields: what a run's summary, the check and ``ndcg-eval history`` show."""
    return [delivery_status(a) for a in alerts if state_of(a) in UNDELIVERED]


def delivery_status(alert: Mapping) -> dict:
    return {"alert_id": alert.get("alert_id"), "key": alert["key"], "state": state_of(alert),
            "alerted_at": alert.get("alerted_at"), "attempts": attempts_of(alert),
            "runs": runs_of(alert),
            "last_error": alert.get("last_error") or (alert.get("delivery") or {}).get("error"),
            "next_retry_at": alert.get("next_retry_at"), "expires_at": alert.get("expires_at"),
            "expired_at": alert.get("expired_at")}


def describe_delivery(status: Mapping) -> str:
    """One line: how an undelivered alert stands, and what happens to it next."""
    tried = f"{status['attempts']} attempt(s) in {status['runs']} run(s)"
    error = f"last error: {status['last_error']}" if status["last_error"] else "no error recorded"
    if status["state"] == EXPIRED:
        return f"given up at {status['expired_at']}, never delivered ({tried}; {error})"
    if status["state"] == SENDING:
        return (f"being sent (a delivery that did not finish: the next run sends it again; "
                f"{tried} before it)")
    retry = (f"next retry at {status['next_retry_at']}" if status["next_retry_at"]
             else "the next run retries it")
    gives_up = f", gives up at {status['expires_at']}" if status["expires_at"] else ""
    return f"not delivered ({tried}; {error}); {retry}{gives_up}"
