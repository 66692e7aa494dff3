"""The backfill window: a judgment version published after 20 nights is scored against the
newest 14 of them; the other 6 are listed by `make run`'s account and scored on demand when the
window is widened (NDCG_EVAL_BACKFILL_NIGHTS=0), as a Dagster backfill of their partitions
would."""

from __future__ import annotations

import os
import time
from pathlib import Path

import polars as pl
import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.cli import main as cli
from evaluation_pipeline.definitions import pipeline_spec
from evaluation_pipeline.orchestration.selection import (
    describe_outside_window,
    expected_evaluations,
)
from tests.support.temporary_pipeline import (
    LANDING,
    POOL_1,
    VERSION_1,
    make_pipeline,
    temporary_instance,
)

NIGHTS = 20
POOLS = [f"pool-2026-10-{day:02d}" for day in range(1, NIGHTS + 1)]


@pytest.fixture
def pipeline(tmp_path: Path, monkeypatch):
    monkeypatch.delenv(settings.BACKFILL_NIGHTS.name, raising=False)
    with temporary_instance(tmp_path / "dagster_home") as instance:
        env = make_pipeline(tmp_path, instance)
        env.runner.backoff_seconds = 0.0
        start = time.time() - 3 * 86400
        for night, pool in enumerate(POOLS):
            folder = _land(env, pool)
            moment = start + night * 600  # ten minutes apart, in landing order
            os.utime(folder / "_READY", (moment, moment))
        yield env


def _land(pipeline, pool: str) -> Path:
    """The example pool landed under another name (its rows name their pool)."""
    folder = pipeline.landing / "pools" / pool
    folder.mkdir()
    for run in sorted((LANDING / "pools" / POOL_1).glob("*.parquet")):
        rows = pl.read_parquet(run)
        if "candidate_pool" in rows.columns:
            rows = rows.with_columns(pl.lit(pool).alias("candidate_pool"))
        rows.write_parquet(folder / run.name)
    (folder / "_READY").touch()
    return folder


def _states(pipeline):
    resources = pipeline.defs.resources
    return expected_evaluations(pipeline.instance, resources["landing"], resources["storage"],
                                resources["policy"], pipeline_spec())


def test_a_new_version_is_scored_against_the_newest_14_nights_and_the_rest_on_demand(
        pipeline, monkeypatch, capsys):
    # The 20 pools, the queries and the documents tables; no version.
    published = pipeline.runner.run_until_quiet()
    assert all(o.success for o in published) and len(published) == NIGHTS + 2
    pipeline.land_version(VERSION_1)
    outcomes = pipeline.runner.run_until_quiet()
    evaluated = sorted(o.partition for o in outcomes if o.job == "evaluate")
    assert all(o.success for o in outcomes), [o.error for o in outcomes if not o.success]
    assert evaluated == [f"{pool}|{VERSION_1}" for pool in POOLS[-14:]]
    states = _states(pipeline)
    assert len(states) == 14 and all(state.whole for state in states)
    resources = pipeline.defs.resources
    account = describe_outside_window(pipeline.instance, resources["landing"],
                                      resources["storage"], resources["policy"])
    assert "older than the backfill window of 14 nights" in account
    assert f"  {VERSION_1}: 6 pool(s): {', '.join(POOLS[:6])}" in account
    assert cli.main(["history", str(pipeline.storage)]) == 0
    printed = capsys.readouterr().out
    assert "NOT EVALUATED" in printed
    assert f"  {VERSION_1}: 6 pool(s): {', '.join(POOLS[:6])}" in printed

    # On demand: the window widened, the same runner scores the other six, and only them.
    monkeypatch.setenv(settings.BACKFILL_NIGHTS.name, "0")
    outcomes = pipeline.runner.run_until_quiet()
    assert sorted(o.partition for o in outcomes if o.job == "evaluate") == [
        f"{pool}|{VERSION_1}" for pool in POOLS[:6]]
    assert all(o.success for o in outcomes)
    assert len(_states(pipeline)) == NIGHTS
    assert describe_outside_window(pipeline.instance, resources["landing"],
                                   resources["storage"], resources["policy"]) == ""
    capsys.readouterr()
    cli.main(["history", str(pipeline.storage)])
    assert "NOT EVALUATED" not in capsys.readouterr().out


def test_every_night_after_a_version_is_scored_whatever_the_window(pipeline, monkeypatch):
    monkeypatch.setenv(settings.BACKFILL_NIGHTS.name, "2")
    pipeline.land_version(VERSION_1)
    pipeline.runner.run_until_quiet()
    assert len(_states(pipeline)) == 2  # the newest two nights landed before it
    later = "pool-2026-10-31"
    _land(pipeline, later)
    outcomes = pipeline.runner.run_until_quiet()
    assert [o.partition for o in outcomes if o.job == "evaluate"] == [f"{later}|{VERSION_1}"]
    assert len(_states(pipeline)) == 3
