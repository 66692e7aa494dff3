"""``ndcg-eval history STORAGE [--ranker R] [--cutoff K] [--json]``: the nightly trend.

One line per night and ranker: the night's headline evaluation (its NDCG and interval), the
comparison with the previous night (difference, Holm-adjusted p, verdict) and, on the night
the headline judgment version changed, the attribution. Then every alert raised.
"""

from __future__ import annotations

import argparse

import polars as pl

from evaluation_pipeline.cli.options import place
from evaluation_pipeline.io import leftovers
from evaluation_pipeline.io.atomic import json_text
from evaluation_pipeline.io.datasets import read_dataset
from evaluation_pipeline.io.locations import Location, is_remote, location
from evaluation_pipeline.io.storage import ALERTS_FILE, alerts_file, history_file
from evaluation_pipeline.nightly.alerts import read_alerts
from evaluation_pipeline.nightly.history import headline_trend
from evaluation_pipeline.report.format import interval, number
from evaluation_pipeline.report.tables import aligned
from schemas.errors import EvaluationError

# The columns a trend line shows, in order (the JSON output has them all).
TREND_COLUMNS = (
    "candidate_pool", "judgment_version", "ranker", "cutoff", "ndcg", "ndcg_low", "ndcg_high",
    "mean_candidate_recall", "previous_pool", "mean_diff", "p_adjusted", "verdict",
    "from_judgments", "from_pool",
)


class HistoryError(EvaluationError):
    """No history where one was asked for."""



def trend_rows(storage: Location | str, rankers: list[str] | None = None,
               cutoffs: list[int] | None = None, spec_id: str | None = None) -> pl.DataFrame:
    path = location(storage).joinpath(*history_file())
    if not path.exists():
        raise HistoryError(f"no evaluation history at {path}: the pipeline writes it after "
                           "each evaluation")
    history = read_dataset(path)
    trend = headline_trend(history, spec_id)
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
            r["candidate_pool"], r["judgment_version"], r["ranker"], r["cutoff"],
            number(r["ndcg"], missing=""), interval([r["ndcg_low"], r["ndcg_high"]]),
            number(r["mean_candidate_recall"], 3, missing=""),
            number(r["mean_diff"], signed=True, missing=""),
            number(r["p_adjusted"], missing=""),
            (r["verdict"] or "").replace("_", " ") or "first night",
            number(r["from_judgments"], signed=True, missing=""),
            number(r["from_pool"], signed=True, missing=""),
        ])
    lines = [aligned(["night", "judgments", "ranker", "K", "NDCG", "interval", "recall",
                    "vs prev", "p (Holm)", "verdict", "from judg.", "from pool"], rows, left=3)]
    lines.append("")
    if not alerts:
        lines.append("alerts: none")
    for alert in alerts:
        delivery = alert["delivery"]
        state = ("delivered" if delivery["delivered"] else
                 f"not delivered ({delivery['error']})")
        lines += [f"alert {alert['alerted_at']} for {alert['key']}, {state}:",
                  *(f"  {line}" for line in alert["payload"]["text"].splitlines())]
    return "\n".join(lines)


def alerts_of(storage: Location) -> list[dict]:
    """The alerts recorded in the storage; on object storage read from a local copy."""
    alerts = storage.joinpath(*alerts_file())
    if not is_remote(alerts):
        return read_alerts(alerts)
    with leftovers.scratch_folder("ndcg-eval-alerts-") as folder:
        copy = folder / ALERTS_FILE
        if alerts.exists():
            alerts.fs.get_file(alerts.path, str(copy))
        return read_alerts(copy)


def run(args: argparse.Namespace) -> int:
    storage = place(args, args.storage)
    trend = trend_rows(storage, args.ranker, args.cutoff, args.spec_id)
    alerts = alerts_of(storage)
    if args.json:
        rows = [{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}
                for row in trend.to_dicts()]
        print(json_text({"trend": rows, "alerts": alerts}), end="")
    else:
        print(render_trend_table(trend, alerts))
    return 0
