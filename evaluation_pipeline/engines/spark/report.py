"""A report's numbers summed on Spark: per-query results too big for one machine.

The partials of ``aggregation.partials`` are computed on the executors, one chunk of queries
per Python call (``applyInArrow`` over the chunk of each row, the same hash of the query id as
the local path's), and only the partials, a few megabytes each, come back to the driver, which
adds them in chunk order. The rows never pass through the driver, and report.json is the same
to the bit as the local path's from the same rows.
"""

from __future__ import annotations

import pickle

import polars as pl
import pyarrow as pa

from evaluation_pipeline.aggregation import partials as rp
from evaluation_pipeline.aggregation import sums as rn
from evaluation_pipeline.aggregation.partials import PREVIOUS, TONIGHT, Result
from evaluation_pipeline.engines.spark.cogroup import spark_session
from evaluation_pipeline.report.build import ReportPlan, report_plan
from evaluation_pipeline.report.config import ReportConfig
from schemas.columns import REPORT_OPTIONAL_COLUMNS, ROW_FORMER

_PARTIAL_DDL = "chunk long, partial binary"


def spark_numbers(current: str, previous: str | None, queries: pl.DataFrame | None,
                  config: ReportConfig, *, master: str | None = None, spark=None
                  ) -> tuple[ReportPlan, rn.Numbers]:
    """The plan and numbers of the report of the per-query results at ``current`` (tonight)
    and ``previous`` (the previous night's under the same version and spec, or None), at any
    URL the session reads (a file, or Spark's folder of parts)."""
    from pyspark.sql import functions as F

    spark = spark or spark_session(master)
    rows = _rows(spark, current, TONIGHT)
    if previous is not None:
        rows = rows.unionByName(_rows(spark, previous, PREVIOUS))
    found = rows.groupBy("night", "ranker", "cutoff", "measure").count().collect()
    results = {night: sorted(Result(night, r["ranker"],
                                    None if r["cutoff"] is None else int(r["cutoff"]),
                                    r["measure"])
                             for r in found if r["night"] == night)
               for night in (TONIGHT, PREVIOUS)}
    n_queries = rows.select("query_id").distinct().count()
    planned = report_plan(results[TONIGHT], queries, config,
                          previous=results[PREVIOUS] if previous is not None else None,
                          n_queries=n_queries)
    plan = planned.plan
    wanted = _queries_table(queries, planned.slices)

    def with_chunk(batches):
        for batch in batches:
            ids = pl.from_arrow(batch.column("query_id"))
            chunk = pa.array(rp.chunk_ids(ids, plan.n_chunks))
            yield batch.append_column("chunk", chunk)

    def partial(table: pa.Table) -> pa.Table:
        chunk = int(table.column("chunk")[0].as_py())
        part = rp.chunk_partial(pl.from_arrow(table.drop(["chunk"])), wanted, plan)
        return pa.table({"chunk": [chunk], "partial": [pickle.dumps(part)]},
                        schema=pa.schema([("chunk", pa.int64()), ("partial", pa.binary())]))

    from pyspark.sql.types import LongType, StructType

    schema = StructType([*rows.schema.fields]).add("chunk", LongType())
    parts = (rows.mapInArrow(with_chunk, schema).groupBy("chunk")
             .applyInArrow(partial, _PARTIAL_DDL).orderBy(F.col("chunk")).collect())
    total = rp.combine_all([(r["chunk"], pickle.loads(r["partial"])) for r in parts], plan)
    return planned, rn.Numbers(plan, total)


def _rows(spark, url: str, night: int):
    from pyspark.sql import functions as F

    frame = spark.read.parquet(url)
    present = set(frame.columns)
    if "measure" not in present:  # written before the measures: the spec's nDCG@K alone
        frame = frame.withColumn("measure", F.concat(F.lit("nDCG@"),
                                                     F.col("cutoff").cast("string")))
        for new, old in ROW_FORMER.items():
            if old in present:
                frame = frame.withColumn(new, F.col(old))
        present = set(frame.columns)
    # The local path's dtypes (report_numbers.rows_of), so that each chunk's rows are the same.
    return frame.select(
        F.lit(night).cast(_SPARK_TYPES[rp.ROW_DTYPES["night"]]).alias("night"),
        *[(F.col(c) if c in present or c not in REPORT_OPTIONAL_COLUMNS else F.lit(None))
          .cast(_SPARK_TYPES[dtype]).alias(c)
          for c, dtype in rp.ROW_DTYPES.items() if c != "night"])


_SPARK_TYPES = {pl.Int8: "tinyint", pl.String: "string", pl.Int64: "long", pl.Float64: "double",
                pl.Boolean: "boolean"}


def _queries_table(queries: pl.DataFrame | None, slices: tuple[str, ...]) -> pl.DataFrame | None:
    """Only the queries table's columns a partial reads, sent with each Python call."""
    if queries is None:
        return None
    return queries.select(*dict.fromkeys(["query_id", "weight", *slices]))
