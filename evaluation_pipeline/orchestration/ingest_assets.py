"""The ingest assets: read, validate, publish, attach metadata. Nothing else happens here.

``judgments``, ``candidate_pools`` and ``queries`` publish validated inputs to the storage once
per name and return a data version equal to their content SHA-256; ``documents`` (the judge's
documents table) is published as the queries table is.
"""

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import polars as pl

from evaluation_pipeline import settings
from evaluation_pipeline.analysis import quality
from evaluation_pipeline.ingest.verify import candidate_set_disagreements
from evaluation_pipeline.io.atomic import named_in
from evaluation_pipeline.io.readers import read_queries
from evaluation_pipeline.io.storage import (
    DOCUMENTS_FOLDER,
    JUDGMENTS_FILE,
    POOL_FILE,
    QUERIES_FOLDER,
    Place,
    documents_file,
    judgments_file,
    judgments_folder,
    manifest_file,
    pool_file,
    pool_folder,
    queries_file,
)
from evaluation_pipeline.judging.document_reader import read_documents
from evaluation_pipeline.metric.hashing import HASH_VERSION
from evaluation_pipeline.nightly import verdicts as nightly
from evaluation_pipeline.orchestration.partitions import DEFAULT, Naming
from evaluation_pipeline.orchestration.resources import EvaluationStorage
from schemas.columns import UNKNOWN
from schemas.names import check_safe_name

INGEST_GROUP = "ingest"


def utc_now() -> str:
    # Microseconds: publications and evaluations within one second still have an order.
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _table(frame: pl.DataFrame) -> dg.TableMetadataValue:
    """A small frame as table metadata: its column names and types, and its rows."""
    schema = dg.TableSchema(columns=[
        dg.TableColumn(name, "int" if dtype.is_integer() else "float" if dtype.is_float()
                       else "string")
        for name, dtype in frame.schema.items()
    ])
    return dg.MetadataValue.table([dg.TableRecord(row) for row in frame.to_dicts()], schema)


# -- ingest -----------------------------------------------------------------------------------


def build_ingest_assets(naming: Naming = DEFAULT) -> list[dg.AssetsDefinition]:
    """``judgments``, ``candidate_pools``, ``queries`` and ``documents`` of the instance
    ``naming`` names: its asset keys, partitions, group and resource keys."""
    prefix = list(naming.prefix) or None

    @dg.asset(
        key_prefix=prefix,
        partitions_def=naming.judgment_versions,
        group_name=naming.group(INGEST_GROUP),
        required_resource_keys=naming.resource_keys("landing", "storage", "memory", "scoring"),
        kinds={"polars", "parquet"},
        description="A judgment version: validated grades, published once under its name.",
    )
    def judgments(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        landing, storage, memory, scoring = naming.resources(
            context, "landing", "storage", "memory", "scoring")
        version = check_safe_name(context.partition_key, "judgment version")
        source = landing.judgment_file(version)
        budget = memory.budget(storage)
        with (budget.scratch("ndcg-eval-publish-") as tmp,
              named_in(Path(tmp), storage.path(*judgments_folder(version)))):
            # Validated, sorted into key order (the streaming engine then reads it without sorting
            # it first) and hashed in bounded memory, then moved into the storage.
            published = scoring.publish_judgments(source, Path(tmp) / JUDGMENTS_FILE,
                                                  version=version, budget=budget,
                                                  log=context.log.info)
            sha, rows, distribution = (published.sha256, published.rows,
                                       published.grade_distribution)
            manifest = {
                "judgment_version": version,
                "sha256": sha,
                "hash_version": HASH_VERSION,
                "rows": rows,
                "grade_distribution": distribution,
                "source": str(source),
                "published_at": utc_now(),
                # A version with raters names them: its reports add the raters' agreement.
                **({"raters": published.raters} if published.raters else {}),
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
        key_prefix=prefix,
        partitions_def=naming.candidate_pools,
        group_name=naming.group(INGEST_GROUP),
        required_resource_keys=naming.resource_keys("landing", "storage", "memory", "scoring"),
        kinds={"polars", "parquet"},
        description="A candidate pool: every ranker's scored candidates, published once.",
    )
    def candidate_pools(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        landing, storage, memory, scoring = naming.resources(
            context, "landing", "storage", "memory", "scoring")
        pool = check_safe_name(context.partition_key, "candidate pool")
        folder = landing.pool_folder(pool)
        budget = memory.budget(storage)
        with (budget.scratch("ndcg-eval-publish-") as tmp,
              named_in(Path(tmp), storage.path(*pool_folder(pool)))):
            # Every ranker file validated, sorted by (ranker, query_id, doc_id) and hashed in
            # bounded memory; the candidate sets compared out of core; then moved into the storage.
            published = scoring.publish_pool(folder, Path(tmp) / POOL_FILE, pool=pool,
                                             budget=budget, log=context.log.info)
            sha, rows = published.sha256, published.rows
            # Counted while the pool was hashed; an engine that does not count them (Spark's
            # ingest) leaves them to a pass over the published file.
            differing, examples = published.candidate_sets or candidate_set_disagreements(
                published.path, budget)
            manifest = {
                "candidate_pool": pool,
                "sha256": sha,
                "hash_version": HASH_VERSION,
                "rows": rows,
                "rankers": published.rankers,
                "shared_candidate_sets": differing == 0,
                "queries_with_different_candidate_sets": differing,
                "different_candidate_set_examples": examples,
                "source": str(folder),
                # The night of the pool: nights are ordered by the arrival of their READY_MARKER.
                nightly.READY_AT: nightly.ready_at_from_mtime_ns(landing.ready_at_ns(pool)),
                "published_at": utc_now(),
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
        key_prefix=prefix,
        group_name=naming.group(INGEST_GROUP),
        required_resource_keys=naming.resource_keys("landing", "storage"),
        kinds={"polars", "parquet"},
        description="Query weights (traffic) and slice columns.",
    )
    def queries(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        landing, storage = naming.resources(context, "landing", "storage")
        source = landing.queries_file()
        frame = read_queries(source)
        sha = quality.queries_sha256(frame)
        # Unlike versions and pools, the queries table is replaced when it changes: weights are
        # traffic, which moves, and every report records the hash it used.
        metadata = _publish_replaced(context, storage, "queries", frame, sha, source,
                                     QUERIES_FOLDER, queries_file())
        return dg.MaterializeResult(metadata=metadata, data_version=dg.DataVersion(sha))

    @dg.asset(
        key_prefix=prefix,
        group_name=naming.group(INGEST_GROUP),
        required_resource_keys=naming.resource_keys("landing", "storage"),
        kinds={"polars", "parquet"},
        description="The documents table the judge reads (doc_id, title, text): validated and "
        "published under its content hash, replaced when it changes.",
    )
    def documents(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        landing, storage = naming.resources(context, "landing", "storage")
        source = landing.documents_file()
        if source is None:
            raise dg.Failure(f"no documents table is named: set {settings.DOCUMENTS.name} (or "
                             "the component's documents attribute) to the table to publish")
        # Validated before anything is written: a refusal names the file, column, rule and
        # rows, and leaves the published table as it was.
        frame = read_documents(source)
        sha = quality.documents_sha256(frame)
        # Replaced when it changes, as the queries table: a collection's texts are re-extracted
        # and grow, and keeping each content would keep a whole corpus per change. What a judged
        # version was judged against is its hash, which judgments_llm records (its metadata and
        # the gate's record) from the rows it read.
        metadata = _publish_replaced(context, storage, "documents", frame, sha, source,
                                     DOCUMENTS_FOLDER, documents_file())
        metadata["published"] = dg.MetadataValue.path(str(storage.path(*documents_file())))
        return dg.MaterializeResult(metadata=metadata, data_version=dg.DataVersion(sha))

    return [judgments, candidate_pools, queries, documents]


def _publish_replaced(context: dg.AssetExecutionContext, storage: EvaluationStorage, name: str,
                      frame: pl.DataFrame, sha: str, source: Path, folder: Place,
                      place: Place) -> dict:
    """Publish a table that is replaced when it changes (the queries and documents tables):
    its rows, then its manifest (content hash, rows, source, time) last; the materialization's
    metadata."""
    storage.write_parquet(frame, *place)
    manifest = {"sha256": sha, "rows": frame.height, "source": str(source),
                "published_at": utc_now()}
    storage.write_json(storage.stamped(manifest, place), *manifest_file(folder))
    context.log.info(f"{name}: {frame.height} rows, sha256 {sha}")
    return {
        "sha256": sha,
        "dagster/row_count": frame.height,
        "columns": dg.MetadataValue.json(frame.columns),
        "source": dg.MetadataValue.path(str(source)),
    }


# The project's own code location's (no prefix).
judgments, candidate_pools, queries, documents = build_ingest_assets(DEFAULT)


# -- evaluation -------------------------------------------------------------------------------
