"""Executors of the one NDCG kernel (``evaluation_pipeline.metric.ndcg``) over files and
tables in memory.

Each engine is a class behind the ``Engine`` protocol (``engines.protocol``): it scores
(``ScoringInputs`` under a spec into a ``ScoringOutput``, with ``Resources``), publishes
(ingests) and sums a report's numbers. The registry (``engines.registry``) names them and is
the one place a name becomes an engine; the CLI, the pipeline's ``ScoringEngine`` resource and
the Python API only pass the name on. Every engine writes the same per-query rows with lineage
and the same report numbers.

- ``auto`` (the default): ``local`` for Parquet inputs whose in-memory peak (estimated from
  their footers) fits the memory budget and that are small enough for it to be faster,
  ``streaming`` for other Parquet inputs, ``local`` for CSV and TREC and for tables already in
  memory (``engines.choice``).
- ``local``: read and validate whole inputs in memory (any format the readers take, or tables
  in memory, in place); the rows written, or kept in memory (``engines.local``).
- ``streaming``: Parquet runs, batches of whole queries, memory bounded by the batch
  (judgments in another format are read whole first: a version is small).
- ``spark``: PySpark, whole queries cogrouped with their judgments through ``applyInArrow``,
  over any URL Spark reads.

``local`` and ``streaming`` take a local path or a URL on object storage wherever they take a
path (``io.locations``: a string URL is read with ``NDCG_EVAL_STORAGE_OPTIONS``; a ``UPath``
with its own options).

``score_files``, ``publish`` and ``report_numbers`` are the engines' functions as the callers
of keywords know them, each a call of the registry's engine.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from evaluation_pipeline.engines.choice import AUTO
from evaluation_pipeline.engines.defaults import (
    DEFAULT_BATCH_ROWS,
    PER_QUERY_ROW_GROUP_ROWS,
)
from evaluation_pipeline.engines.protocol import (
    Engine,
    EngineResult,
    Resources,
    ScoringInputs,
    ScoringOutput,
)
from evaluation_pipeline.engines.registry import (
    ENGINES,
    engine_named,
    reads_urls,
    resolve,
    score_inputs,
)
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.metric.hashing import KnownHashes
from evaluation_pipeline.spec import EvaluationSpec

__all__ = ["AUTO", "DEFAULT_BATCH_ROWS", "ENGINES", "PER_QUERY_ROW_GROUP_ROWS", "Engine",
           "EngineResult", "Resources", "ScoringInputs", "ScoringOutput", "engine_named",
           "publish", "reads_urls", "report_numbers", "resolve", "score_files", "score_inputs"]


def score_files(
    judgments_path: str | Path,
    run_path: str | Path,
    spec: EvaluationSpec,
    out_path: str | Path,
    *,
    engine: str = AUTO,
    batch_rows: int | None = None,
    judgments_format: str | None = None,
    run_format: str | None = None,
    budget: Budget | None = None,
    judgment_version: str | None = None,
    pool: str | None = None,
    ranker: str | None = None,
    progress: bool = True,
    spark_session=None,
    spark_master: str | None = None,
    known: KnownHashes | None = None,
) -> EngineResult:
    """``score_inputs`` with its parameter objects spelled as keywords: ``run_path`` against
    ``judgments_path`` under ``spec``, per-query Parquet at ``out_path`` (a local path or a URL
    on object storage; for ``spark`` any URL Spark writes). The fields are documented on
    ``ScoringInputs`` and ``Resources``."""
    inputs = ScoringInputs(judgments_path, run_path, judgments_format=judgments_format,
                           run_format=run_format, judgment_version=judgment_version, pool=pool,
                           ranker=ranker, known=known or KnownHashes())
    resources = Resources(budget=budget, batch_rows=batch_rows, spark_session=spark_session,
                          spark_master=spark_master, progress=progress)
    return score_inputs(inputs, spec, ScoringOutput(out_path), resources, engine=engine)


def publish(function: str, source: Path, target: Path, *, engine: str,
            spark_master: str | None = None, **options):
    """Ingest with ``ingest.publish``'s ``function`` (``publish_pool`` or
    ``publish_judgments``, with its options) where ``engine`` runs (``Engine.publish``)."""
    return resolve(engine).publish(function, source, target,
                                   Resources(spark_master=spark_master), **options)


def report_numbers(scores, previous, queries: pl.DataFrame | None, config, *, engine: str,
                   spark_master: str | None = None):
    """The plan and numbers of the report of the per-query rows at ``scores`` and of their
    comparison with the previous night's at ``previous``, summed where ``engine`` runs
    (``Engine.report_numbers``)."""
    return resolve(engine).report_numbers(scores, previous, queries, config,
                                          Resources(spark_master=spark_master))
