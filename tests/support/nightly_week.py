"""The example week through the watch, without Dagster: the inputs land one at a time; after
each, every new pool x version is evaluated (backfills included), compared with its previous
night, recorded in the history and, when due, alerted.

The week is evaluated once per version of the code (``tests.support.cache``) and each caller
gets its own copy of its folder, which it may change.
"""

from __future__ import annotations

import pickle
import shutil
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
from evaluation_pipeline.orchestration.example_week import generator
from evaluation_pipeline.spec import EvaluationSpec
from evaluation_pipeline.stats.family import Family
from tests.support.cache import built_once

SPEC = EvaluationSpec(cutoffs=(5, 10))
SETTINGS = WatchSettings(n_bootstrap=300)
# The week's outcome beside its files, for the callers after the first.
OUTCOME = "outcome.pickle"
ALERTS = Path("history") / "alerts.jsonl"


def href(pool: str, version: str, spec_id: str) -> str:
    return f"../reports/{pool}/{version}/{spec_id}/report.html"


def run_week(root: Path, spec: EvaluationSpec = SPEC) -> dict:
    """The week landed and evaluated in ``root`` (its generated inputs, the landing and the
    alert log) under ``spec``; returns what a test inspects."""
    name = "nightly-week" if spec == SPEC else f"nightly-week-{spec.spec_id}"
    built = built_once(name, lambda folder: _evaluate_week(folder, spec))
    shutil.copytree(built, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns(OUTCOME))
    gen = generator()  # first: its module is where any of its objects in the outcome live
    outcome = pickle.loads((built / OUTCOME).read_bytes())
    return outcome | {"gen": gen, "alerts_file": root / ALERTS}


def _evaluate_week(root: Path, spec: EvaluationSpec = SPEC) -> None:
    outcome = _land_and_evaluate(root, spec)
    (root / OUTCOME).write_bytes(pickle.dumps(outcome))


def _land_and_evaluate(root: Path, spec: EvaluationSpec = SPEC) -> dict:
    """Land the week and evaluate it; what a test inspects, but for the generator and the
    alert log's path, which belong to the caller's copy."""
    gen = generator()
    gen.generate_nightly(root)
    nightly_dir, landing = root / gen.NIGHTLY_DIR, root / "landing"
    queries = read_queries(nightly_dir / "queries.csv")
    clock = datetime(2026, 12, 1, tzinfo=UTC)
    published, ready, per_query, history = {}, {}, {}, None
    evaluated, sections, alerts_file = [], {}, root / ALERTS
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
                rows, _ = evaluate(grades, read_pool(landing / "pools" / pool, pool=pool), spec)
                per_query[(pool, version)] = rows
                previous = previous_night(pool, ready)
                step = watch_evaluation(
                    compared_frames(per_query.get((previous, version)), rows, SETTINGS,
                                    Family.of(spec)),
                    candidate_pool=pool,
                    judgment_version=version, spec_id=spec.spec_id, ready_at=ready,
                    published_at=published, history=history, now=clock.isoformat(),
                    settings=SETTINGS)
                aggregates = aggregate_with_intervals(rows, queries, n_bootstrap=300)
                history = record_evaluation(history, aggregates, step,
                                            evaluated_at=clock.isoformat(),
                                            headline_measures=spec.headline_measures)
                notify(alerts_file, step.section, candidate_pool=pool, spec_id=spec.spec_id,
                       report=href(pool, version, spec.spec_id), newest=step.newest,
                       headline=step.headline, settings=AlertSettings())
                evaluated.append((pool, version))
                sections[(pool, version)] = step.section
    # A rerun of the newest night's headline evaluation: replaces its rows, alerts nothing.
    pool, version = gen.NIGHTLY_POOLS[-1], gen.JUDGMENT_VERSION_2
    step = watch_evaluation(
        compared_frames(per_query[(gen.NIGHTLY_POOLS[-2], version)], per_query[(pool, version)],
                        SETTINGS, Family.of(spec)),
        candidate_pool=pool, judgment_version=version, spec_id=spec.spec_id, ready_at=ready,
        published_at=published, history=history, now=clock.isoformat(), settings=SETTINGS)
    return {"history": history, "evaluated": evaluated, "sections": sections,
            "alerts": read_alerts(alerts_file), "rerun": step, "ready": ready,
            "per_query": per_query}
