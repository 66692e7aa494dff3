"""The Spark engine: the same NDCG kernel, run by PySpark over whole queries.

Run and judgments are each given a ``bucket`` (a hash of query_id), cogrouped on it, and each
bucket (whole queries, every ranker, with all of those queries' judgment rows) is scored by the
vectorized kernel in one ``applyInArrow`` call: the per-batch step of the streaming engine, with
Spark deciding where it runs. Buckets rather than single queries keep one Python call per many
queries. Inputs and output are Parquet at any URL the session can read and write.

Validation runs as Spark aggregations (counts of broken rules, no row numbers: a distributed
file has none). The content hashes follow contract section 1 exactly: the rows are sorted by
key in Spark and reach the driver in order as Arrow, where the local engine's hasher writes and
hashes their canonical lines, a serial pass; callers that already hold the hashes (from
publishing the version and the pool) pass them in.
"""

from __future__ import annotations

import os
import sys

import polars as pl
import pyarrow as pa

from evaluation_pipeline.engines.protocol import Resources, ScoringInputs
from evaluation_pipeline.engines.spark.digests import content_hash
from evaluation_pipeline.evaluation import Lineage
from evaluation_pipeline.io.datasets import is_data_file
from evaluation_pipeline.io.storage import SPARK_SUCCESS
from evaluation_pipeline.metric import pool_holes
from evaluation_pipeline.metric.ndcg import (
    RESULT_SCHEMA,
    index_judgments,
    missing_from_run,
    score_candidates,
)
from evaluation_pipeline.metric.raters import RatersError
from evaluation_pipeline.spec import EvaluationSpec
from schemas import InputError
from schemas.columns import (
    JUDGMENT_COLUMNS,
    JUDGMENT_NAME_COLUMNS,
    PER_QUERY_KEY,
    POOL_KEY,
    RANK,
    RATER,
    RUN_COLUMNS,
)
from schemas.errors import violation
from schemas.ranks import RANK_PRESENT, RANK_REQUIRED, RANK_UNIQUE
from schemas.rules.judgment_rules import JUDGMENTS
from schemas.rules.pool_rules import CANDIDATE_POOL
from schemas.rules.to_spark import refuse_broken

BUCKETS = 64  # at least: one Python call scores a bucket
ROWS_PER_BUCKET = 1_000_000  # at most, about: a bigger run gets more buckets
_SPARK_TYPES = {pl.String(): "string", pl.Int64(): "bigint", pl.Float64(): "double",
                pl.Boolean(): "boolean"}
RESULT_DDL = ", ".join(f"{name} {_SPARK_TYPES[dtype]}" for name, dtype in RESULT_SCHEMA.items())
RESULT_ARROW = pa.schema([(name, {"string": pa.string(), "bigint": pa.int64(),
                                  "double": pa.float64(), "boolean": pa.bool_()}[
                              _SPARK_TYPES[dtype]])
                          for name, dtype in RESULT_SCHEMA.items()])


LOCAL_MASTER = "local[*]"
# What the cogroup sends a bucket: the run without its pool's name, the judgments without their
# version's (each is one name, checked apart).
_RUN_SCORED = [c for c in RUN_COLUMNS if c != "candidate_pool"]
_JUDGMENT_SCORED = [c for c in JUDGMENT_COLUMNS if c not in JUDGMENT_NAME_COLUMNS]


def spark_master(master: str | None, environ=os.environ) -> str | None:
    """The master a new session is given: ``master`` when set (``--spark-master``, the
    ``ScoringEngine`` resource); none under ``spark-submit``, whose ``--master`` (or
    spark-defaults.conf) then stands; otherwise a local session on every core."""
    if master:
        return master
    # spark-submit starts the JVM first and hands the Python driver its gateway port.
    return None if "PYSPARK_GATEWAY_PORT" in environ else LOCAL_MASTER


def spark_session(master: str | None = None):
    """The active session, or a new one at :func:`spark_master` (``master``) whose local Python
    workers run this interpreter (and see this package)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder
    chosen = spark_master(master)
    if chosen is not None:
        builder = builder.master(chosen)
    return (
        builder.appName("ndcg-eval")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )


def read_results(url: str, columns: list[str] | None, spark=None) -> pl.DataFrame:
    """Per-query rows Spark wrote at ``url`` (any URL the session reads), as one frame."""
    spark = spark or spark_session()
    frame = spark.read.parquet(url)
    return pl.from_arrow(frame.select(*(columns or frame.columns)).toArrow())


def _hadoop_path(spark, url: str):
    """(Hadoop file system, Hadoop path) of ``url``, as the session's readers see it."""
    path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(url)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def bucket_scorer(spec: EvaluationSpec, top_grade: int | None, rankers: list[str]):
    """The function each cogrouped bucket is scored by: its candidates against its judgment
    rows, graded on the whole version's scale (``top_grade``), with every ranker of the pool
    counted as missing a judged query it does not return."""

    def score_bucket(candidates: pa.Table, grades: pa.Table) -> pa.Table:
        index = index_judgments(pl.from_arrow(grades), spec, top_grade=top_grade)
        frame = pl.from_arrow(candidates)
        # A bucket holds every ranker's rows of its queries: their unjudged documents are here.
        unjudged = pool_holes.of_pool(frame, len(rankers), index.grades, spec)
        scored = score_candidates(frame, index, spec, unjudged)
        returned = frame.select("ranker", "query_id").unique()
        missing = missing_from_run(index, returned, rankers, spec, unjudged)
        return pl.concat([scored, missing]).to_arrow().cast(RESULT_ARROW)

    return score_bucket


def score_spark(inputs: ScoringInputs, spec: EvaluationSpec, out_url: str,
                resources: Resources, *, buckets: int | None = None) -> tuple[Lineage, int]:
    """Per-query rows with lineage written as Parquet to ``out_url``; (lineage, row count).
    The inputs are URLs the session reads (as written); the session is the resources', else
    the active one or a new one at their ``spark_master``."""
    from pyspark.sql import functions as F

    judgments_url, run_url = str(inputs.judgments), str(inputs.run)
    judgment_version, pool, ranker = inputs.judgment_version, inputs.pool, inputs.ranker
    spark = resources.spark_session or spark_session(resources.spark_master)
    judgments = _named(spark.read.parquet(judgments_url), "judgment_version",
                       judgment_version or _stem(judgments_url))
    if spec.raters is not None or RATER in judgments.columns:
        raise RatersError(f"{judgments_url}: the Spark engine does not combine raters (spec "
                          f"field 'raters': {spec.raters}); score a version with raters with "
                          "the local or streaming engine")
    judgments = judgments.select(*JUDGMENT_COLUMNS)
    run = spark.read.parquet(run_url)
    # Names as the local readers give them: a pool (a folder of run files, or a pattern that
    # picks them) is named by its folder and each file by its stem; one run (a file, or a
    # folder of parts as Spark writes one) by its parent folder and itself; or by the flags.
    folder = _pool_folder(spark, run_url)
    if folder is not None:
        run = _named(run, "candidate_pool", pool or _name(folder))
        if "ranker" not in run.columns:
            # input_file_name() is a URI: its file name is percent-encoded.
            run = run.withColumn("ranker", F.url_decode(F.regexp_extract(
                F.input_file_name(), r"([^/]+?)(\.[^./]+)?$", 1)))
    else:
        run = _named(run, "candidate_pool", pool or _name(_parent_url(run_url)))
        run = _named(run, "ranker", ranker or _stem(run_url))
    # ties: rank reads the run's rank, which must be there, whole numbers, unique per query.
    ranked = [RANK] if spec.needs_rank else []
    if ranked and RANK not in run.columns:
        raise InputError(run_url, [violation(RANK, RANK_REQUIRED, [])])
    run = run.select(*RUN_COLUMNS, *ranked).withColumn("score", F.col("score").cast("double"))
    version = _validate_judgments(judgments, judgments_url)
    if ranked:
        _validate_ranks(run, run_url)
    pool_name, n_rows = _validate_run(run, run_url)
    rankers = sorted(r[0] for r in run.select("ranker").distinct().collect())
    buckets = buckets or bucket_count(n_rows)
    # A bucket holds part of the version: its holes are graded on the whole version's scale.
    top_grade = None if spec.max_grade is not None else (judgments.where(
        F.col("grade_status") == "graded").agg(F.max("grade")).collect()[0][0] or 0)

    bucket = (F.abs(F.xxhash64("query_id")) % buckets).alias("bucket")
    per_query = (
        run.select(bucket, *_RUN_SCORED, *ranked).groupBy("bucket")
        .cogroup(judgments.select(bucket, *_JUDGMENT_SCORED).groupBy("bucket"))
        .applyInArrow(bucket_scorer(spec, top_grade, rankers), RESULT_DDL)
    )
    lineage = Lineage(
        judgment_version=version,
        judgments_sha256=inputs.known.judgments or _digest(judgments, "judgments"),
        candidate_pool=pool_name,
        pool_sha256=inputs.known.pool or _digest(run, "pool"),
        spec_id=spec.spec_id,
    )
    lineage_columns = [F.lit(v).alias(k) for k, v in lineage.__dict__.items()]
    result = per_query.select("*", *lineage_columns).orderBy(*PER_QUERY_KEY)
    result.write.mode("overwrite").parquet(out_url)
    return lineage, spark.read.parquet(out_url).count()


def bucket_count(n_rows: int) -> int:
    """Buckets for a run of ``n_rows``: each is one Python call holding its rows, so a large
    run gets enough of them to keep a call near ``ROWS_PER_BUCKET`` rows (never fewer than
    ``BUCKETS``, which spread a small run over the executors)."""
    return max(BUCKETS, -(-n_rows // ROWS_PER_BUCKET))


def _stem(url: str) -> str:
    name = _name(url)
    return name.rsplit(".", 1)[0] if "." in name else name


def _name(url: str) -> str:
    """The last part of ``url``, whole (a folder's name keeps its dots)."""
    return url.rstrip("/").rsplit("/", 1)[-1]


def _parent_url(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[0]


_PATTERN = set("*?[{")


def _pool_folder(spark, url: str) -> str | None:
    """The folder of the pool ``url`` names: itself for a folder of run files, its parent for
    a pattern of them; None for one run: a file, or a folder of parts that Spark (or another
    writer) made of one run, which holds ``_SUCCESS`` or only ``part-*`` files."""
    if _PATTERN & set(_name(url)):
        return _parent_url(url)
    fs, path = _hadoop_path(spark, url)
    if not (fs.exists(path) and fs.getFileStatus(path).isDirectory()):
        return None
    names = [status.getPath().getName() for status in fs.listStatus(path)]
    files = [n for n in names if is_data_file(n)]
    if SPARK_SUCCESS in names or (files and all(n.startswith("part-") for n in files)):
        return None
    return url


def _named(frame, column: str, name: str):
    from pyspark.sql import functions as F

    return frame if column in frame.columns else frame.withColumn(column, F.lit(name))


def _validate_run(run, source: str) -> tuple[str, int]:
    """The pool's one name, and its row count, or InputError: the pool table's rules counted
    (``schemas.rules.to_spark``)."""
    return refuse_broken(run, CANDIDATE_POOL, source)


def _validate_ranks(run, source: str) -> None:
    """The rank column ``ties: rank`` orders by: integers, none missing, unique per query."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegralType

    if not isinstance(run.schema[RANK].dataType, IntegralType):
        raise InputError(source, [violation(
            RANK, f"rank is stored as {run.schema[RANK].dataType.simpleString()}; store it as "
            "int64", [])])
    missing = run.filter(F.col(RANK).isNull()).count()
    repeated = run.groupBy(*POOL_KEY[:-1], RANK).count().filter("count > 1").count()
    bad = [violation(RANK, f"{rule} ({count:,} rows)", []) for rule, count in
           ((RANK_PRESENT, missing), (RANK_UNIQUE, repeated)) if count]
    if bad:
        raise InputError(source, bad)


def _validate_judgments(judgments, source: str) -> str:
    """The version's one name, or InputError: the judgments table's rules counted."""
    return refuse_broken(judgments, JUDGMENTS, source)[0]


def _digest(frame, kind: str) -> str:
    """Contract section 1 content hash of ``frame`` (``kind``: "pool" or "judgments"), computed
    as ingest on Spark computes it: ranges of whole blocks hashed on the executors, their
    digests combined on the driver (``engines.spark.digests.content_hash``)."""
    return content_hash(kind, frame)
