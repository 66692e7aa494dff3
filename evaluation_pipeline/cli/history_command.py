"""``ndcg-eval history STORAGE [--ranker R] [--cutoff K] [--night POOL] [--json]``: the
nightly trend, or one night's drill-down.

The trend: one line per night and ranker: the night's headline evaluation (its NDCG and
interval), the comparison with the previous night (difference, Holm-adjusted p, verdict) and,
on the night the headline judgment version changed, the attribution. Then every alert raised,
and how its delivery stands: one not delivered shows its attempts, its last error, and its next
retry or when it was given up (``--json``: ``undelivered``, one object of named fields each).

``--night POOL``: that night's headline evaluation against the previous night: the verdicts,
the queries that moved most and the change by slice (from its report.json), and its report.
"""

from __future__ import annotations

import argparse
import json
import shlex

import polars as pl

from evaluation_pipeline.cli.options import place
from evaluation_pipeline.io.atomic import json_text
from evaluation_pipeline.io.locations import Location, location
from evaluation_pipeline.io.storage import (
    HTML_FILE,
    alerts_file,
    history_file,
    judgments_folder,
    manifest_file,
    pool_folder,
    report_file,
)
from evaluation_pipeline.nightly import verdicts as nightly
from evaluation_pipeline.nightly.history import (
    DELIVERED,
    UNDELIVERED,
    delivery_status,
    describe_delivery,
    headline_trend,
    read_alerts,
    read_history,
    state_of,
    undelivered,
)
from evaluation_pipeline.report.format import (
    floor_notes,
    holm_families,
    interval,
    number,
    p_shown,
)
from evaluation_pipeline.report.night_text import render_night
from evaluation_pipeline.report.tables import aligned
from schemas.columns import label_of
from schemas.errors import EvaluationError

# The columns a trend line shows, in order (the JSON output has them all).
TREND_COLUMNS = (
    "candidate_pool", "judgment_version", "ranker", "cutoff", "measure", "value", "value_low",
    "value_high",
    "mean_candidate_recall", "previous_pool", "mean_difference", "p_value_holm", "verdict",
    "from_judgments", "from_pool",
)


class HistoryError(EvaluationError):
    """No history where one was asked for."""



def trend_rows(storage: Location | str, rankers: list[str] | None = None,
               cutoffs: list[int] | None = None, spec_id: str | None = None,
               measures: list[str] | None = None) -> pl.DataFrame:
    """The headline evaluations' overall rows of the spec's headline measures (or of
    ``measures``, canonical names), of ``rankers`` and ``cutoffs`` when given."""
    path = location(storage).joinpath(*history_file())
    history = read_history(path)
    if history is None:
        raise HistoryError(f"no evaluation history at {path}: the pipeline writes it after "
                           "each evaluation")
    trend = headline_trend(history, spec_id, measures)
    if rankers:
        trend = trend.filter(pl.col("ranker").is_in(rankers))
    if cutoffs:
        trend = trend.filter(pl.col("cutoff").is_in(cutoffs))
    return trend


def render_trend_table(trend: pl.DataFrame, alerts: list[dict]) -> str:
    rows = []
    for r in trend.select(TREND_COLUMNS).iter_rows(named=True):
        # Blank, not "n/a": the first night has no comparison, most nights no attribution.
        rows.append([
            r["candidate_pool"], r["judgment_version"], r["ranker"], label_of(r),
            number(r["value"], missing=""), interval([r["value_low"], r["value_high"]]),
            number(r["mean_candidate_recall"], 3, missing=""),
            number(r["mean_difference"], signed=True, missing=""),
            p_shown(r, "p_value_holm", missing=""),
            (r["verdict"] or "").replace("_", " ") or "first night",
            number(r["from_judgments"], signed=True, missing=""),
            number(r["from_pool"], signed=True, missing=""),
        ])
    lines = [aligned(["night", "judgments", "ranker", "measure", "mean", "interval", "recall",
                    "vs prev", "p (Holm)", "verdict", "from judg.", "from pool"], rows, left=3)]
    shown = list(trend.iter_rows(named=True))
    lines += [f"p (Holm): {family}" for family in holm_families(shown)]
    lines += floor_notes(shown)
    lines.append("")
    if not alerts:
        lines.append("alerts: none")
    for alert in alerts:
        lines += [f"alert {alert['alerted_at']} for {alert['key']} (id {alert.get('alert_id')}), "
                  f"{alert_state(alert)}:",
                  *(f"  {line}" for line in alert["payload"]["text"].splitlines())]
    return "\n".join(lines)


def alert_state(alert: dict) -> str:
    """How an alert's delivery stands: for one not delivered, its attempts, last error, and
    its next retry or when it was given up."""
    state = state_of(alert)
    if state == DELIVERED:
        return "delivered"
    if state in UNDELIVERED:
        return describe_delivery(delivery_status(alert))
    return f"not delivered ({(alert.get('delivery') or {}).get('error')})"  # recorded only


def render_regressions(trend: pl.DataFrame, storage: Location | str,
                       spec_id: str | None = None) -> str:
    """The regressed nights of a trend, set apart, with the command that drills into each
    (under ``spec_id`` when the trend is of one spec among several)."""
    regressed = trend.filter(pl.col("verdict") == "regressed")
    if regressed.is_empty():
        return "No ranker regressed against its previous night."
    rows = [[r["candidate_pool"], r["judgment_version"], r["ranker"], label_of(r),
             number(r["mean_difference"], signed=True),
             interval([r["difference_low"], r["difference_high"]], signed=True),
             p_shown(r, "p_value_holm"),
             r["previous_pool"]]
            for r in regressed.iter_rows(named=True)]
    lines = ["REGRESSIONS (against the previous night):",
             aligned(["night", "judgments", "ranker", "measure", "vs prev", "interval",
                      "p (Holm)", "previous night"], rows, left=4)]
    for night in dict.fromkeys(regressed["candidate_pool"].to_list()):
        spec = f" --spec-id {spec_id}" if spec_id else ""
        lines.append(f"drill down: ndcg-eval history {shlex.quote(str(storage))} --night {night}"
                     f"{spec}")
    return "\n".join(lines)


def not_evaluated(storage: Location, spec_id: str | None = None) -> dict[str, list[str]]:
    """Per published judgment version, the published pools its history has no evaluation of
    (older than its backfill window, or not evaluated yet), in night order."""
    history = read_history(storage.joinpath(*history_file()))
    if history is None:
        return {}
    if spec_id:
        history = history.filter(pl.col("spec_id") == spec_id)
    done = set(history.select("judgment_version", "candidate_pool").unique().iter_rows())
    pools = {pool: nightly.ready_at_of(manifest)
             for pool, manifest in _manifests(storage, pool_folder).items()}
    order = nightly.night_order(pools)
    left = {version: [pool for pool in order if (version, pool) not in done]
            for version in _manifests(storage, judgments_folder)}
    return {version: pools for version, pools in left.items() if pools}


def _manifests(storage: Location, folder_of) -> dict[str, dict]:
    """The manifests of the published inputs of one kind, by name."""
    parent = storage.joinpath(*folder_of("")[:-1])
    if not parent.exists():
        return {}
    found = {}
    for folder in sorted(parent.iterdir(), key=lambda p: p.name):
        manifest = folder.joinpath(*manifest_file(()))
        if manifest.exists():
            found[folder.name] = json.loads(manifest.read_text(encoding="utf-8"))
    return found


def render_not_evaluated(left: dict[str, list[str]]) -> str:
    if not left:
        return ""
    lines = ["", "NOT EVALUATED (published, with no evaluation in the history: older than the "
             "version's backfill window, NDCG_EVAL_BACKFILL_NIGHTS, or still to come):"]
    lines += [f"  {version}: {len(pools)} pool(s): {', '.join(pools)}"
              for version, pools in left.items()]
    return "\n".join(lines)


def alerts_of(storage: Location) -> list[dict]:
    """The alerts recorded in the storage, each in its latest state."""
    return read_alerts(storage.joinpath(*alerts_file()))


def night_report(storage: Location, night: str, spec_id: str | None = None
                 ) -> tuple[dict, Location]:
    """(report.json, its location) of ``night``'s headline evaluation, its nightly section
    under today's names (a report written before they were renamed is read all the same)."""
    trend = trend_rows(storage, spec_id=spec_id)
    rows = trend.filter(pl.col("candidate_pool") == night)
    if rows.is_empty():
        nights = ", ".join(dict.fromkeys(trend["candidate_pool"].to_list())) or "none"
        raise HistoryError(f"night {night!r} has no headline evaluation in the history of "
                           f"{storage} (nights: {nights})")
    first = rows.row(0, named=True)
    version, spec = first["judgment_version"], first["spec_id"]
    where = storage.joinpath(*report_file(night, version, spec))
    if not where.exists():
        raise HistoryError(f"{where}: no report of the night's headline evaluation")
    report = json.loads(where.read_text())
    if report.get("nightly"):
        report["nightly"] = nightly.current_names(report["nightly"])
    return report, where


def run_night(args: argparse.Namespace, storage: Location) -> int:
    report, where = night_report(storage, args.night, args.spec_id)
    page = str(where.parent / HTML_FILE)
    if args.json:
        print(json_text({"night": args.night, "report": page, "lineage": report["lineage"],
                         "nightly": report.get("nightly")}), end="")
    else:
        print(render_night(report, page, rankers=args.ranker, cutoffs=args.cutoff,
                           measures=args.measure))
    return 0


def run(args: argparse.Namespace) -> int:
    storage = place(args, args.storage)
    if args.night:
        return run_night(args, storage)
    trend = trend_rows(storage, args.ranker, args.cutoff, args.spec_id, args.measure)
    alerts = alerts_of(storage)
    if args.json:
        rows = [{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}
                for row in trend.to_dicts()]
        print(json_text({"trend": rows, "alerts": alerts, "undelivered": undelivered(alerts),
                         "not_evaluated": not_evaluated(storage, args.spec_id)}), end="")
    else:
        print(render_trend_table(trend, alerts)
              + render_not_evaluated(not_evaluated(storage, args.spec_id)))
    return 0
