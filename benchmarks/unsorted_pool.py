"""Seeded landing data in arrival order: a pool folder of unsorted ranker files and judgments.

    python benchmarks/unsorted_pool.py --queries 100k [--rankers 3] [--candidates 100] [--out DIR]

Writes ``<out>/pool-<rows>/<ranker>.parquet`` (one file per ranker, every ranker reranking the
same candidates of each query) and ``<out>/judgments-<rows>.parquet`` (30% of the candidates
judged, grades 0..3, 1% of them explicit unknowns). Nothing is in key order: each row group
holds queries drawn from the whole query range, its rows shuffled, as a nightly export that
was never sorted would. Written a row group at a time, so 100M rows never sit in memory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
from generate import DATA, DOC_SPACE, doc_ids, query_ids, size_rows

from evaluation_pipeline.io.storage import READY_MARKER

QUERIES_PER_GROUP = 10_000
JUDGED_SHARE = 0.3


def pool_folder(rows: int, out: Path) -> Path:
    tag = f"{rows // 1_000_000}M" if rows % 1_000_000 == 0 else str(rows)
    return out / f"pool-{tag}"


def generate(n_queries: int, rankers: int, candidates: int, seed: int, out: Path) -> Path:
    folder = pool_folder(n_queries * rankers * candidates, out)
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"ranker-{r}" for r in range(rankers)]
    writers: dict[str, pq.ParquetWriter] = {}
    judged_writer = None
    order = np.random.default_rng([seed, 0]).permutation(n_queries)
    for first in range(0, n_queries, QUERIES_PER_GROUP):
        rng = np.random.default_rng([seed, 1, first])
        numbers = order[first:first + QUERIES_PER_GROUP].astype(np.int64)
        q = np.repeat(numbers, candidates)
        d = q * DOC_SPACE + np.tile(np.arange(candidates, dtype=np.int64), numbers.size)
        queries, docs = query_ids(q), doc_ids(d)
        for name in names:
            shuffle = rng.permutation(q.size)
            table = pl.DataFrame({
                "ranker": pl.Series([name]).new_from_index(0, q.size),
                "query_id": queries.gather(shuffle),
                "doc_id": docs.gather(shuffle),
                "score": np.round(rng.gamma(2.0, 2.0, size=q.size), 2),
            }).to_arrow()
            if name not in writers:
                writers[name] = pq.ParquetWriter(folder / f"{name}.parquet", table.schema)
            writers[name].write_table(table, row_group_size=len(table))
        judged = np.flatnonzero(rng.random(q.size) < JUDGED_SHARE)
        judged = judged[rng.permutation(judged.size)]
        unknown = rng.random(judged.size) < 0.01
        grade = np.minimum(rng.poisson(0.8, size=judged.size), 3)
        table = pl.DataFrame({
            "query_id": queries.gather(judged),
            "doc_id": docs.gather(judged),
            "grade": pl.Series(grade, dtype=pl.Int64).set(pl.Series(unknown), None),
            "grade_status": np.where(unknown, "unknown", "graded"),
        }).to_arrow()
        judged_writer = judged_writer or pq.ParquetWriter(
            out / f"judgments-{folder.name.removeprefix('pool-')}.parquet", table.schema)
        judged_writer.write_table(table, row_group_size=len(table))
        print(f"\r{min(first + QUERIES_PER_GROUP, n_queries):,} / {n_queries:,} queries",
              end="", file=sys.stderr)
    for writer in writers.values():
        writer.close()
    judged_writer.close()
    (folder / READY_MARKER).touch()
    print(file=sys.stderr)
    return folder


def pool_arguments(parser: argparse.ArgumentParser, out: Path = DATA) -> None:
    """The options of a generated pool (also ``pipeline.py``'s)."""
    parser.add_argument("--queries", type=size_rows, required=True, help="e.g. 100k, 333k")
    parser.add_argument("--rankers", type=int, default=3)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pool_arguments(parser)
    args = parser.parse_args(argv)
    folder = generate(args.queries, args.rankers, args.candidates, args.seed, args.out)
    rows = sum(pq.read_metadata(p).num_rows for p in folder.glob("*.parquet"))
    print(f"wrote {folder} ({rows:,} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
