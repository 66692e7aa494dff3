"""A judgment version's scores of a pool on Spark, from an earlier version's scores of it.

The Spark form of ``engines.incremental``: version B's per-query rows are version A's rows of
the queries whose judgment rows are the same in both, with B's lineage, and a scoring of only
the queries whose rows differ (regraded, added, removed, an ``unknown`` graded). Everything
runs where the engine runs: the changed queries are found by one join of the two versions on
the executors, and only their ids (a few percent of the queries) reach the driver, broadcast
back to pick their candidates from the pool and their rows from B and from A's scores. The
changed queries are scored as ``engines.spark.cogroup.score_spark`` scores a pool: cogrouped by
a hash of query_id with their judgment rows, every bucket by the one kernel, holes graded on
the whole version's scale and every ranker of the pool counted as missing a query it did not
return. The rows are then given B's lineage and written in the full scoring's order and
schema, so a reader of the folder of parts gets the full Spark scoring's rows, in order.

It applies only where A's rows are known to be the same evaluation: the same pool content and
spec, A's own published judgments, and no raters (which Spark does not score). Otherwise it
returns None, writing nothing, and the caller scores in full.
"""

from __future__ import annotations

from evaluation_pipeline.engines.incremental import Increment
from evaluation_pipeline.engines.spark.cogroup import (
    RESULT_DDL,
    bucket_count,
    bucket_scorer,
    spark_session,
)
from evaluation_pipeline.engines.spark.digests import content_hash
from evaluation_pipeline.evaluation import Lineage
from evaluation_pipeline.metric.ndcg import RESULT_SCHEMA
from evaluation_pipeline.spec import EvaluationSpec
from schemas.columns import (
    GRADED,
    JUDGMENT_COLUMNS,
    JUDGMENT_KEY,
    LINEAGE_COLUMNS,
    PER_QUERY_KEY,
    RANK,
    RATER,
    RUN_COLUMNS,
)

# What a judgment row holds besides its key and its version's name: where two versions differ.
_GRADE_COLUMNS = [c for c in JUDGMENT_COLUMNS if c not in (*JUDGMENT_KEY, "judgment_version")]


def score_increment_spark(previous_scores: str, previous_judgments: str, judgments: str,
                          pool: str, spec: EvaluationSpec, out_url: str, *, pool_sha256: str,
                          previous_judgments_sha256: str,
                          judgments_sha256_now: str | None = None, spark=None,
                          master: str | None = None) -> Increment | None:
    """``judgments`` x ``pool`` under ``spec`` written at ``out_url`` as a folder of parts,
    from the rows at ``previous_scores`` (the same pool under ``previous_judgments``) and a
    Spark scoring of the changed queries; None, writing nothing, when those rows are not known
    to be the same evaluation (arguments as ``engines.incremental.score_increment``'s, any URL
    the session reads; ``spark``, ``master``: as ``score_spark``'s). The inputs are published
    files, validated when they were published."""
    from pyspark.sql import functions as F

    spark = spark or spark_session(master)
    earlier = spark.read.parquet(previous_scores)
    if not set(RESULT_SCHEMA) | set(LINEAGE_COLUMNS) <= set(earlier.columns):
        return None  # written by a release whose rows had other columns
    lineages = earlier.select(*LINEAGE_COLUMNS).distinct().limit(2).collect()
    if len(lineages) != 1:
        return None
    lineage = Lineage(**lineages[0].asDict())
    if (lineage.spec_id != spec.spec_id or lineage.pool_sha256 != pool_sha256
            or lineage.judgments_sha256 != previous_judgments_sha256):
        return None
    before, grades = spark.read.parquet(previous_judgments), spark.read.parquet(judgments)
    if spec.raters is not None or RATER in before.columns or RATER in grades.columns:
        return None  # refused by the Spark engine: the full scoring says why
    top_grade = None if spec.max_grade is not None else _top_grade(grades)
    if top_grade is not None and _top_grade(before) != top_grade:
        return None  # the grade scale of every query (its holes' range) is the version's
    changed = _changed_queries(before, grades).localCheckpoint()
    n_changed = changed.count()
    now = Lineage(judgment_version=grades.select("judgment_version").first()[0],
                  judgments_sha256=judgments_sha256_now or content_hash("judgments", grades),
                  candidate_pool=lineage.candidate_pool, pool_sha256=pool_sha256,
                  spec_id=spec.spec_id)
    picked = F.broadcast(changed)
    kept = earlier.join(picked, "query_id", "left_anti")
    rescored = _rescored(spark.read.parquet(pool), grades, picked, spec, top_grade,
                         earlier, n_changed)
    result = (kept.select(*RESULT_SCHEMA).unionByName(
        rescored.select(*RESULT_SCHEMA))
        .select(*(F.col(c).cast(t).alias(c) for c, t in _result_types()))
        .select("*", *(F.lit(v).alias(k) for k, v in now.__dict__.items()))
        .orderBy(*PER_QUERY_KEY))
    result.write.mode("overwrite").parquet(out_url)
    rows = spark.read.parquet(out_url).count()
    kept_queries = kept.select("query_id").distinct().count()
    return Increment(now, out_url, rows, n_changed, kept_queries)


def _result_types() -> list[tuple[str, str]]:
    """(column, Spark type) of the kernel's rows, as the full scoring's schema gives them."""
    return [tuple(part.strip().split(" ")) for part in RESULT_DDL.split(",")]


def _top_grade(judgments) -> int:
    """The version's largest graded grade (0 with none), as the full Spark scoring takes it."""
    from pyspark.sql import functions as F

    return judgments.where(F.col("grade_status") == GRADED).agg(
        F.max("grade")).collect()[0][0] or 0


def _changed_queries(before, after):
    """The query_ids whose judgment rows differ between two versions (a row one of them lacks,
    or a grade or status that differs, null included), as a one-column frame: one join on the
    key, on the executors."""
    from pyspark.sql import functions as F

    a = before.select(*JUDGMENT_KEY, *(F.col(c).alias(f"{c}_a") for c in _GRADE_COLUMNS),
                      F.lit(True).alias("_a"))
    b = after.select(*JUDGMENT_KEY, *(F.col(c).alias(f"{c}_b") for c in _GRADE_COLUMNS),
                     F.lit(True).alias("_b"))
    differ = F.col("_a").isNull() | F.col("_b").isNull()
    for column in _GRADE_COLUMNS:
        differ = differ | ~F.col(f"{column}_a").eqNullSafe(F.col(f"{column}_b"))
    return a.join(b, list(JUDGMENT_KEY), "full_outer").where(differ).select(
        "query_id").distinct()


def _rescored(run, grades, picked, spec: EvaluationSpec, top_grade: int | None, earlier,
              n_changed: int):
    """The per-query rows of the changed queries (``picked``, broadcast), scored as the full
    Spark scoring scores them: their candidates cogrouped with their judgment rows by a hash
    of query_id, and every ranker of the pool counted."""
    from pyspark.sql import functions as F

    ranked = [RANK] if spec.needs_rank else []
    candidates = run.select(*RUN_COLUMNS, *ranked).withColumn(
        "score", F.col("score").cast("double")).join(picked, "query_id", "left_semi")
    # Every ranker of the pool: A's rows name each (a ranker returning none of A's judged
    # queries still has its missing rows there), and the changed queries' candidates too.
    rankers = sorted({r[0] for r in earlier.select("ranker").distinct().collect()}
                     | {r[0] for r in candidates.select("ranker").distinct().collect()})
    queries = max(earlier.select("query_id").distinct().count(), 1)
    buckets = bucket_count(run.count() * n_changed // queries)

    bucket = (F.abs(F.xxhash64("query_id")) % buckets).alias("bucket")
    scored_columns = [c for c in RUN_COLUMNS if c != "candidate_pool"]
    judgment_columns = [c for c in JUDGMENT_COLUMNS if c != "judgment_version"]
    judged = grades.select(*judgment_columns).join(picked, "query_id", "left_semi")
    return (candidates.select(bucket, *scored_columns, *ranked).groupBy("bucket")
            .cogroup(judged.select(bucket, *judgment_columns).groupBy("bucket"))
            .applyInArrow(bucket_scorer(spec, top_grade, rankers), RESULT_DDL))
