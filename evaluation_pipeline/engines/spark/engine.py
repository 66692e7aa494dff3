"""The Spark engine behind the ``Engine`` protocol: scoring (``cogroup``), ingest (``ingest``)
and a report's sums (``report``) on a Spark session, over any URL Spark reads. PySpark is the
spark extra: it is loaded when the engine first works, not when it is named."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, ClassVar

import polars as pl

from evaluation_pipeline.engines.protocol import (
    EngineResult,
    Resources,
    ScoringInputs,
    ScoringOutput,
)
from evaluation_pipeline.io.locations import Location
from evaluation_pipeline.spec import EvaluationSpec

if TYPE_CHECKING:
    from evaluation_pipeline.aggregation.sums import Numbers
    from evaluation_pipeline.report.build import ReportPlan
    from evaluation_pipeline.report.config import ReportConfig


class SparkEngine:
    """``spark``: whole queries cogrouped with their judgments through ``applyInArrow``, on
    the resources' session, else the active one, else a new one at their ``spark_master``
    (``cogroup.spark_master``: a local one unless set or submitted)."""

    name: ClassVar[str] = "spark"
    reads_urls: ClassVar[bool] = True
    keeps_rows: ClassVar[bool] = False

    def score(self, inputs: ScoringInputs, spec: EvaluationSpec, output: ScoringOutput,
              resources: Resources) -> EngineResult:
        if inputs.in_memory or output.in_memory:
            raise ValueError("the Spark engine reads and writes URLs: stage tables in memory "
                             "as files, or score them with an engine that keeps rows "
                             "(Engine.keeps_rows)")
        from evaluation_pipeline.engines.spark.cogroup import score_spark

        lineage, rows = score_spark(inputs, spec, str(output.path), resources)
        return EngineResult(lineage, str(output.path), rows, engine=self.name)

    def publish(self, function: str, source: Location, target: Location,
                resources: Resources, **options) -> Any:
        from evaluation_pipeline.engines.spark import ingest as spark_ingest

        return getattr(spark_ingest, function)(source, target, master=resources.spark_master,
                                               spark=resources.spark_session, **options)

    def report_numbers(self, scores: Location | str, previous: Location | str | None,
                       queries: pl.DataFrame | None, config: ReportConfig,
                       resources: Resources) -> tuple[ReportPlan, Numbers]:
        """Summed on the session's executors: results too big for one machine never reach
        this one."""
        from evaluation_pipeline.engines.spark.report import spark_numbers

        return spark_numbers(str(scores), None if previous is None else str(previous),
                             queries, config, master=resources.spark_master,
                             spark=resources.spark_session)

    def write_text_at(self, where: Location | str, text: str, resources: Resources) -> None:
        """``text`` as the file ``where`` through the session's Hadoop file system (s3a://,
        hdfs://, file:// ...), with the credentials and settings the session wrote the rows
        with: written under a temporary name beside it, then renamed into place, so the file
        is never seen half written. Hadoop's rename does not replace a file: an existing one
        is deleted just before, and for that moment a reader finds none."""
        from evaluation_pipeline.engines.spark.cogroup import spark_session

        spark = resources.spark_session or spark_session(resources.spark_master)
        hadoop = spark.sparkContext._jvm.org.apache.hadoop.fs
        target = hadoop.Path(str(where))
        fs = target.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        temporary = hadoop.Path(target.getParent(), f".{target.getName()}.{uuid.uuid4().hex}.tmp")
        stream = fs.create(temporary, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        if fs.exists(target):
            fs.delete(target, False)
        if not fs.rename(temporary, target):
            raise OSError(f"could not rename {temporary} to {where}")
