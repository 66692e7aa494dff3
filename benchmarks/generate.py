"""Seeded benchmark data: one judgment version and one ranker's run, as Parquet, at any size.

    python benchmarks/generate.py --rows 10_000_000 [--candidates 100] [--seed 7] [--out DIR]

The run looks like a ranker's nightly output: sorted by query_id, then score high to low, with
scores on a coarse grid so that exact ties occur near the top (about a third of queries tie
within the first 11 places). The judgments cover the top of each list densely and the tail
sparsely, so runs hold graded, unknown (explicit ``grade_status='unknown'`` rows) and unjudged
(no row) documents. Some queries have no positive grade, some are not judged at all, and some
judged queries are missing from the run. Both files are written in batches of whole queries, so
100M rows never need 100M rows in memory. Sizes and seed fix the bytes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

DATA = Path(__file__).resolve().parent / "data"
CANDIDATES = 100  # per query
SEED = 7
QUERIES_PER_BATCH = 20_000
DOC_SPACE = 10_000  # doc numbers of query q are q * DOC_SPACE + j


def query_ids(numbers: np.ndarray) -> pl.Series:
    # Zero-padded, so byte order equals numeric order and the files are sorted by query_id.
    padded = pl.lit(pl.Series(numbers)).cast(pl.String).str.zfill(8)
    return pl.select(pl.concat_str(pl.lit("q"), padded)).to_series()


def doc_ids(numbers: np.ndarray) -> pl.Series:
    padded = pl.lit(pl.Series(numbers)).cast(pl.String).str.zfill(12)
    return pl.select(pl.concat_str(pl.lit("D"), padded)).to_series()


def run_batch(rng: np.random.Generator, first_query: int, n_queries: int, candidates: int):
    q = np.repeat(np.arange(first_query, first_query + n_queries, dtype=np.int64), candidates)
    j = np.tile(np.arange(candidates, dtype=np.int64), n_queries)
    # A coarse score grid makes exact ties at the top of many lists.
    score = np.round(rng.gamma(2.0, 2.0, size=q.size), 1)
    order = np.lexsort((-score, q))
    q, j, score = q[order], j[order], score[order]
    rank = np.tile(np.arange(1, candidates + 1, dtype=np.int64), n_queries)
    return q, j, score, rank


def judgment_batch(rng, q, j, rank, first_query, n_queries, candidates, n_run_queries):
    """Dense judgments at the top, sparse in the tail, plus judged documents outside the run."""
    p_judged = np.where(rank <= 10, 0.8, 0.03)
    judged = rng.random(q.size) < p_judged
    jq, jj, jrank = q[judged], j[judged], rank[judged]
    # Five judged documents per query that the ranker did not return (they count for all_judged).
    extra_q = np.repeat(np.arange(first_query, first_query + n_queries, dtype=np.int64), 5)
    extra_j = candidates + np.tile(np.arange(5, dtype=np.int64), n_queries)
    jq = np.r_[jq, extra_q]
    jj = np.r_[jj, extra_j]
    jrank = np.r_[jrank, np.full(extra_q.size, candidates + 1)]
    # Relevance falls with rank; grades 0..3.
    lam = np.where(jrank <= 3, 1.2, np.where(jrank <= 10, 0.7, 0.3))
    grade = np.minimum(rng.poisson(lam), 3)
    unknown = rng.random(jq.size) < 0.01
    query_numbers = np.arange(first_query, first_query + n_queries)
    no_positive = query_numbers[rng.random(n_queries) < 0.05]
    grade[np.isin(jq, no_positive)] = 0
    not_judged = query_numbers[rng.random(n_queries) < 0.01]
    keep = ~np.isin(jq, not_judged)
    jq, jj, grade, unknown = jq[keep], jj[keep], grade[keep], unknown[keep]
    # Queries that are judged but absent from the run (missing_from_run), after the last batch.
    order = np.lexsort((jj, jq))
    jq, jj, grade, unknown = jq[order], jj[order], grade[order], unknown[order]
    return pl.DataFrame(
        {
            "query_id": query_ids(jq),
            "doc_id": doc_ids(jq * DOC_SPACE + jj),
            "grade": pl.Series(np.where(unknown, 0, grade)).set(pl.Series(unknown), None),
            "grade_status": np.where(unknown, "unknown", "graded"),
            "judgment_version": "bench-v1",
        },
        schema_overrides={"grade": pl.Int64},
    )


def size_rows(text: str) -> int:
    """A size as written on the command line: 1M, 2.5M, 500k, 1_000_000."""
    text = text.strip().upper().replace("_", "")
    scale = {"M": 1_000_000, "K": 1_000}.get(text[-1:], 1)
    try:
        rows = round(float(text[:-1]) * scale) if scale > 1 else int(text)
    except ValueError:
        rows = 0
    if rows <= 0:
        raise argparse.ArgumentTypeError(f"not a row count: {text!r} (e.g. 1M, 500k, 1000000)")
    return rows


def data_paths(rows: int, out: Path = DATA) -> tuple[Path, Path]:
    """(judgments, run) files of a size: judgments-10M.parquet, run-10M.parquet, ..."""
    tag = f"{rows // 1_000_000}M" if rows % 1_000_000 == 0 else str(rows)
    return out / f"judgments-{tag}.parquet", out / f"run-{tag}.parquet"


def generate(rows: int, candidates: int, seed: int, out: Path) -> tuple[Path, Path]:
    n_queries = rows // candidates
    out.mkdir(parents=True, exist_ok=True)
    judgments_path, run_path = data_paths(rows, out)
    run_writer = judgments_writer = None
    started = time.perf_counter()
    missing = max(n_queries // 200, 1)  # judged queries the run does not contain
    for first in range(0, n_queries + missing, QUERIES_PER_BATCH):
        rng = np.random.default_rng([seed, first])
        in_run = max(min(QUERIES_PER_BATCH, n_queries - first), 0)
        if in_run:
            q, j, score, rank = run_batch(rng, first, in_run, candidates)
            run = pl.DataFrame(
                {
                    "candidate_pool": "bench-pool",
                    "ranker": "bench-ranker",
                    "query_id": query_ids(q),
                    "doc_id": doc_ids(q * DOC_SPACE + j),
                    "score": score,
                    "rank": rank,
                }
            ).to_arrow()
            run_writer = run_writer or pq.ParquetWriter(run_path, run.schema)
            run_writer.write_table(run, row_group_size=1_000_000)
        else:  # judged only: missing from the run
            n = min(QUERIES_PER_BATCH, n_queries + missing - first)
            q = np.repeat(np.arange(first, first + n, dtype=np.int64), candidates)
            j = np.tile(np.arange(candidates, dtype=np.int64), n)
            rank = j + 1
            in_run = n
        judged = judgment_batch(rng, q, j, rank, first, in_run, candidates, n_queries).to_arrow()
        judgments_writer = judgments_writer or pq.ParquetWriter(judgments_path, judged.schema)
        judgments_writer.write_table(judged, row_group_size=1_000_000)
        done = min(first + QUERIES_PER_BATCH, n_queries) * candidates
        print(f"\r{done:,} / {rows:,} rows  {time.perf_counter() - started:.0f}s",
              end="", file=sys.stderr)
    run_writer.close()
    judgments_writer.close()
    print(file=sys.stderr)
    return judgments_path, run_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=size_rows, action="append",
                        help="candidate rows: 1M, 500k, 1_000_000 (repeat for several); "
                             "default 1M and 10M")
    parser.add_argument("--candidates", type=int, default=CANDIDATES, help="candidates per query")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args(argv)
    for rows in args.rows or [1_000_000, 10_000_000]:
        judgments, run = generate(rows, args.candidates, args.seed, args.out)
        print(f"wrote {judgments} ({pq.read_metadata(judgments).num_rows:,} rows) and {run} "
              f"({pq.read_metadata(run).num_rows:,} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
