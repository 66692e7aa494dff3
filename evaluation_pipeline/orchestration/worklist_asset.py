"""``judging_worklist``: per evaluation (pool x version), the holes to judge next, in the order
of contract section 3, rule 8 (``analysis.worklist``), as ``ndcg-eval holes --out`` writes
them: ``worklists/<pool>/<version>/<spec_id>/worklist.csv``, written at once.

Built the way ``assets.build_evaluation_assets`` builds the scoring asset: the same partitions,
storage resource and code version (project version and spec_id), after the evaluation's
``query_scores``. Its inputs are the published judgment version, pool and queries table the
scores were computed from.
"""

import dagster as dg
import polars as pl

from evaluation_pipeline.analysis.worklist import headline_cutoff, narrowed_measures, worklist
from evaluation_pipeline.io.storage import (
    judgments_file,
    pool_file,
    queries_file,
    worklist_file,
)
from evaluation_pipeline.orchestration.assets import evaluation_code_version
from evaluation_pipeline.orchestration.partitions import (
    DEFAULT,
    Naming,
    evaluation_partitions_of,
    split_evaluation_key,
)
from evaluation_pipeline.orchestration.resources import EvaluationStorage
from evaluation_pipeline.orchestration.scoring import read_published
from evaluation_pipeline.report import tables
from evaluation_pipeline.spec import EvaluationSpec

WORKLIST_ASSET = "judging_worklist"
WORKLIST_GROUP = "judging"
# Holes shown in the materialization's metadata; the file has them all.
SHOWN = 10


def build_worklist_asset(spec: EvaluationSpec, naming: Naming = DEFAULT) -> dg.AssetsDefinition:
    """``judging_worklist`` under ``spec``, of the instance ``naming`` names (its key prefix,
    partitions, group and storage resource).

    Materialized on demand (the UI, a backfill of its partitions, or a schedule of one's own):
    it is in no job the sensors run and has no automation, since its what-if scorings cost
    more than the evaluation it follows; its own group keeps it out of ``evaluate``."""
    storage_key = naming.name("storage")

    @dg.asset(
        name=WORKLIST_ASSET,
        key_prefix=list(naming.prefix) or None,
        partitions_def=evaluation_partitions_of(naming),
        group_name=naming.group(WORKLIST_GROUP),
        required_resource_keys={storage_key},
        kinds={"polars", "csv"},
        code_version=evaluation_code_version(spec),
        deps=[naming.key("query_scores"), naming.key("queries")],
        metadata={"spec_id": spec.spec_id, "cutoff": headline_cutoff(spec),
                  "narrowed": ", ".join(narrowed_measures(spec))},
        description="The unknown and unjudged documents of an evaluation to judge next, in the "
        "order their grades are expected to narrow the bounds of each ranker's headline "
        "measures (by default nDCG at the spec's largest cutoff), weighted by the queries' "
        "traffic (contract section 3, rule 8); with its grade column filled in, the CSV file "
        "is a judgment version to land.",
    )
    def judging_worklist(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        storage: EvaluationStorage = getattr(context.resources, storage_key)
        pool, version = split_evaluation_key(context.partition_key)
        judgments, grades_manifest = read_published(storage, judgments_file(version),
                                                     f"judgment version {version!r}")
        pool_rows, pool_manifest = read_published(storage, pool_file(pool),
                                                  f"candidate pool {pool!r}")
        weights, _ = read_published(storage, queries_file(), "the queries table")
        listed = worklist(judgments, pool_rows, spec, weights)
        # polars writes to the storage's handle: the CSV text is not held beside the frame.
        path = storage.write(worklist_file(pool, version, spec.spec_id), listed.write_csv)
        context.log.info(f"{listed.height} holes of {pool} x {version} listed in {path}")
        return dg.MaterializeResult(metadata={
            "dagster/row_count": listed.height,
            "queries_with_holes": listed["query_id"].n_unique(),
            "expected_narrowing_of_all": float(listed["expected_narrowing"].sum()),
            "first_holes": dg.MetadataValue.md(_markdown(listed.head(SHOWN))),
            "worklist": dg.MetadataValue.path(path),
            # What the widths and narrowings are of (contract sections 4 and 5).
            "judgment_version": version,
            "judgments_sha256": grades_manifest["sha256"],
            "candidate_pool": pool,
            "pool_sha256": pool_manifest["sha256"],
            "spec_id": spec.spec_id,
            "conventions": spec.describe(),
        })

    return judging_worklist


def _markdown(listed: pl.DataFrame) -> str:
    if listed.height == 0:
        return "no holes: every candidate of every judged query is graded"
    rows = [(row["priority"], row["query_id"], row["doc_id"], row["rankers"] or "",
             row["best_position"] or "", f"{row['bound_width']:.3f}",
             f"{row['expected_narrowing']:.5f}") for row in listed.iter_rows(named=True)]
    return "\n".join(tables.markdown(
        ["priority", "query_id", "doc_id", "rankers (top K)", "best", "width", "expected"],
        rows, [False, True, True, True, False, False, False]))
