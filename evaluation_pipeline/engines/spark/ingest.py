"""Publish a candidate pool or a judgment version on Spark: ``ingest.publish``'s
``publish_pool``/``publish_judgments`` with the work on the executors.

- **Row rules**: each file's batches are screened on the executors by the local screen
  (``schemas.screening.screen``); a file it refuses, or whose name column names another pool or
  version, is handed to its local reader, which words the refusal exactly as the local path
  does. Spark reads Parquet files whose columns have the contract's types; any other file (CSV,
  TREC, Parquet needing conversions) is read by its local reader, one file at a time, and
  spilled as Parquet for Spark, as the local path does.
- **Canonical order** by range partitioning on the block key and sorting within partitions.
- **Content hash** (hash version 2, ``metric.hashing``): each block's range is numbered on the
  executors from per-partition row counts (only the counts and the first key of each
  partition reach the driver); each range's digest is computed on the executors by the line
  kernels of ``metric.hashing``, so the bytes are those of the local path; the driver combines
  the 32-byte digests in range order.
- **Publishing**: the storage layout holds one Parquet file (``POOL_FILE``/``JUDGMENTS_FILE``,
  moved into the storage as a file), so the sorted rows are written by Spark through one
  writer task (``coalesce(1)`` keeps the partitions' order), zstd-compressed as the local path
  writes them.

The scratch folder (``budget``'s spill folder) must be a path the executors can write and the
driver can read: any local session, or a cluster whose spill folder is a shared mount.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl
import pyarrow as pa

from evaluation_pipeline.engines.spark.cogroup import spark_session
from evaluation_pipeline.engines.spark.digests import content_hash_of, partition_count
from evaluation_pipeline.ingest import inputs
from evaluation_pipeline.ingest import publish as local
from evaluation_pipeline.ingest.external_sort import SortInput
from evaluation_pipeline.ingest.publish import Published
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.io.readers import detect_format
from evaluation_pipeline.metric import hashing
from schemas import columns as cols
from schemas import screening
from schemas.errors import InputError, violation


def publish_pool(source: str | Path | Sequence[str | Path], target: str | Path, *,
                 pool: str | None = None, fmt: str | None = None, budget: Budget | None = None,
                 log: Callable[[str], None] | None = None, spark=None,
                 master: str | None = None) -> Published:
    """``ingest.publish.publish_pool`` on Spark (``spark``, else the active session or a new
    one at ``master``): the same rules, messages, order, content hash and published rows."""
    files, label = inputs.run_files(source)
    return _publish(inputs.POOL, files, label, Path(target), pool or files[0].parent.name,
                    fmt, budget or Budget.of(), log, spark or spark_session(master))


def publish_judgments(source: str | Path | Sequence[str | Path], target: str | Path, *,
                      version: str | None = None, fmt: str | None = None,
                      budget: Budget | None = None, log: Callable[[str], None] | None = None,
                      spark=None, master: str | None = None) -> Published:
    """``ingest.publish.publish_judgments`` on Spark."""
    files = [Path(p) for p in ([source] if isinstance(source, (str, Path)) else source)]
    return _publish(inputs.JUDGMENTS, files, ", ".join(map(str, files)), Path(target),
                    version, fmt, budget or Budget.of(), log, spark or spark_session(master))


def _publish(kind, files: list[Path], label: str, target: Path, name: str | None, fmt,
             budget: Budget, log, spark) -> Published:
    lap = local.stopwatch(log or (lambda line: None))
    with budget.scratch("ndcg-eval-spark-ingest-") as scratch:
        scratch = Path(scratch)
        read = []
        for number, path in enumerate(files):
            read.append(_read(kind, path, fmt, name, scratch / f"in-{number}.parquet", spark))
            name = read[-1][2]
        columns = read[0][3]
        # By the kind's digest: the name ``inputs`` is a local list further down.
        if kind.digest == "judgments" and cols.RATER in columns:
            raise InputError(label, [violation(cols.RATER, (
                "the Spark engine does not publish a version with raters (its key is "
                "query_id, doc_id, rater); publish it with the local or streaming engine"), [])])
        rows = read[0][0].select(*columns)
        for frame, _, _, _ in read[1:]:
            rows = rows.unionByName(frame, allowMissingColumns=True).select(*columns)
        inputs = [sort_input for _, sort_input, _, _ in read]
        lap(f"checked {len(files)} file(s) of {kind.what} {name!r} on Spark")
        n_rows = rows.count()
        partitions = partition_count(n_rows)
        block_key = list(kind.key[:-1])
        _refuse_repeats(kind, rows, files, inputs, label, fmt, name)
        sha256 = content_hash_of(kind, rows, block_key, partitions)
        lap(f"hashed {n_rows:,} rows in ranges of {hashing.RANGE_ROWS:,} on the executors")
        facts = _facts(kind, rows)
        written = scratch / "sorted"
        (rows.repartitionByRange(partitions, *block_key).sortWithinPartitions(*kind.key)
         .coalesce(1).write.option("compression", "zstd").parquet(str(written)))
        part, = written.glob("part-*.parquet")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(part, target)
        lap(f"sorted by {', '.join(kind.key)} and wrote {target}")
    return Published(path=target, name=name, sha256=sha256, rows=n_rows, **facts)


# -- row rules, file by file ------------------------------------------------------------------


def _read(kind, path: Path, fmt, name: str | None, spilled: Path, spark):
    """(the file's rows on Spark, its sort input, the name it establishes, its published
    columns), its row rules checked as ``ingest.inputs.prepare`` checks them."""
    from pyspark.sql import functions as F

    schema = inputs.parquet_schema(path) if detect_format(path, fmt) == "parquet" else None
    if schema is not None and inputs.contract_typed(kind, schema):
        constants = inputs.missing_columns(kind, path, schema, name)
        frame = spark.read.parquet(str(path)).withColumns(
            {c: F.lit(v).cast("string") for c, v in constants.items()})
        screened = _screen(kind, frame, constants.get(kind.name_column, name))
        if screened is False:
            inputs.refuse(kind, path, fmt, name)
        if screened is not None:
            columns = inputs.published_columns(
                kind, [*schema, *(c for c in constants if c not in schema)])
            return frame, SortInput(path, constants), screened, columns
    # The local reader's conversions, one file at a time (``ingest.inputs.prepare``).
    converted = inputs.converted(kind, path, fmt, name, spilled)
    return (spark.read.parquet(str(spilled)), converted.input, converted.name,
            list(converted.columns))


def _screen(kind, frame, name: str | None) -> str | bool | None:
    """The file's name when every batch passes the screen and names one pool or version (the
    asked ``name``, else the first batch's); False when one does not; None when a batch needs
    its reader's own conversion (a judgment's grade_status with padding)."""
    model, name_column, judgments = kind.model, kind.name_column, kind is inputs.JUDGMENTS

    def screen_batches(batches):
        for batch in batches:
            rows = pl.from_arrow(pa.Table.from_batches([batch]))
            padded = judgments and not rows.select((pl.col("grade_status") == pl.col(
                "grade_status").str.strip_chars()).all()).item()
            passed = not padded and screening.screen(model, rows, check_keys=False)
            names = rows[name_column].unique().to_list() if rows.height else []
            yield pa.RecordBatch.from_pylist([{
                "verdict": "reader" if padded else "ok" if passed else "refused",
                "name": names[0] if len(names) == 1 else None}],
                schema=pa.schema([("verdict", pa.string()), ("name", pa.string())]))

    verdicts = frame.select(*kind.dtypes).mapInArrow(
        screen_batches, "verdict string, name string").collect()
    if any(v["verdict"] == "reader" for v in verdicts):
        return None
    names = {v["name"] for v in verdicts}
    if not verdicts or any(v["verdict"] == "refused" for v in verdicts) or len(names) != 1 or (
            name is not None and names != {name}):
        return False
    return names.pop()


def _refuse_repeats(kind, rows, files, inputs, label, fmt, name: str) -> None:
    """A key seen twice is refused as the local path refuses it (the first in key order)."""
    from pyspark.sql import functions as F

    repeated = (rows.groupBy(*kind.key).agg(F.count(F.lit(1)).alias("n"))
                .filter("n > 1").orderBy(*kind.key).select(*kind.key).first())
    if repeated is not None:
        local.refuse_duplicate(kind, repeated.asDict(), files, inputs, label, fmt, name)


# -- facts ------------------------------------------------------------------------------------


def _facts(kind, rows) -> dict:
    """The manifest's facts, as ``ingest.publish._hash_and_write`` counts them."""
    from pyspark.sql import functions as F

    if kind is inputs.POOL:
        counted = rows.groupBy("ranker").agg(F.countDistinct("query_id").alias("q"),
                                             F.count(F.lit(1)).alias("n")).collect()
        return {"rankers": [{"ranker": r["ranker"], "n_queries": r["q"], "n_candidates": r["n"]}
                            for r in sorted(counted, key=lambda r: r["ranker"])]}
    grade = F.when(F.col("grade_status") == cols.UNKNOWN, F.lit(cols.UNKNOWN)).otherwise(
        F.col("grade").cast("string"))
    counted = rows.groupBy(grade.alias("grade")).count().collect()
    return {"grade_distribution": dict(sorted((r["grade"], r["count"]) for r in counted))}

