"""The one place that assembles the Dagster code location.

Everything that differs between environments arrives here, from arguments or environment
variables: the spec file, the storage base (a folder or an fsspec URL), the landing folder, the
queries table, the check thresholds and the nightly cron.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from evaluation_pipeline.engines import AUTO
from evaluation_pipeline.io.storage import (
    DEFAULT_LANDING,
    DEFAULT_QUERIES,
    DEFAULT_SPEC,
    DEFAULT_STORAGE,
)
from evaluation_pipeline.orchestration.assets import (
    EVALUATION_GROUP,
    build_evaluation_assets,
    candidate_pools,
    judgments,
    queries,
)
from evaluation_pipeline.orchestration.checks import build_evaluation_checks, ingest_checks
from evaluation_pipeline.orchestration.jobs import jobs
from evaluation_pipeline.orchestration.memory import MemoryBudget
from evaluation_pipeline.orchestration.resources import (
    EvaluationStorage,
    LandingZone,
    QualityPolicy,
    ScoringEngine,
)
from evaluation_pipeline.orchestration.schedules import (
    DEFAULT_CRON,
    DEFAULT_TIMEZONE,
    build_nightly_schedule,
)
from evaluation_pipeline.orchestration.sensors import build_evaluation_sensor, ingest_sensors
from evaluation_pipeline.spec import EvaluationSpec, load_spec


def pipeline_spec(spec_path: str | Path | None = None) -> EvaluationSpec:
    """The spec the pipeline evaluates under: ``spec_path``, $NDCG_EVAL_SPEC or the repo's file."""
    return load_spec(spec_path or os.environ.get("NDCG_EVAL_SPEC") or DEFAULT_SPEC)


def build_definitions(
    *,
    spec_path: str | Path | None = None,
    storage_base: str | None = None,
    landing_folder: str | None = None,
    queries_path: str | None = None,
    policy: QualityPolicy | None = None,
    nightly_cron: str | None = None,
    nightly_timezone: str | None = None,
    engine: str | None = None,
) -> dg.Definitions:
    env = os.environ.get
    spec = pipeline_spec(spec_path)
    storage = EvaluationStorage(
        base=storage_base or env("NDCG_EVAL_STORAGE") or str(DEFAULT_STORAGE))
    return dg.Definitions(
        assets=[judgments, candidate_pools, queries, *build_evaluation_assets(spec)],
        asset_checks=[*ingest_checks, *build_evaluation_checks(spec)],
        jobs=jobs,
        sensors=[
            *ingest_sensors,
            build_evaluation_sensor(spec),
            dg.AutomationConditionSensorDefinition(
                "evaluation_automation",
                target=dg.AssetSelection.groups(EVALUATION_GROUP),
                default_status=dg.DefaultSensorStatus.RUNNING,
                description="Scores and reports follow new upstream partitions.",
            ),
        ],
        schedules=[
            build_nightly_schedule(
                spec,
                nightly_cron or env("NDCG_EVAL_NIGHTLY_CRON") or DEFAULT_CRON,
                nightly_timezone or env("NDCG_EVAL_NIGHTLY_TIMEZONE") or DEFAULT_TIMEZONE,
            )
        ],
        resources={
            "storage": storage,
            "landing": LandingZone(
                folder=landing_folder or env("NDCG_EVAL_LANDING") or str(DEFAULT_LANDING),
                queries_path=queries_path or env("NDCG_EVAL_QUERIES") or str(DEFAULT_QUERIES),
            ),
            "policy": policy or QualityPolicy(),
            # auto streams Parquet (the published files are) past a small size.
            "scoring": ScoringEngine(engine=engine or env("NDCG_EVAL_ENGINE") or AUTO,
                                     spark_master=env("NDCG_EVAL_SPARK_MASTER") or None),
            # Unset fields read NDCG_EVAL_MEMORY_LIMIT and NDCG_EVAL_SPILL_DIR when a step runs.
            "memory": MemoryBudget(),
        },
    )


defs = build_definitions()
