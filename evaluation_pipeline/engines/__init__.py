"""Executors of the one NDCG kernel (``evaluation_pipeline.metric.ndcg``) over files.

``score_files`` is the single entry point for the CLI and orchestration: the engine is chosen
by configuration, and every engine writes the same per-query rows with lineage.

- ``auto`` (the default): ``local`` for Parquet inputs whose in-memory peak (estimated from
  their footers) fits the memory budget and that are small enough for it to be faster,
  ``streaming`` for other Parquet inputs, ``local`` for CSV and TREC (``engines.choice``).
- ``local``: read and validate whole inputs in memory (any format the readers take).
- ``streaming``: Parquet, batches of whole queries, memory bounded by the batch.
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
from evaluation_pipeline.ingest.external_sort import Budget
from evaluation_pipeline.io.locations import location
from evaluation_pipeline.spec import EvaluationSpec

ENGINES = (AUTO, "local", "streaming", "spark")
# The streaming engine's batch, here so that the CLI's defaults do not load the engine. Measured
# at 100M rows (2 cores): 250k-row batches 37 s and 0.89 GB peak, 500k 30 s and 0.94 GB, 1M 33 s
# and 1.23 GB. The peak is the summary read at the end, not the batches.
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
) -> EngineResult:
    """Score ``run_path`` against ``judgments_path`` under ``spec``; per-query Parquet at
    ``out_path`` (a local path or a URL on object storage; for ``spark`` any URL Spark writes).

    ``auto``: ``engines.choice.choose_engine`` under ``budget``, the memory and spill folder
    also of the streaming engine's external sort of unsorted input (default ``Budget.of()``).
    ``spark``: ``spark_session`` if given, else the active session, else a new one at
    ``spark_master`` (``engines.spark.engine.spark_master``: a local one unless set or submitted)."""
    if engine == AUTO:
        engine = choose_engine(judgments_path, run_path, judgments_format=judgments_format,
                               run_format=run_format, budget=budget)
    if engine == "local":
        from evaluation_pipeline.engines.local import score_local

        scored = score_local(location(judgments_path), location(run_path), spec,
                             location(out_path),
                             judgments_format=judgments_format, run_format=run_format,
                             judgment_version=judgment_version, pool=pool, ranker=ranker)
        return EngineResult(scored.lineage, str(out_path), scored.rows, engine="local",
                            judgments=scored.judgments, candidates=scored.candidates)
    if engine == "streaming":
        from evaluation_pipeline.engines.streaming.engine import score_streaming

        result = score_streaming(judgments_path, run_path, spec, out_path,
                                 batch_rows=batch_rows or DEFAULT_BATCH_ROWS,
                                 judgment_version=judgment_version, pool=pool, ranker=ranker,
                                 progress=progress, budget=budget)
        return EngineResult(result.lineage, str(out_path), result.rows, result.notes,
                            engine="streaming")
    if engine == "spark":
        from evaluation_pipeline.engines.spark.engine import score_spark

        lineage, rows = score_spark(str(judgments_path), str(run_path), spec, str(out_path),
                                    judgment_version=judgment_version, pool=pool, ranker=ranker,
                                    spark=spark_session, master=spark_master)
        return EngineResult(lineage, str(out_path), rows, engine="spark")
    raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
