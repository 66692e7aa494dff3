"""A report that scores its previous night first (a night whose scores are missing) does it
within the memory budget configured for the pipeline, as the scoring asset does."""

from __future__ import annotations

import dagster as dg

from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.orchestration import assets
from evaluation_pipeline.orchestration.partitions import evaluation_key
from evaluation_pipeline.orchestration.resources import MemoryBudget
from tests.support.temporary_pipeline import (
    POOL_1,
    POOL_2,
    VERSION_1,
    make_pipeline,
    temporary_instance,
)


def test_a_previous_night_scored_by_the_report_keeps_the_configured_budget(tmp_path,
                                                                           monkeypatch):
    with temporary_instance(tmp_path / "dagster_home") as instance:
        env = make_pipeline(tmp_path, instance, memory=MemoryBudget(memory_limit="1500MB"))
        env.land_version(VERSION_1)
        env.land_pool(POOL_1)
        env.land_pool(POOL_2)
        assert all(o.success for o in env.runner.run_until_quiet())
        first_night = (env.storage / "scores" / POOL_1 / VERSION_1 / env.spec_id()
                       / "per_query.parquet")
        first_night.unlink()
        budgets: list[tuple[str, Budget | None]] = []
        real = assets.score_evaluation

        def recorded(storage, scoring, pool, version, spec, budget=None, **options):
            budgets.append((pool, budget))
            return real(storage, scoring, pool, version, spec, budget, **options)

        monkeypatch.setattr(assets, "score_evaluation", recorded)
        outcome = env.runner.execute("evaluate", dg.RunRequest(
            partition_key=evaluation_key(POOL_2, VERSION_1)))
        assert outcome.success
        assert first_night.exists()
        configured = Budget.of("1500MB").memory_limit
        assert [(pool, budget.memory_limit) for pool, budget in budgets] == [
            (POOL_2, configured), (POOL_1, configured)]
