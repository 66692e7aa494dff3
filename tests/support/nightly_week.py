"""The example week through the watch, without Dagster: the inputs land one at a time; after
each, every new pool x version is evaluated (backfills included), compared with its previous
night, recorded in the history and, when due, alerted."""

from __future__ import annotations

import importlib.util
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from evaluation_pipeline.aggregation.aggregate_table import aggregate_with_intervals
from evaluation_pipeline.evaluation import evaluate
from evaluation_pipeline.io.readers import read_judgments, read_pool, read_queries
from evaluation_pipeline.nightly.alerts import AlertSettings, notify, read_alerts
from evaluation_pipeline.nightly.verdicts import previous_night
from evaluation_pipeline.nightly.watch import (
    WatchSettings,
    compared_frames,
    record_evaluation,
    watch_evaluation,
)
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.paths import REPO
SPEC = EvaluationSpec(cutoffs=(5, 10))
SETTINGS = WatchSettings(n_bootstrap=300)


def generator():
    path = REPO / "examples" / "generate_example_data.py"
    spec = importlib.util.spec_from_file_location("generate_example_data", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def href(pool: str, version: str, spec_id: str) -> str:
    return f"../reports/{pool}/{version}/{spec_id}/report.html"


def run_week(root: Path) -> dict:
    """Land the week and evaluate it; returns what a test inspects."""
    gen = generator()
    gen.generate_nightly(root)
    nightly_dir, landing = root / gen.NIGHTLY_DIR, root / "landing"
    queries = read_queries(nightly_dir / "queries.csv")
    clock = datetime(2026, 12, 1, tzinfo=UTC)
    published, ready, per_query, history = {}, {}, {}, None
    evaluated, sections, alerts_file = [], {}, root / "history" / "alerts.jsonl"
    while (arrival := gen.land_next(nightly_dir, landing)) is not None:
        clock += timedelta(hours=1)
        kind, name = arrival.split("/")
        if kind == "judgments":
            published[name.removesuffix(".csv")] = clock.isoformat()
        else:
            ready[name] = clock.isoformat()
        # Every version x pool not evaluated yet; older nights first, so a backfill's previous
        # night is evaluated before it.
        for pool in sorted(ready, key=lambda p: ready[p]):
            for version in sorted(published, key=lambda v: published[v]):
                if (pool, version) in per_query:
                    continue
                clock += timedelta(minutes=1)
                grades = read_judgments(landing / "judgments" / f"{version}.csv",
                                        version=version)
                rows, _ = evaluate(grades, read_pool(landing / "pools" / pool, pool=pool), SPEC)
                per_query[(pool, version)] = rows
                previous = previous_night(pool, ready)
                step = watch_evaluation(
                    compared_frames(per_query.get((previous, version)), rows, SETTINGS),
                    candidate_pool=pool,
                    judgment_version=version, spec_id=SPEC.spec_id, ready_at=ready,
                    published_at=published, history=history, now=clock.isoformat(),
                    settings=SETTINGS)
                aggregates = aggregate_with_intervals(rows, queries, n_bootstrap=300)
                history = record_evaluation(history, aggregates, step,
                                            evaluated_at=clock.isoformat())
                notify(alerts_file, step.section, candidate_pool=pool, spec_id=SPEC.spec_id,
                       report=href(pool, version, SPEC.spec_id), newest=step.newest,
                       headline=step.headline, settings=AlertSettings())
                evaluated.append((pool, version))
                sections[(pool, version)] = step.section
    # A rerun of the newest night's headline evaluation: replaces its rows, alerts nothing.
    pool, version = gen.NIGHTLY_POOLS[-1], gen.JUDGMENT_VERSION_2
    step = watch_evaluation(
        compared_frames(per_query[(gen.NIGHTLY_POOLS[-2], version)], per_query[(pool, version)],
                        SETTINGS),
        candidate_pool=pool, judgment_version=version, spec_id=SPEC.spec_id, ready_at=ready,
        published_at=published, history=history, now=clock.isoformat(), settings=SETTINGS)
    return {"gen": gen, "history": history, "evaluated": evaluated, "sections": sections,
            "alerts": read_alerts(alerts_file), "rerun": step, "ready": ready,
            "alerts_file": alerts_file, "per_query": per_query}
