"""Jobs: what one run materializes. Selections name assets, checks come along, and partitions
follow from the selected assets."""

from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple

import dagster as dg

from evaluation_pipeline.orchestration.assets import (
    EVALUATION_GROUP,
    HISTORY_ASSET,
    REPORT_ASSET,
)
from evaluation_pipeline.orchestration.partitions import DEFAULT, Naming

# What dg.define_asset_job returns: a job resolved against the Definitions that hold it.
# Dagster does not export its class, so it is not named here.
AssetJob = Any


class Jobs(NamedTuple):
    ingest_judgments: AssetJob
    ingest_pool: AssetJob
    ingest_queries: AssetJob
    ingest_documents: AssetJob
    evaluation: AssetJob


def evaluation_selection(naming: Naming = DEFAULT) -> dg.AssetSelection:
    """The evaluation assets of the instance ``naming`` names. The project's own code location
    keeps the evaluation group, the selection its automation sensor has always recorded; a
    named instance selects its assets by key, since a group may hold another instance's, or
    every asset of this one (``group_name``)."""
    if naming == DEFAULT:
        return dg.AssetSelection.groups(EVALUATION_GROUP)
    return dg.AssetSelection.assets(*(naming.key(name) for name in
                                      ("query_scores", REPORT_ASSET, HISTORY_ASSET)))


# One set of job objects per naming: the sensors and the schedule that request a job, and
# the Definitions that hold it, hold the same object.
@cache
def build_jobs(naming: Naming = DEFAULT) -> Jobs:
    """The jobs of the instance ``naming`` names."""
    return Jobs(
        dg.define_asset_job(
            naming.name("ingest_judgments"),
            selection=dg.AssetSelection.assets(naming.key("judgments")),
            description="Validate and publish one judgment version, then check it.",
        ),
        dg.define_asset_job(
            naming.name("ingest_candidate_pool"),
            selection=dg.AssetSelection.assets(naming.key("candidate_pools")),
            description="Validate and publish one candidate pool, then check it.",
        ),
        dg.define_asset_job(
            naming.name("ingest_queries"),
            selection=dg.AssetSelection.assets(naming.key("queries")),
            description="Validate and publish the queries table (weights and slices).",
        ),
        dg.define_asset_job(
            naming.name("ingest_documents"),
            selection=dg.AssetSelection.assets(naming.key("documents")),
            description="Validate and publish the documents table the judge reads.",
        ),
        dg.define_asset_job(
            naming.name("evaluate"),
            selection=evaluation_selection(naming),
            description="Score one pool against one judgment version and write the report.",
        ),
    )


# The project's own code location's (no prefix).
(ingest_judgments_job, ingest_pool_job, ingest_queries_job, ingest_documents_job,
 evaluation_job) = build_jobs(DEFAULT)
jobs = [ingest_judgments_job, ingest_pool_job, ingest_queries_job, ingest_documents_job,
        evaluation_job]
