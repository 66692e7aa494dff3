"""The scoring resource: which engine scores, ingests and sums the reports, and the scoring of
published inputs through the storage.

The engines take local paths (Spark aside), so for an object store the files pass through a
local scratch folder under the memory budget's spill folder. Every choice of engine is made in
``evaluation_pipeline.engines``; this resource only carries the configuration to it.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl

from evaluation_pipeline import engines
from evaluation_pipeline.aggregation.sums import Numbers
from evaluation_pipeline.engines import AUTO, DEFAULT_BATCH_ROWS, ENGINES, EngineResult
from evaluation_pipeline.engines.incremental import Increment, score_increment
from evaluation_pipeline.ingest.external_sort import Budget
from evaluation_pipeline.ingest.publish import Published
from evaluation_pipeline.io.atomic import named_in
from evaluation_pipeline.io.locations import Location, location
from evaluation_pipeline.io.storage import Place
from evaluation_pipeline.metric.hashing import KnownHashes
from evaluation_pipeline.orchestration.resources import EvaluationStorage
from evaluation_pipeline.report.build import ReportPlan
from evaluation_pipeline.report.config import ReportConfig
from evaluation_pipeline.spec import EvaluationSpec


class ScoringEngine(dg.ConfigurableResource):
    """Which executor of the one kernel scores a pool x version (evaluation_pipeline.engines).

    ``auto`` streams Parquet inputs and reads small ones into memory (``engines.choice``);
    ``local`` reads both inputs into memory; ``streaming`` reads the published Parquet files in
    batches of whole queries (memory bounded by ``batch_rows``), local or on object storage;
    ``spark`` runs on a Spark session (any URL Spark reads) at ``spark_master``
    (``spark://host:7077``, ``yarn``, ``k8s://...``); unset, a local session, or under
    spark-submit its ``--master``.
    """

    engine: str = AUTO
    batch_rows: int = DEFAULT_BATCH_ROWS
    spark_master: str | None = None
    # For URL paths, as EvaluationStorage.storage_options (Spark reads with its own settings).
    storage_options: dict[str, Any] = {}
    # A new version's scores of a pool from an earlier version's, rescoring only the queries
    # whose grades changed (engines.incremental: the full scoring's bytes; on Spark,
    # engines.spark.increment: the full Spark scoring's rows); a local storage.
    incremental: bool = True

    def reads_urls(self) -> bool:
        """True when the engine reads and writes the storage's URLs itself (Spark)."""
        return engines.reads_urls(self.engine)

    def publish_pool(self, folder: Path, target: Path, **options) -> Published:
        """Ingest a pool folder (``ingest.publish.publish_pool``'s options): on the Spark
        session when the engine is Spark, else on this machine in bounded memory."""
        return self._ingest("publish_pool", folder, target, **options)

    def publish_judgments(self, source: Path, target: Path, **options) -> Published:
        """Ingest a judgment version, as :meth:`publish_pool`."""
        return self._ingest("publish_judgments", source, target, **options)

    def _ingest(self, function: str, source: Path, target: Path, **options) -> Published:
        return engines.publish(function, source, target, engine=self.engine,
                               spark_master=self.spark_master, **options)

    def score(self, judgments_path: str, pool_path: str, spec, out_path: str, budget=None,
              known: KnownHashes | None = None):
        if self.engine not in ENGINES:
            raise dg.Failure(f"engine {self.engine!r} is not one of {', '.join(ENGINES)}")
        if not self.reads_urls():
            judgments_path, pool_path, out_path = (
                location(p, self.storage_options) for p in (judgments_path, pool_path, out_path))
        return engines.score_files(judgments_path, pool_path, spec, out_path, engine=self.engine,
                           batch_rows=self.batch_rows, progress=False,
                           spark_master=self.spark_master, budget=budget, known=known)

    def score_increment(self, previous_scores: str, previous_judgments: str, judgments: str,
                        pool: str, spec: EvaluationSpec, out_path: str,
                        budget: Budget | None = None, **hashes) -> Increment | None:
        """``judgments`` x ``pool`` from an earlier version's scores of the pool, rescoring
        only the queries whose judgment rows changed, where the engine runs: on the Spark
        session when the engine is Spark, else on this machine within ``budget``; None when
        the earlier rows do not apply (``hashes``: ``engines.incremental.score_increment``'s)."""
        if self.reads_urls():
            from evaluation_pipeline.engines.spark.increment import (
                score_increment_spark,  # the spark extra
            )

            return score_increment_spark(previous_scores, previous_judgments, judgments, pool,
                                         spec, out_path, master=self.spark_master, **hashes)
        if not Path(previous_scores).is_file():
            return None  # a folder of parts, as Spark writes them: scored in full here
        return score_increment(previous_scores, previous_judgments, judgments, pool, spec,
                               out_path, budget=budget, **hashes)

    def report_numbers(self, scores: Location, previous: Location | None,
                       queries: pl.DataFrame | None, config: ReportConfig
                       ) -> tuple[ReportPlan, Numbers]:
        """The plan and numbers of the report of the per-query rows at ``scores`` (and of its
        comparison with the previous night's at ``previous``), summed where the engine sums
        them (``engines.report_numbers``)."""
        return engines.report_numbers(scores, previous, queries, config, engine=self.engine,
                                      spark_master=self.spark_master)


def score_published(storage: EvaluationStorage, scoring: ScoringEngine, budget: Budget,
                    judgments: Place, pool: Place, scores: Place,
                    spec: EvaluationSpec, known: KnownHashes | None = None) -> EngineResult:
    """Score the published ``pool`` against ``judgments`` into ``scores``, through
    ``engines.score_files`` with the configured engine (``ScoringEngine.reads_urls``: Spark
    reads and writes URLs itself; ``known``: the content hashes not computed again)."""
    if storage.is_local() or scoring.reads_urls():
        return scoring.score(str(storage.path(*judgments)), str(storage.path(*pool)), spec,
                             str(storage.path(*scores)), budget=budget, known=known)
    with (budget.scratch("ndcg-eval-score-") as tmp,
          named_in(Path(tmp), storage.path(*scores[:-1]))):
        local = [Path(tmp) / place[-1] for place in (judgments, pool)]
        for place, copy in zip((judgments, pool), local):
            with storage.path(*place).open("rb") as source, open(copy, "wb") as target:
                shutil.copyfileobj(source, target)
        result = scoring.score(str(local[0]), str(local[1]), spec, str(Path(tmp) / scores[-1]),
                               budget=budget, known=known)
        written = storage.put_file(Path(result.per_query_path), *scores)
    return dataclasses.replace(result, per_query_path=written)
