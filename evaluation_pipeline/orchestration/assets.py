"""Assets: read, validate, call the core, write, attach metadata. Nothing else happens here.

Ingest assets (``judgments``, ``candidate_pools``, ``queries``) publish validated inputs to the
storage once per name and return a data version equal to their content SHA-256. Evaluation
assets (``query_scores``, ``evaluation_report``) carry a code version derived from the project
version and the spec_id, so changing the spec marks them stale.
"""

from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import polars as pl

from evaluation_pipeline import __version__
from evaluation_pipeline.core import quality
from evaluation_pipeline.core.bounded_ingest import (
    count_candidate_set_disagreements,
    publish_judgments,
    publish_pool,
)
from evaluation_pipeline.core.evaluation import Lineage
from evaluation_pipeline.io.readers import read_queries
from evaluation_pipeline.io.storage import (
    HTML_FILE,
    JUDGMENTS_FILE,
    POOL_FILE,
    QUERIES_FOLDER,
    REPORT_FILE,
    Place,
    judgments_file,
    judgments_folder,
    manifest_file,
    pool_file,
    pool_folder,
    queries_file,
    report_folder,
    scores_file,
)
from evaluation_pipeline.orchestration.memory import MemoryBudget
from evaluation_pipeline.orchestration.partitions import (
    POOL_DIMENSION,
    VERSION_DIMENSION,
    candidate_pool_partitions,
    evaluation_partitions,
    judgment_version_partitions,
    split_evaluation_key,
)
from evaluation_pipeline.orchestration.resources import (
    EvaluationStorage,
    LandingZone,
    ScoringEngine,
)
from evaluation_pipeline.orchestration.scoring import score_published
from evaluation_pipeline.report import headline_markdown, write_report
from evaluation_pipeline.spec import EvaluationSpec
from schemas.columns import UNKNOWN
from schemas.names import check_safe_name

INGEST_GROUP = "ingest"
EVALUATION_GROUP = "evaluation"
# The concurrency pool of scoring: its limit (dagster.yaml `concurrency: pools:`, or `dagster
# instance concurrency set`) caps how many pool x version evaluations score at once, across runs.
SCORING_POOL = "ndcg_scoring"


def evaluation_code_version(spec: EvaluationSpec) -> str:
    return f"{__version__}+spec.{spec.spec_id}"


def _published_at() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _table(frame: pl.DataFrame) -> dg.TableMetadataValue:
    """A small frame as table metadata: its column names and types, and its rows."""
    schema = dg.TableSchema(columns=[
        dg.TableColumn(name, "int" if dtype.is_integer() else "float" if dtype.is_float()
                       else "string")
        for name, dtype in frame.schema.items()
    ])
    return dg.MetadataValue.table([dg.TableRecord(row) for row in frame.to_dicts()], schema)


# -- ingest -----------------------------------------------------------------------------------


@dg.asset(
    partitions_def=judgment_version_partitions,
    group_name=INGEST_GROUP,
    kinds={"polars", "parquet"},
    description="A judgment version: validated grades, published once under its name.",
)
def judgments(
    context: dg.AssetExecutionContext, landing: LandingZone, storage: EvaluationStorage,
    memory: MemoryBudget,
) -> dg.MaterializeResult:
    version = check_safe_name(context.partition_key, "judgment version")
    source = landing.judgment_file(version)
    budget = memory.budget(storage)
    with budget.scratch("ndcg-eval-publish-") as tmp:
        # Validated, sorted into key order (the streaming engine then reads it without sorting
        # it first) and hashed in bounded memory, then moved into the storage.
        published = publish_judgments(source, Path(tmp) / JUDGMENTS_FILE, version=version,
                                      budget=budget, log=context.log.info)
        sha, rows, distribution = (published.sha256, published.rows,
                                   published.grade_distribution)
        manifest = {
            "judgment_version": version,
            "sha256": sha,
            "rows": rows,
            "grade_distribution": distribution,
            "source": str(source),
            "published_at": _published_at(),
        }
        written = storage.publish(judgments_folder(version), JUDGMENTS_FILE, published.path,
                                  manifest, f"judgment version {version!r}")
    context.log.info(f"judgment version {version}: " + ("published" if written else
                     "already published with the same content; nothing written"))
    return dg.MaterializeResult(
        metadata={
            "judgment_version": version,
            "sha256": sha,
            "dagster/row_count": rows,
            "grade_distribution": dg.MetadataValue.json(distribution),
            "unknown_count": distribution.get(UNKNOWN, 0),
            "source": dg.MetadataValue.path(str(source)),
            "published": dg.MetadataValue.path(str(storage.path(*judgments_file(version)))),
            "newly_written": written,
        },
        data_version=dg.DataVersion(sha),
    )


@dg.asset(
    partitions_def=candidate_pool_partitions,
    group_name=INGEST_GROUP,
    kinds={"polars", "parquet"},
    description="A candidate pool: every ranker's scored candidates, published once.",
)
def candidate_pools(
    context: dg.AssetExecutionContext, landing: LandingZone, storage: EvaluationStorage,
    memory: MemoryBudget,
) -> dg.MaterializeResult:
    pool = check_safe_name(context.partition_key, "candidate pool")
    folder = landing.pool_folder(pool)
    budget = memory.budget(storage)
    with budget.scratch("ndcg-eval-publish-") as tmp:
        # Every ranker file validated, sorted by (ranker, query_id, doc_id) and hashed in
        # bounded memory; the candidate sets compared out of core; then moved into the storage.
        published = publish_pool(folder, Path(tmp) / POOL_FILE, pool=pool, budget=budget,
                                 log=context.log.info)
        sha, rows = published.sha256, published.rows
        differing = count_candidate_set_disagreements(published.path, budget)
        manifest = {
            "candidate_pool": pool,
            "sha256": sha,
            "rows": rows,
            "rankers": published.rankers,
            "shared_candidate_sets": differing == 0,
            "queries_with_different_candidate_sets": differing,
            "source": str(folder),
            "published_at": _published_at(),
        }
        written = storage.publish(pool_folder(pool), POOL_FILE, published.path, manifest,
                                  f"candidate pool {pool!r}")
    context.log.info(f"candidate pool {pool}: " + ("published" if written else
                     "already published with the same content; nothing written"))
    return dg.MaterializeResult(
        metadata={
            "candidate_pool": pool,
            "sha256": sha,
            "dagster/row_count": rows,
            "rankers": _table(pl.DataFrame(published.rankers)),
            "shared_candidate_sets": differing == 0,
            "queries_with_different_candidate_sets": differing,
            "source": dg.MetadataValue.path(str(folder)),
            "published": dg.MetadataValue.path(str(storage.path(*pool_file(pool)))),
            "newly_written": written,
        },
        data_version=dg.DataVersion(sha),
    )


@dg.asset(
    group_name=INGEST_GROUP,
    kinds={"polars", "parquet"},
    description="Query weights (traffic) and slice columns.",
)
def queries(
    context: dg.AssetExecutionContext, landing: LandingZone, storage: EvaluationStorage
) -> dg.MaterializeResult:
    source = landing.queries_file()
    frame = read_queries(source)
    sha = quality.queries_sha256(frame)
    # Unlike versions and pools, the queries table is replaced when it changes: weights are
    # traffic, which moves, and every report records the hash it used.
    storage.write_parquet(frame, *queries_file())
    storage.write_json({"sha256": sha, "rows": frame.height, "source": str(source),
                        "published_at": _published_at()}, *manifest_file(QUERIES_FOLDER))
    context.log.info(f"queries: {frame.height} rows, sha256 {sha}")
    return dg.MaterializeResult(
        metadata={
            "sha256": sha,
            "dagster/row_count": frame.height,
            "columns": dg.MetadataValue.json(frame.columns),
            "source": dg.MetadataValue.path(str(source)),
        },
        data_version=dg.DataVersion(sha),
    )


# -- evaluation -------------------------------------------------------------------------------


def _published_manifest(storage: EvaluationStorage, folder: Place, what: str) -> dict:
    manifest = storage.manifest(*folder)
    if manifest is None:
        raise dg.Failure(f"{what} is not published yet in {storage.path(*folder)}; "
                         "materialize its ingest partition (or land it) first")
    return manifest


def _read_published(storage: EvaluationStorage, place: Place,
                    what: str) -> tuple[pl.DataFrame, dict]:
    """A published file and the manifest beside it."""
    manifest = _published_manifest(storage, place[:-1], what)
    return storage.read_parquet(*place), manifest


def build_evaluation_assets(spec: EvaluationSpec) -> list[dg.AssetsDefinition]:
    """``query_scores`` and ``evaluation_report`` under ``spec`` (its spec_id is in the code
    version, so a changed spec marks every partition stale)."""
    code_version = evaluation_code_version(spec)
    # Follow new upstream partitions, but never past a failed blocking check of an input.
    automation = (
        dg.AutomationCondition.eager() & dg.AutomationCondition.all_deps_blocking_checks_passed()
    )

    @dg.asset(
        partitions_def=evaluation_partitions,
        group_name=EVALUATION_GROUP,
        kinds={"polars", "parquet"},
        code_version=code_version,
        automation_condition=automation,
        deps=[
            dg.AssetDep(judgments, partition_mapping=dg.MultiToSingleDimensionPartitionMapping(
                partition_dimension_name=VERSION_DIMENSION)),
            dg.AssetDep(candidate_pools, partition_mapping=dg.MultiToSingleDimensionPartitionMapping(
                partition_dimension_name=POOL_DIMENSION)),
        ],
        metadata={"spec": dg.MetadataValue.json(spec.to_dict()), "spec_id": spec.spec_id},
        description="Per-query NDCG for every ranker of a pool against a judgment version.",
        pool=SCORING_POOL,
    )
    def query_scores(
        context: dg.AssetExecutionContext, storage: EvaluationStorage, scoring: ScoringEngine,
        memory: MemoryBudget,
    ) -> dg.MaterializeResult:
        pool, version = split_evaluation_key(context.partition_key)
        scores = scores_file(pool, version, spec.spec_id)
        grades_manifest = _published_manifest(
            storage, judgments_folder(version), f"judgment version {version!r}")
        pool_manifest = _published_manifest(
            storage, pool_folder(pool), f"candidate pool {pool!r}")
        # The engine reads the published files itself and writes the rows (engines.score_files,
        # as ndcg-eval score does).
        result = score_published(storage, scoring, memory.budget(storage),
                                 judgments_file(version), pool_file(pool), scores, spec)
        lineage, path = result.lineage, result.per_query_path
        context.log.info(f"scored {pool} x {version} with the {result.engine} engine")
        # Only what the metadata counts: the rows stay on disk, as the engine left them.
        per_query = storage.read_per_query(*scores, columns=["status"])
        # The hashes recomputed from the stored files must be the ones published.
        for name, computed, published in (
            ("judgments", lineage.judgments_sha256, grades_manifest["sha256"]),
            ("pool", lineage.pool_sha256, pool_manifest["sha256"]),
        ):
            if computed != published:
                raise dg.Failure(f"stored {name} content has sha256 {computed}, but "
                                 f"{published} was published: the storage was altered")
        statuses = per_query.group_by("status").len().sort("status")
        return dg.MaterializeResult(
            metadata={
                "dagster/row_count": per_query.height,
                "status_counts": dg.MetadataValue.json(
                    dict(zip(statuses["status"].to_list(), statuses["len"].to_list()))),
                "lineage": dg.MetadataValue.json(asdict(lineage)),
                "spec_id": spec.spec_id,
                "engine": result.engine,
                "per_query": dg.MetadataValue.path(path),
            },
            data_version=dg.DataVersion(
                f"{lineage.judgments_sha256[:16]}-{lineage.pool_sha256[:16]}-{spec.spec_id}"),
        )

    @dg.asset(
        partitions_def=evaluation_partitions,
        group_name=EVALUATION_GROUP,
        kinds={"polars", "html"},
        code_version=code_version,
        automation_condition=automation,
        deps=[query_scores, queries],
        metadata={"spec_id": spec.spec_id},
        description="Aggregates, intervals, ranker comparison and the report, with lineage.",
    )
    def evaluation_report(
        context: dg.AssetExecutionContext, storage: EvaluationStorage
    ) -> dg.MaterializeResult:
        pool, version = split_evaluation_key(context.partition_key)
        scores = scores_file(pool, version, spec.spec_id)
        if not storage.exists(*scores):
            raise dg.Failure(f"no scores at {storage.path(*scores)}: materialize query_scores "
                             f"for {pool} x {version} first")
        per_query = storage.read_parquet(*scores)
        weights, queries_manifest = _read_published(
            storage, queries_file(), "the queries table")
        lineage = Lineage.from_rows(per_query, str(storage.path(*scores)))
        with storage.staging() as staged:
            report = write_report(staged, per_query, spec, lineage, weights)
            written = storage.put_tree(staged, *report_folder(pool, version, spec.spec_id))
        return dg.MaterializeResult(
            metadata={
                "headline": dg.MetadataValue.md(headline_markdown(report)),
                "result": dg.MetadataValue.md("\n\n".join(report["headline"])),
                "lineage": dg.MetadataValue.json(asdict(lineage)),
                "queries_sha256": queries_manifest["sha256"],
                "report": dg.MetadataValue.path(written[REPORT_FILE]),
                "report_html": dg.MetadataValue.path(written[HTML_FILE]),
            },
        )

    return [query_scores, evaluation_report]
