"""Jobs: what one run materializes. Selections name groups and assets, checks come along, and
partitions follow from the selected assets."""

from __future__ import annotations

import dagster as dg

from evaluation_pipeline.orchestration.assets import EVALUATION_GROUP

ingest_judgments_job = dg.define_asset_job(
    "ingest_judgments",
    selection=dg.AssetSelection.assets("judgments"),
    description="Validate and publish one judgment version, then check it.",
)
ingest_pool_job = dg.define_asset_job(
    "ingest_candidate_pool",
    selection=dg.AssetSelection.assets("candidate_pools"),
    description="Validate and publish one candidate pool, then check it.",
)
ingest_queries_job = dg.define_asset_job(
    "ingest_queries",
    selection=dg.AssetSelection.assets("queries"),
    description="Validate and publish the queries table (weights and slices).",
)
evaluation_job = dg.define_asset_job(
    "evaluate",
    selection=dg.AssetSelection.groups(EVALUATION_GROUP),
    description="Score one pool against one judgment version and write the report.",
)

jobs = [ingest_judgments_job, ingest_pool_job, ingest_queries_job, evaluation_job]
