"""Executors of the one NDCG kernel (``evaluation_pipeline.metric.ndcg``) over files.

Every choice of engine is made here, once: ``score_files`` scores, ``publish`` ingests and
``report_numbers`` sums a report's numbers, each on the engine configured (the CLI and the
pipeline's ``ScoringEngine`` resource only pass it on). Every engine writes the same per-query
rows with lineage and the same report numbers.

- ``auto`` (the default): ``local`` for Parquet inputs whose in-memory peak (estimated from
  their footers) fits the memory budget and that are small enough for it to be faster,
  ``streaming`` for other Parquet inputs, ``local`` for CSV and TREC (``engines.choice``).
- ``local``: read and validate whole inputs in memory (any format the readers take).
- ``streaming``: Parquet runs, batches of whole queries, memory bounded by the batch
  (judgments in another format are read whole first: a version is small).
- ``spark``: PySpark, whole queries cogrouped with their judgments through ``applyInArrow``,
  over any URL Spark reads.

``local`` and ``streaming`` take a local path or a URL on object storage wherever they take a
path (``io.locations``: a string URL is read with ``NDCG_EVAL_STORAGE_OPTIONS``; a ``UPath``
with its own options).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from evaluation_pipeline.engines.choice import AUTO, choose_engine
from evaluation_pipeline.evaluation import Lineage
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.io.locations import location
from evaluation_pipeline.metric.hashing import KnownHashes
from evaluation_pipeline.spec import EvaluationSpec
from schemas.errors import InputError, violation

ENGINES = (AUTO, "local", "streaming", "spark")
# The streaming engine's batch, here so that the CLI's defaults do not load the engine: the
# fastest of the sizes timed at 100M rows, at a peak set by the summary, not by the batches
# (benchmarks/README.md, "The streaming engine").
DEFAULT_BATCH_ROWS = 500_000
# Rows of a row group of per_query.parquet, in every engine that writes one file: the file's
# bytes are then a function of its rows alone, whichever engine ``auto`` (and so the memory
# budget) picks. Left to polars, the in-memory write splits a frame by its size and the
# streaming sink by the batches it is fed, so past some 85k rows the two files differed.
PER_QUERY_ROW_GROUP_ROWS = 512**2


@dataclass
class EngineResult:
    lineage: Lineage
    per_query_path: str
    rows: int  # per-query rows written
    notes: list[str] = field(default_factory=list)  # fallbacks the engine took
    engine: str = "local"  # the engine that scored (``auto`` resolved)
    # The in-memory engine's validated inputs, which a report's traces read again.
    judgments: pl.DataFrame | None = None
    candidates: pl.DataFrame | None = None


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
    """Score ``run_path`` against ``judgments_path`` under ``spec``; per-query Parquet at
    ``out_path`` (a local path or a URL on object storage; for ``spark`` any URL Spark writes).

    ``auto``: ``engines.choice.choose_engine`` under ``budget``, the memory and spill folder
    also of the streaming engine's external sort of unsorted input (default ``Budget.of()``).
    ``spark``: ``spark_session`` if given, else the active session, else a new one at
    ``spark_master`` (``engines.spark.cogroup.spark_master``: a local one unless set or submitted).
    ``known``: the inputs' content hashes when they are proven already (``KnownHashes``: a
    published file whose bytes are the ones hashed at publish); each engine takes them for
    the lineage instead of hashing those inputs again."""
    known = known or KnownHashes()
    if engine != "spark":  # Spark reads its URLs itself, and says so when one is missing
        for given in (judgments_path, run_path):
            if not location(given).exists():
                raise InputError(str(given), [violation("(file)", "no such file or folder",
                                                        [])])
    if engine == AUTO:
        engine = choose_engine(judgments_path, run_path, judgments_format=judgments_format,
                               run_format=run_format, budget=budget)
    if engine == "local":
        from evaluation_pipeline.engines.local import score_local

        scored = score_local(location(judgments_path), location(run_path), spec,
                             location(out_path),
                             judgments_format=judgments_format, run_format=run_format,
                             judgment_version=judgment_version, pool=pool, ranker=ranker,
                             known=known)
        return EngineResult(scored.lineage, str(out_path), scored.rows, engine="local",
                            judgments=scored.judgments, candidates=scored.candidates)
    if engine == "streaming":
        from evaluation_pipeline.engines.streaming.stream import score_streaming

        result = score_streaming(judgments_path, run_path, spec, out_path,
                                 batch_rows=batch_rows or DEFAULT_BATCH_ROWS,
                                 judgment_version=judgment_version, pool=pool, ranker=ranker,
                                 progress=progress, budget=budget, known=known)
        return EngineResult(result.lineage, str(out_path), result.rows, result.notes,
                            engine="streaming")
    if engine == "spark":
        from evaluation_pipeline.engines.spark.cogroup import score_spark

        lineage, rows = score_spark(str(judgments_path), str(run_path), spec, str(out_path),
                                    judgment_version=judgment_version, pool=pool, ranker=ranker,
                                    spark=spark_session, master=spark_master,
                                    judgments_sha256=known.judgments, pool_sha256=known.pool)
        return EngineResult(lineage, str(out_path), rows, engine="spark")
    raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


def reads_urls(engine: str) -> bool:
    """True when ``engine`` reads and writes object-storage URLs itself (Spark, through its
    Hadoop file systems); the others score local copies of files on object storage."""
    return engine == "spark"


def publish(function: str, source: Path, target: Path, *, engine: str,
            spark_master: str | None = None, **options):
    """Ingest with ``ingest.publish``'s ``function`` (``publish_pool`` or
    ``publish_judgments``, with its options): on a Spark session at ``spark_master`` when
    ``engine`` is Spark, else on this machine in bounded memory."""
    if engine != "spark":
        from evaluation_pipeline.ingest import publish as local_ingest

        return getattr(local_ingest, function)(source, target, **options)
    from evaluation_pipeline.engines.spark import (
        ingest as spark_ingest,  # the spark extra
    )

    return getattr(spark_ingest, function)(source, target, master=spark_master, **options)


def report_numbers(scores, previous, queries: pl.DataFrame | None, config, *, engine: str,
                   spark_master: str | None = None):
    """The plan and numbers (``report.build``) of the report of the per-query rows at
    ``scores`` (a Location) and of its comparison with the previous night's at ``previous``:
    summed on the Spark session's executors when ``engine`` is Spark, so that results too big
    for one machine never reach this one; else here, a chunk of queries in memory at a time
    for local files, from the columns the report reads for URLs."""
    if engine == "spark":
        from evaluation_pipeline.engines.spark.report import (
            spark_numbers,  # the spark extra
        )

        return spark_numbers(str(scores), None if previous is None else str(previous),
                             queries, config, master=spark_master)
    from evaluation_pipeline.io.datasets import read_dataset, scan_dataset
    from evaluation_pipeline.io.locations import is_remote
    from evaluation_pipeline.report.build import local_numbers, scanned_numbers
    from schemas.columns import REPORT_COLUMNS

    if not is_remote(scores):
        return scanned_numbers(scan_dataset(scores),
                               None if previous is None else scan_dataset(previous),
                               queries, config)
    per_query = read_dataset(scores, list(REPORT_COLUMNS))
    before = None if previous is None else read_dataset(previous, list(REPORT_COLUMNS))
    return local_numbers(per_query, queries, config, before)
