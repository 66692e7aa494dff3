"""The content hash (the current hash version, ``metric.hashing``) of rows held by Spark, on the
executors.

Each block's range is numbered on the executors from per-partition row counts (only the counts
and the first key of each partition reach the driver); each range's digest is computed on the
executors by the line kernels of ``metric.hashing``, so the bytes are those of the local path;
the driver combines the 32-byte digests in range order. Used by ingest on Spark
(``engines.spark.ingest``) and by the Spark scoring engine for its inputs' hashes.
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from evaluation_pipeline.ingest import inputs
from evaluation_pipeline.metric import hashing
from schemas import columns as cols

# Partitions of the sorted rows and of the blocks: enough to spread a pool over the executors,
# a few million rows each at the sizes Spark is for.
ROWS_PER_PARTITION = 2_000_000

def content_hash(kind: str, rows) -> str:
    """The content hash of a Spark frame of a pool (``kind="pool"``) or judgment version
    (``"judgments"``), in any order, computed on the executors."""
    kind_ = inputs.POOL if kind == "pool" else inputs.JUDGMENTS
    return content_hash_of(kind_, rows, list(kind_.key[:-1]), partition_count(rows.count()))


def partition_count(n_rows: int) -> int:
    return max(1, -(-n_rows // ROWS_PER_PARTITION))


def content_hash_of(kind, rows, block_key: list[str], partitions: int) -> str:
    """The current hash version of ``rows``: blocks numbered into ranges and ranges hashed on the
    executors, the digests combined on the driver."""
    from pyspark.sql import functions as F

    range_rows = hashing.RANGE_ROWS  # read here: the executors get the driver's value
    blocks = (rows.groupBy(*block_key).agg(F.count(F.lit(1)).alias("rows"))
              .repartitionByRange(partitions, *block_key).sortWithinPartitions(*block_key)
              .localCheckpoint())  # fixed partitions: the two passes below see the same ones
    key_ddl = ", ".join(f"{c} string" for c in block_key)

    def partition_rows(batches):
        table = pa.Table.from_batches(list(batches))
        if table.num_rows:
            yield pa.RecordBatch.from_pylist([{
                **{c: table[c][0].as_py() for c in block_key},
                "rows": pc.sum(table["rows"]).as_py()}])

    # The rows before each partition, keyed by its first block (partitions hold key ranges).
    offsets, before = {}, 0
    summary = blocks.mapInArrow(partition_rows, f"{key_ddl}, rows bigint").collect()
    for row in sorted(summary, key=lambda r: tuple(r[c] for c in block_key)):
        offsets[tuple(row[c] for c in block_key)] = before
        before += row["rows"]

    def number_blocks(batches):
        table = pa.Table.from_batches(list(batches))
        if not table.num_rows:
            return
        first = tuple(table[c][0].as_py() for c in block_key)
        counts = pl.from_arrow(table)["rows"]
        starts = offsets[first] + counts.cum_sum() - counts
        yield pa.RecordBatch.from_arrays(
            [table[c].combine_chunks() for c in block_key]
            + [(starts // range_rows).to_arrow()], names=[*block_key, "range"])

    numbered = blocks.mapInArrow(number_blocks, f"{key_ddl}, range bigint")
    kind_name = kind.digest

    def digest_range(table: pa.Table) -> pa.Table:
        return pa.table({"range": [table["range"][0].as_py()],
                         "digest": [hashing.range_digest(kind_name, pl.from_arrow(table))]},
                        schema=pa.schema([("range", pa.int64()), ("digest", pa.binary())]))

    hashed = [c for c in kind.dtypes if c not in cols.LINEAGE_COLUMNS]
    digests = (rows.select(*hashed).join(numbered, on=block_key).groupBy("range")
               .applyInArrow(digest_range, "range bigint, digest binary").collect())
    return hashing.combine(bytes(r["digest"]) for r in sorted(digests, key=lambda r: r["range"]))
